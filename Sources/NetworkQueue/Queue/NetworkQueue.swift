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
/// delivered serially and in order on `delegateQueue` (see ``init(transport:delegateQueue:clock:)``): a private
/// serial queue by default, or the queue you pass, such as `.main` for UI code.
///
/// **Lifetime.** A queue with transfers in flight keeps itself alive until they end. A queue released
/// while it still holds pending requests (for example, never started) drops them without callbacks: call
/// ``cancelAll()`` first to have each reported as cancelled.
public final class NetworkQueue: Sendable {
    /// The engine and the shell's state beside it, under the queue's one lock.
    let locked: QueueLock<LockedState>
    let transport: any Transport
    /// The transport again when it can lend a file-bound body (see ``LendingTransport``), found once.
    let lender: (any LendingTransport)?
    let clock: any QueueClock
    /// Serial; targets the caller's delegate queue, so delivery stays ordered even on a concurrent one.
    let deliveryQueue: DispatchQueue
    /// Starts transfers off the caller's thread.
    let launcher: Launcher
    /// The output folders' files by the origin each records, read once a folder (see ``OriginIndex``).
    let origins = OriginIndex()
    /// The cap on the queue's receive rate (``maximumBytesPerSecond``), which every main transfer draws from.
    let rateCap = RateCap()

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
    ///   - transport: moves the bytes; default ``makeDefaultTransport()``: a new ``CurlTransport`` on Linux
    ///     (a new ``URLSessionTransport`` when libcurl cannot be loaded), a new ``URLSessionTransport`` on
    ///     Apple platforms.
    ///   - delegateQueue: where delegate methods, request handlers and events are delivered, serially and
    ///     in order. Default nil: a private serial queue (never the main thread). Pass `.main` to receive
    ///     them on the main thread.
    ///   - clock: the queue's time source for timeouts and progress coalescing; default
    ///     ``SystemQueueClock``. Tests inject a clock they drive by hand.
    public init(
        transport: any Transport = NetworkQueue.makeDefaultTransport(), delegateQueue: DispatchQueue? = nil,
        clock: any QueueClock = SystemQueueClock()
    ) {
        self.transport = transport
        lender = transport as? any LendingTransport
        self.clock = clock
        var machine = QueueStateMachine(
            limit: 4, ceiling: Self.concurrencyCeiling, seed: UInt64.random(in: 1...UInt64.max))
        machine.outbox.wallClockOrigin = Date().timeIntervalSince1970 - clock.now()
        machine.redirectPolicy = transport.redirectPolicy
        self.locked = QueueLock(LockedState(machine: machine))
        self.deliveryQueue = DispatchQueue(label: "NetworkQueue.delivery", target: delegateQueue)
        self.launcher = Launcher()
        self.foundationProgress = Self.makeFoundationProgress()
    }

    // MARK: Settings

    /// Receives the queue's events; held weakly. Default nil.
    public var delegate: (any NetworkQueueDelegate)? {
        get { locked.withLock { $0.delegate } }
        set {
            locked.withLock { core in
                core.delegate = newValue
                core.updateListeners()
            }
        }
    }

    /// The most transfers in flight at once (HEAD preflights count); 0 means unlimited. Default 4.
    ///
    /// Takes effect at once: raising it starts more pending requests, lowering it lets running ones finish.
    /// Negative values are clamped to 0 (unlimited), as `OperationQueue` treats -1. Unlimited, and any count
    /// above it, runs at most ``concurrencyCeiling`` transfers at once (the value read back is the one set).
    public var maxConcurrentRequestCount: Int {
        get { locked.withLock { $0.machine.limit } }
        set { send(.setLimit(newValue)) }
    }

    /// When and how soon a failed request is sent again, for requests without a
    /// ``NetworkRequest/retryPolicy`` of their own. Default ``RetryPolicy/default``: 3 attempts in all,
    /// for idempotent requests that timed out, lost or could not make their connection, or got 408, 429,
    /// 500, 502, 503 or 504; see ``RetryPolicy`` for the delays. ``RetryPolicy/never`` turns retries off.
    ///
    /// A request waiting to retry holds no slot; the policy is read when an attempt fails.
    public var retryPolicy: RetryPolicy {
        get { locked.withLock { $0.machine.retryPolicy } }
        set { locked.withLock { $0.machine.retryPolicy = newValue } }
    }

