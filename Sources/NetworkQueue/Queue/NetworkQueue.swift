import Dispatch
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A queue of HTTP requests with bounded concurrency, FIFO or LIFO order, one delegate for every request's
/// events, and one aggregate progress.
///
/// A new queue is suspended: add requests, then call ``go()``. Every method and property may be used from
/// any thread or task.
///
/// **Delegate executor.** All delegate methods, request handlers and ``events()`` elements of one queue are
/// delivered serially and in order on `delegateQueue` (see ``init(transport:delegateQueue:)``): a private
/// serial queue by default, or the queue you pass, such as `.main` for UI code.
///
/// **Lifetime.** A queue with transfers in flight keeps itself alive until they end. A queue released
/// while it still holds pending requests (for example, never started) drops them without callbacks: call
/// ``cancelAll()`` first to have each reported as cancelled.
public final class NetworkQueue: Sendable {
    let state: Locked<QueueState>
    let transport: any Transport
    /// Serial; targets the caller's delegate queue, so delivery stays ordered even on a concurrent one.
    let deliveryQueue: DispatchQueue
    let timerQueue: DispatchQueue
    /// One timer serves every transfer's idle timeout (sub-second precision), independent of the
    /// transport's own whole-second timers.
    let deadlineTimer: Locked<any DispatchSourceTimer>

    /// A Foundation `Progress` that follows the queue's aggregate progress, for binding to
    /// `ProgressView(_:)` in SwiftUI, `UIProgressView.observedProgress` or `NSProgressIndicator`.
    ///
    /// Its `totalUnitCount` is ``foundationProgressScale`` and its `completedUnitCount` follows
    /// ``QueueProgress/fractionCompleted``. Its userInfo carries the request counts
    /// (`fileTotalCountKey`, `fileCompletedCountKey`) and, when known, `throughputKey` and
    /// `estimatedTimeRemainingKey` (the properties of the same names on Apple platforms). It is updated on the delegate executor,
    /// with the same coalesced snapshots the delegate receives: pass `delegateQueue: .main` when UI
    /// observes it.
    public let foundationProgress: Progress

    /// Creates a suspended queue.
    /// - Parameters:
    ///   - transport: moves the bytes; default a new ``URLSessionTransport``.
    ///   - delegateQueue: where delegate methods, request handlers and events are delivered, serially and
    ///     in order. Default nil: a private serial queue (never the main thread). Pass `.main` to receive
    ///     them on the main thread.
    public init(transport: any Transport = URLSessionTransport(), delegateQueue: DispatchQueue? = nil) {
        self.transport = transport
        self.state = Locked(QueueState(limit: 4))
        self.deliveryQueue = DispatchQueue(label: "NetworkQueue.delivery", target: delegateQueue)
        self.timerQueue = DispatchQueue(label: "NetworkQueue.timers")
        self.foundationProgress = Self.makeFoundationProgress()
        let timer = Self.makeDeadlineTimer(on: timerQueue)
        self.deadlineTimer = Locked(timer)
        timer.setEventHandler { [weak self] in self?.deadlineTimerFired() }
        timer.resume()
    }

    // MARK: Settings

    /// Receives the queue's events; held weakly. Default nil.
    public var delegate: (any NetworkQueueDelegate)? {
        get { state.withLock { $0.delegate } }
        set { state.withLock { $0.delegate = newValue } }
    }

    /// The most transfers in flight at once (HEAD preflights count); 0 means unlimited. Default 4.
    ///
    /// Takes effect at once: raising it starts more pending requests, lowering it lets running ones finish.
    /// Negative values are clamped to 0 (unlimited), as `OperationQueue` treats -1.
    public var maxConcurrentRequestCount: Int {
        get { state.withLock { $0.scheduler.limit } }
        set { mutate { $0.setLimit(newValue, &$1) } }
    }

    /// Which pending request starts next. Default ``SchedulingOrder/fifo``.
    public var order: SchedulingOrder {
        get { state.withLock { $0.scheduler.order } }
        set { state.withLock { $0.scheduler.order = newValue } }
    }

    /// When true, ``go()`` first sends a HEAD for every pending GET so the total download size is known
    /// before any body byte is counted. Default false.
    public var showsAccurateProgress: Bool {
        get { state.withLock { $0.showsAccurateProgress } }
        set { state.withLock { $0.showsAccurateProgress = newValue } }
    }

