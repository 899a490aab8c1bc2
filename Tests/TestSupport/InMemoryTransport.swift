import Dispatch
import Foundation
import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A `Transport` that plays scripts instead of using the network, for tests (test support: not part of the
/// library).
///
/// For each request, `responder` returns the steps of its transfer. Steps run in order on one serial
/// queue; after the last step the transfer completes successfully unless a `.fail` step ended it first.
/// A script without a `.respond` step still completes, and the queue then reports a bad server response.
public final class InMemoryTransport: Transport {
    /// One step of a scripted transfer.
    public enum Step: Sendable {
        /// Reports a response head (`.head`, as a transport that parses heads does).
        case respond(status: Int, headers: [String: String] = [:])
        /// Reports this prebuilt `HTTPURLResponse` (`.response`, as URLSession does).
        case respondWith(HTTPURLResponse)
        /// Reports a piece of body.
        case body(Data)
        /// Reports request body bytes sent so far.
        case sent(Int64, of: Int64?)
        /// Waits this many seconds before the next step.
        case wait(TimeInterval)
        /// Waits until the gate is opened. The gate does not keep the transfer alive: its handle's owner
        /// (the queue) does.
        case hold(TransferGate)
        /// Ends the transfer with this error.
        case fail(URLError)
        /// Reports a redirect (followed, or refused when it carries a refusal).
        case redirect(TransferRedirect)
        /// Reports what the transfer measured (as a real transport does just before it completes).
        case metrics(TransferMetrics)
    }

    /// Counters of what the transport was asked to do.
    public struct Statistics: Sendable, Hashable {
        /// Transfers started.
        public var started = 0
        /// Transfers cancelled before they completed.
        public var cancelled = 0
        /// Transfers in flight now (started, not completed or cancelled).
        public var inFlight = 0
        /// The most transfers in flight at once.
        public var maxInFlight = 0
    }

    private let responder: @Sendable (URLRequest) -> [Step]
    private let queue = DispatchQueue(label: "InMemoryTransport")
    private struct Counters {
        var statistics = Statistics()
        var requests: [URLRequest] = []
        var cancelledRequests: [URLRequest] = []
        var metricsAsked: [Bool] = []
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        var startWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let counters = Box(Counters())

    /// Creates a transport whose transfers follow the steps `responder` returns for each request.
    public init(responder: @escaping @Sendable (URLRequest) -> [Step]) {
        self.responder = responder
    }

    /// A transport that answers every request at once with `status` and `body` (with Content-Length).
    ///
    /// Response heads are built once per URL and reused, so that benchmarks measure the queue rather than
    /// `HTTPURLResponse`'s initializer.
    public static func instant(status: Int = 200, body: Data = Data()) -> InMemoryTransport {
        let cache = Box([URL: HTTPURLResponse]())
        let headers = ["Content-Length": "\(body.count)"]
        return InMemoryTransport { request in
            let url = request.url ?? URL(string: "memory://")!
            let response = cache.with { cache in
                if let response = cache[url] { return response }
                let response = HTTPURLResponse(
                    url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers)!
                if cache.count < 1_024 { cache[url] = response }
                return response
            }
            return body.isEmpty ? [.respondWith(response)] : [.respondWith(response), .body(body)]
        }
    }

    /// What has been counted so far.
    public var statistics: Statistics { counters.with { $0.statistics } }

    /// Returns once no transfer is in flight: each has completed or been cancelled. The queue cancels
    /// transfers off the caller's thread, so a transfer can still be in flight when a queue has already
    /// reported it cancelled.
    public func waitUntilIdle() async {
        await withCheckedContinuation { continuation in
            let isIdle = counters.with { counters in
                if counters.statistics.inFlight > 0 { counters.idleWaiters.append(continuation) }
                return counters.statistics.inFlight == 0
            }
            if isIdle { continuation.resume() }
        }
    }

    /// Returns once at least `count` transfers have been started. The queue starts transfers on its own
    /// thread, after `go()` or `add()` has returned.
    public func waitUntilStarted(_ count: Int) async {
        await withCheckedContinuation { continuation in
            let isDone = counters.with { counters in
                if counters.statistics.started < count { counters.startWaiters.append((count, continuation)) }
                return counters.statistics.started >= count
            }
            if isDone { continuation.resume() }
        }
    }

    /// Every request started, in start order.
    public var startedRequests: [URLRequest] { counters.with { $0.requests } }

    /// Every request whose transfer was cancelled before it completed, in cancellation order.
    public var cancelledRequests: [URLRequest] { counters.with { $0.cancelledRequests } }

    /// Whether each transfer, in start order, was asked to report metrics.
    public var metricsAsked: [Bool] { counters.with { $0.metricsAsked } }

    /// Notes whether metrics were asked for, then plays the script (which reports metrics only where it
    /// has a `.metrics` step).
    public func startTransfer(
        _ request: URLRequest, options: TransferOptions, events: @escaping @Sendable (TransferEvent) -> Void
    ) -> any TransferHandle {
        counters.with { $0.metricsAsked.append(options.collectsMetrics) }
        return play(request, events: events)
    }

    /// Starts playing the script for `request`.
    private func play(_ request: URLRequest, events: @escaping @Sendable (TransferEvent) -> Void) -> any TransferHandle
    {
        let reached = counters.with { counters in
            counters.statistics.started += 1
            counters.statistics.inFlight += 1
            counters.statistics.maxInFlight = max(counters.statistics.maxInFlight, counters.statistics.inFlight)
            counters.requests.append(request)
            let started = counters.statistics.started
            let reached = counters.startWaiters.filter { $0.count <= started }.map(\.continuation)
            counters.startWaiters.removeAll { $0.count <= started }
            return reached
        }
        for waiter in reached { waiter.resume() }
        let transfer = ScriptedTransfer(request: request, steps: responder(request), events: events) {
            [weak self] cancelled in
            let waiters = self?.counters.with { counters in
                counters.statistics.inFlight -= 1
                if cancelled {
                    counters.statistics.cancelled += 1
                    counters.cancelledRequests.append(request)
                }
                guard counters.statistics.inFlight == 0 else { return [CheckedContinuation<Void, Never>]() }
                defer { counters.idleWaiters = [] }
                return counters.idleWaiters
            }
            for waiter in waiters ?? [] { waiter.resume() }
        }
        queue.async { transfer.play(on: self.queue) }
        return transfer
    }
}

/// A latch for ``InMemoryTransport/Step/hold(_:)``: transfers held by it continue once it is opened.
public final class TransferGate: Sendable {
    private let state = Box((isOpen: false, waiting: [@Sendable () -> Void]()))

    /// Creates a closed gate.
    public init() {}

    /// Opens the gate for good, releasing every held transfer.
    public func open() {
        let waiting = state.with { state in
            state.isOpen = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for resume in waiting { resume() }
    }

    /// Returns once the gate is open.
    public func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            whenOpen { continuation.resume() }
        }
    }

    func whenOpen(_ resume: @escaping @Sendable () -> Void) {
        let isOpen = state.with { state in
            if !state.isOpen { state.waiting.append(resume) }
            return state.isOpen
        }
        if isOpen { resume() }
    }
}

/// One scripted transfer: plays its steps, stops at cancel.
final class ScriptedTransfer: TransferHandle {
    private let request: URLRequest
    private let events: @Sendable (TransferEvent) -> Void
    private let onEnd: @Sendable (_ cancelled: Bool) -> Void
    private let state: Box<(steps: ArraySlice<InMemoryTransport.Step>, ended: Bool)>

    init(
        request: URLRequest, steps: [InMemoryTransport.Step], events: @escaping @Sendable (TransferEvent) -> Void,
        onEnd: @escaping @Sendable (Bool) -> Void
    ) {
        self.request = request
        self.events = events
        self.onEnd = onEnd
        self.state = Box((steps[...], false))
    }

    func cancel() {
        if !end() { onEnd(true) }
    }

    /// Marks the transfer ended and drops the steps left: a `.hold` step's gate keeps a closure that
    /// holds this transfer, and the cycle would leak both if the gate never opens. Returns whether it
    /// had already ended.
    private func end() -> Bool {
        state.with { state in
            defer {
                state.ended = true
                state.steps = []
            }
            return state.ended
        }
    }

    /// Runs steps until one must wait, then continues from the wait on `queue`.
    func play(on queue: DispatchQueue) {
        while let step = nextStep() {
            switch step {
            case .respond(let status, let headers):
                let url = request.url ?? URL(string: "memory://")!
                events(.head(responseHead(url, status: status, fields: headers)))
            case .respondWith(let response):
                events(.head(ResponseHead(response)))
            case .body(let data):
                events(.data(data))
            case .sent(let sent, let total):
                events(.sent(totalBytesSent: sent, totalBytesExpectedToSend: total))
            case .wait(let seconds):
                return queue.asyncAfter(deadline: .now() + seconds) { self.play(on: queue) }
            case .hold(let gate):
                // Weak: a held transfer lives through its queue's record; once cancelled it must not be
                // kept (with its queue, through `events`) by a gate that never opens.
                return gate.whenOpen { [weak self] in
                    guard let self else { return }
                    queue.async { self.play(on: queue) }
                }
            case .fail(let error):
                return finish(error)
            case .redirect(let redirect):
                events(.redirect(redirect))
            case .metrics(let metrics):
                events(.metrics(metrics))
            }
        }
        finish(nil)
    }

    private func nextStep() -> InMemoryTransport.Step? {
        state.with { $0.ended ? nil : $0.steps.popFirst() }
    }

    private func finish(_ error: URLError?) {
        guard !end() else { return }
        onEnd(false)
        events(.completed(error))
    }
}

/// A response head with `fields` (in the dictionary's order), as a transport that parses heads reports it.
public func responseHead(_ url: URL, status: Int, fields: [String: String]) -> ResponseHead {
    ResponseHead(
        url: url, statusCode: status, httpVersion: "HTTP/1.1",
        fields: fields.map { ResponseHead.Field(name: $0.key, value: $0.value) })
}