    /// Runs before every attempt of every request (and before each HEAD preflight), before the request's
    /// own ``NetworkRequest/Handlers-swift.struct/adapt``, and returns the `URLRequest` to send: for example one with a fresh
    /// token. It runs while the request holds its slot; a throw fails the request with
    /// ``NetworkQueueError/adaptationFailed(_:)`` (retried like any failure when the retry policy's
    /// closure says so). Changing it affects attempts that start afterwards. It runs in a task of the queue's own, not
    /// on the cooperative pool (an actor it awaits still runs its own code), so an app that computes on the pool does
    /// not hold it back. Default nil.
    public var adapter: (@Sendable (URLRequest) async throws -> URLRequest)? {
        get { locked.withLock { $0.machine.adapter } }
        set { locked.withLock { $0.machine.adapter = newValue } }
    }

    /// Which pending request starts next. Default ``SchedulingOrder/fifo``.
    public var order: SchedulingOrder {
        get { locked.withLock { $0.machine.scheduler.order } }
        set { locked.withLock { $0.machine.scheduler.order = newValue } }
    }

    /// When true, ``go()`` sends a HEAD before pending GETs (and GETs read from a source afterwards) so that the total
    /// download size is known early: before each one where ``preflightPolicy`` finds that it pays (big bodies), and
    /// otherwise before the first few of each server only, the rest estimated from them. Default false.
    ///
    /// The HEADs roll ahead of the GETs in a window of 8 per slot of ``maxConcurrentRequestCount`` (at least
    /// 64; 1,024 without a limit): the first window's HEADs all end before any GET starts, so a batch within the
    /// window knows every size before its first GET; after that each GET waits only for its own HEAD. Meanwhile
    /// the total is an estimate (``QueueProgress/isEstimated``). See <doc:BatchesOfMillions>.
    public var showsAccurateProgress: Bool {
        get { locked.withLock { $0.machine.showsAccurateProgress } }
        set { locked.withLock { $0.machine.showsAccurateProgress = newValue } }
    }

    /// Which requests get a HEAD when ``showsAccurateProgress`` is on; default ``PreflightPolicy/default``: the first
    /// 4 of each server decide, and where their mean size is under 1 MiB (or they say none) the rest of that server's
    /// requests go without one, their sizes estimated until their heads arrive. ``PreflightPolicy/everyRequest``
    /// sends one before every GET. Set it before ``go()``.
    public var preflightPolicy: PreflightPolicy {
        get { locked.withLock { $0.machine.preflights.policy } }
        set { locked.withLock { $0.machine.preflights.policy = newValue } }
    }

    /// When true, the first request that fails (for any reason but cancellation) makes every other
    /// pending and running request fail with ``NetworkQueueError/cancelledBecauseSiblingFailed(sibling:)``.
    /// Default true, as in ASINetworkQueue.
    public var cancelsAllOnFailure: Bool {
        get { locked.withLock { $0.machine.cancelsAllOnFailure } }
        set { locked.withLock { $0.machine.cancelsAllOnFailure = newValue } }
    }

    /// True while no new request may start: a new queue, or after ``suspend()`` or ``reset()``.
    public var isSuspended: Bool { locked.withLock { $0.machine.isSuspended } }

    // MARK: Requests

    /// Adds a request. It starts when the queue is running and a slot is free; this call never starts a
    /// transfer itself (starts happen on another thread).
    /// - Throws: ``NetworkQueueError/invalidRequest(_:)`` with `.alreadyAdded` if this request object was
    ///   added before, to this or any queue, or `.destinationInUse` if another request is writing its
    ///   file destination. Invalid URLs are not thrown here: such a request fails with didFail when its
    ///   turn comes.
    public func add(_ request: NetworkRequest) throws(NetworkQueueError) {
        try add(request, observer: nil)
    }

    /// Adds a request; `observer` is called once with its result when its end is delivered.
    func add(
        _ request: NetworkRequest, observer: (@Sendable (Result<NetworkResponse, NetworkQueueError>) -> Void)?
    ) throws(NetworkQueueError) {
        try markAdded(request)
        if let observer { request.shared.withLock { $0.endObserver = observer } }
        let found = destinationAtAdd(of: request)
        let added = locked.withLock { core -> Result<(slot: Int, actions: QueueActions), NetworkQueueError> in
            let (claim, refusal) = Self.claimDestination(of: request, in: core.machine, found: found)
            if let refusal, found.refusal == nil { return .failure(.invalidRequest(refusal)) }
            let now = clock.now()
            // A destination its output folder refuses: the request joins and fails alone.
            let slot = core.machine.insert(
                request, claim: claim, isObserved: observer != nil, existingFile: found.existingFile, source: nil,
                rejection: found.refusal, now: now)
            return .success((slot, core.machine.finishEvent(now)))
        }
        switch added {
        case .success(let (slot, actions)):
            join(request, slot: slot)
            perform(actions)
        case .failure(let error):
            // Rejected, not added: the caller may add it again once the other request has ended.
            request.shared.withLock {
                $0.isAdded = false
                $0.endObserver = nil
            }
            throw error
        }
    }