    /// When true, the first request that fails (for any reason but cancellation) makes every other
    /// pending and running request fail with ``NetworkQueueError/cancelledBecauseSiblingFailed(sibling:)``.
    /// Default true, as in ASINetworkQueue.
    public var cancelsAllOnFailure: Bool {
        get { state.withLock { $0.cancelsAllOnFailure } }
        set { state.withLock { $0.cancelsAllOnFailure = newValue } }
    }

    /// True while no new request may start: a new queue, or after ``suspend()`` or ``reset()``.
    public var isSuspended: Bool { state.withLock { $0.scheduler.isSuspended } }

    // MARK: Requests

    /// Adds a request. It starts when the queue is running and a slot is free.
    /// - Throws: ``NetworkQueueError/invalidRequest(_:)`` with `.alreadyAdded` if this request object was
    ///   added before, to this or any queue. Invalid URLs are not thrown here: such a request fails with
    ///   didFail when its turn comes.
    public func add(_ request: NetworkRequest) throws(NetworkQueueError) {
        var fx = QueueState.Effects()
        try state.withLock { (state: inout QueueState) throws(NetworkQueueError) in try state.add(request, &fx) }
        perform(fx)
    }

    /// Adds a request for `urlRequest` with default settings and returns it.
    @discardableResult
    public func add(_ urlRequest: URLRequest) -> NetworkRequest {
        let request = NetworkRequest(urlRequest)
        var fx = QueueState.Effects()
        state.withLock { state in
            // A request created here cannot have been added before.
            try? state.add(request, &fx)
        }
        perform(fx)
        return request
    }

    /// Starts the queue (with HEAD preflights first if ``showsAccurateProgress`` is on). Calling it on a
    /// running queue does nothing.
    public func go() { mutate { $0.go(&$1) } }

    /// Stops new requests from starting; running requests continue. ``go()`` resumes.
    public func suspend() { state.withLock { $0.scheduler.suspend() } }

    /// Cancels one request: it fails at once with ``NetworkQueueError/cancelled``. Does nothing if the
    /// request is not in this queue or has already ended.
    public func cancel(_ request: NetworkRequest) { mutate { $0.cancel(ObjectIdentifier(request), &$1) } }

    /// Cancels every pending and running request; each fails with ``NetworkQueueError/cancelled``.
    public func cancelAll() { mutate { $0.cancelAll(.cancelled, &$1) } }

    /// Cancels everything, then returns the queue to its initial state: suspended, with zero progress.
    /// Settings and the delegate are kept; requests may be added again afterwards.
    public func reset() {
        mutate { state, fx in
            state.scheduler.suspend()
            state.cancelAll(.cancelled, &fx)
            state.ledger.reset()
        }
    }

    /// The pending and running requests, in the order they were added.
    public var requests: [NetworkRequest] {
        state.withLock { $0.records.values.sorted { $0.sequence < $1.sequence }.map(\.request) }
    }

    /// The number of pending and running requests.
    public var requestCount: Int { state.withLock { $0.records.count } }

    /// A snapshot of the current drain's aggregate progress.
    public var progress: QueueProgress { state.withLock { $0.ledger.snapshot(at: QueueState.now()) } }

    deinit { deadlineTimer.withLock { $0.cancel() } }

    // MARK: Effects

    /// Mutates the state under the lock, then performs the resulting effects outside it.
    func mutate(_ body: (inout QueueState, inout QueueState.Effects) -> Void) {
        var fx = QueueState.Effects()
        state.withLock { body(&$0, &fx) }
        perform(fx)
    }

    func perform(_ fx: consuming QueueState.Effects) {
        if fx.deliver { deliveryQueue.async { self.deliver() } }
        if fx.rearmDeadlineTimer { timerQueue.async { self.rearmDeadlineTimer() } }
        if let delay = fx.progressFlush {
            timerQueue.asyncAfter(deadline: .now() + delay) { [weak self] in self?.mutate { $0.flushProgress(&$1) } }
        }
        if !fx.cancels.isEmpty {
            // URLSession's cancel can block for a while on Linux: never on the caller's thread.
            let handles = fx.cancels
            DispatchQueue.global(qos: .userInitiated).async { for handle in handles { handle.cancel() } }
        }
        for start in fx.starts { launch(start) }
        if !fx.garbage.isEmpty {
            // Moved out first, so that the last reference, and the freeing, is the background queue's.
            let garbage = Locked(fx.garbage)
            fx.garbage = []
            DispatchQueue.global(qos: .background).async { garbage.withLock { $0 = [] } }
        }
    }
}