    /// What is at a request's file destination as it is added (read before the queue's lock, one `lstat`): the file
    /// it may keep, and whether nothing at all is there (then its part's open need not look again).
    struct DestinationAtAdd {
        /// The file to keep if the server says it is unchanged (see ``ExistingFileRules``); nil when there is none.
        var existingFile: ExistingFileRules.FileState?
        /// True when nothing was at the path.
        var isAbsent = false
        /// True when the file there records another origin (``FileOrigin``): another's, which the request's file
        /// goes beside, never over.
        var isForeign = false
        /// Why the request's ``NetworkRequest/FileOptions-swift.struct/outputFolder`` refuses the destination.
        var refusal: NetworkQueueError.InvalidRequestReason?
    }

    /// Looks at `request`'s file destination once (see ``DestinationAtAdd``): its output folder's check first, then
    /// one `lstat`, and the origin of a file that is there.
    func destinationAtAdd(of request: NetworkRequest) -> DestinationAtAdd {
        Self.destinationAtAdd(of: request, origins: origins)
    }

    /// As ``destinationAtAdd(of:)``, with the folders' files by origin in `origins`.
    static func destinationAtAdd(of request: NetworkRequest, origins: OriginIndex) -> DestinationAtAdd {
        guard case .file(let url) = request.destination, let path = request.destinationPath,
            request.invalidReason == nil
        else { return DestinationAtAdd() }
        let folder = request.fileOptions.outputFolder
        if let folder, let reason = folder.refusal(forDestination: path) {
            return DestinationAtAdd(refusal: .unsafeDestination(url, reason: reason))
        }
        var found = DestinationAtAdd()
        switch folder?.entry(ofDestination: path) ?? FileSink.entry(at: path) {
        case .absent: found.isAbsent = true
        case .other: return found
        case .regular(let size, let modified):
            // A file to revalidate: its entity tag's record, which names its origin too while it describes the file
            // (one attribute read); else the origin's own record.
            let saved =
                request.existingFile == .revalidate && ExistingFileRules.checksExistingFile(request)
                ? SavedEntityTag.recorded(atPath: path) : nil
            let isForeign =
                if let saved, let origin = saved.origin, saved.describes(size: size, modified: modified) {
                    origin != request.origin
                } else {
                    FileOrigin.standing(ofFileAt: path, to: request.origin) == .foreign
                }
            if isForeign {
                found.isForeign = true
            } else {
                found.existingFile = existingFile(of: request, at: path, size: size, modified: modified, saved: saved)
                return found
            }
        }
        // Nothing of the request's at its destination: a rerun of a file its response named is found by its origin.
        guard request.existingFile == .revalidate, request.fileOptions.namesFileFromResponse,
            ExistingFileRules.checksExistingFile(request), !request.origin.isEmpty,
            let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")),
            let named = origins.file(recording: request.origin, in: String(path[..<slash])),
            case .regular(let size, let modified) = FileSink.entry(at: named)
        else { return found }
        found.existingFile = existingFile(
            of: request, at: named, size: size, modified: modified, saved: SavedEntityTag.recorded(atPath: named))
        found.existingFile?.path = named
        return found
    }

    /// The request's own file at `path` (`size` bytes, modified at `modified`) as a file it may keep, or nil when it
    /// is to be fetched whole: a file kept only if the server says it is unchanged (and, with a checksum, only a file
    /// that has it: the size and the date cannot tell a wrong file from the right one). Revalidated with the entity tag
    /// recorded with it, else its date; a file changed since it was saved is fetched whole.
    /// `saved`: the file's entity-tag record, read by the caller (nil: none).
    private static func existingFile(
        of request: NetworkRequest, at path: String, size: Int64, modified: Date, saved: ExistingFileRules.SavedTag?
    ) -> ExistingFileRules.FileState? {
        guard ExistingFileRules.checksExistingFile(request) else { return nil }
        if let checksum = request.checksum, !checksum.matches(file: URL(fileURLWithPath: path, isDirectory: false)) {
            return nil
        }
        guard request.existingFile == .revalidate else {
            return ExistingFileRules.FileState(size: size, modified: modified)
        }
        guard let conditional = ExistingFileRules.conditional(size: size, modified: modified, saved: saved) else {
            return nil
        }
        return ExistingFileRules.FileState(size: size, modified: modified, conditional: conditional)
    }

    /// The claim on `request`'s file destination, taken under the queue's lock: whether one is needed depends
    /// on the requests in `machine` (a coalesced duplicate shares its leader's file; a replacing one takes it
    /// over). Both nil when none is needed; `refusal` is `destinationInUse` when another request writes the file.
    static func claimDestination(
        of request: NetworkRequest, in machine: QueueStateMachine, found: DestinationAtAdd
    ) -> (claim: DestinationClaim?, refusal: NetworkQueueError.InvalidRequestReason?) {
        guard case .file(let file) = request.destination, request.invalidReason == nil, found.refusal == nil,
            machine.needsOwnClaim(request)
        else {
            return (nil, found.refusal)
        }
        guard
            let claim = DestinationClaim.claim(
                file, path: request.destinationPath, absentAtAdd: found.isAbsent, origin: request.origin,
                isForeign: found.isForeign, outputFolder: request.fileOptions.outputFolder)
        else {
            return (nil, .destinationInUse(file))
        }
        return (claim, nil)
    }

    /// Records the slot `request` was given in this queue (where ``cancel(_:)`` and the others find it).
    func join(_ request: NetworkRequest, slot: Int) {
        request.shared.withLock { $0.membership = .init(queue: ObjectIdentifier(self), slot: slot) }
    }

    /// Adds a request for `urlRequest` with default settings and returns it.
    @discardableResult
    public func add(_ urlRequest: URLRequest) -> NetworkRequest {
        let request = NetworkRequest(urlRequest)
        // A request created here cannot have been added before, and its destination is memory.
        try? add(request)
        return request
    }

    /// Starts the queue (with HEAD preflights first if ``showsAccurateProgress`` is on). Calling it on a
    /// running queue does nothing. Transfers start on another thread: this call returns at once.
    ///
    /// A drain that began on a suspended queue ends only after this call: `queueDidFinish` (and what its sources
    /// did while the queue waited, such as ``NetworkQueueDelegate/networkQueue(_:sourceDidFail:)``) comes after
    /// `go()`, so a listener may subscribe after adding. Only a ``cancel(_:)``, ``cancelAll()`` or ``reset()``
    /// that empties the queue ends such a drain before, at once.
    public func go() { send(.go) }

    /// Stops new requests from starting; running requests continue. ``go()`` starts them again.
    public func suspend() { locked.withLock { $0.machine.scheduler.suspend() } }

    /// Cancels one request: it fails at once with ``NetworkQueueError/cancelled``. Does nothing if the
    /// request is not in this queue or has already ended, or if its body has fully arrived and its file
    /// is being moved into place (it then finishes or fails on its own).
    public func cancel(_ request: NetworkRequest) {
        guard let slot = slot(of: request) else { return }
        send(.cancel([(request, slot)]))
    }

    /// Gives a request in the queue a new priority. A pending request moves behind the other pending requests
    /// of that priority (as if added now); a running one keeps running, and the priority applies when it
    /// next waits for a slot (a retry, a resume after ``pause(_:)``). ``NetworkRequest/priority`` shows it.
    /// Returns false (and changes nothing) when the request is not in this queue (never added, or ended).
    @discardableResult
    public func setPriority(_ priority: NetworkRequest.Priority, for request: NetworkRequest) -> Bool {
        guard let slot = slot(of: request) else { return false }
        var changed = false
        send { machine, now in
            let outcome = machine.perform(.setPriority(priority.rawValue, request, slot: slot), now: now)
            // Under the queue's lock, so that the request shows the priority the scheduler uses.
            changed = !outcome.requests.isEmpty
            if changed { request.shared.withLock { $0.priority = priority } }
            return outcome.actions
        }
        return changed
    }

    /// The slot `request` was given when it was added to this queue; nil when it was added to another.
    func slot(of request: NetworkRequest) -> Int? {
        guard let place = request.shared.withLock({ $0.membership }), place.queue == ObjectIdentifier(self) else {
            return nil
        }
        return place.slot
    }

    /// Cancels every pending and running request; each fails with ``NetworkQueueError/cancelled``.
    public func cancelAll() { send(.cancelAll) }

    /// Cancels everything, then returns the queue to its initial state: suspended, with zero progress.
    /// Settings and the delegate are kept; requests may be added again afterwards.
    public func reset() { send(.reset) }

    /// The pending and running requests, in the order they were added.
    public var requests: [NetworkRequest] { locked.withLock { $0.machine.requests } }

    /// The number of pending and running requests.
    public var requestCount: Int { locked.withLock { $0.machine.requestCount } }

    /// A snapshot of the current drain's aggregate progress.
    public var progress: QueueProgress { locked.withLock { $0.machine.progress(at: clock.now()) } }
}
