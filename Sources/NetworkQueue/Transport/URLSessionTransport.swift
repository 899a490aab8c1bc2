import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A ``Transport`` over one `URLSession` with data tasks, tuned for a ``NetworkQueue``.
///
/// - One session per transport, with a private serial delegate queue (a concurrent one reorders chunks).
/// - `urlCache` is nil and `httpMaximumConnectionsPerHost` is raised (default 64), so the queue's limit,
///   not the session's default of 6, decides concurrency.
/// - Its transfer state is the truth: after ``TransferHandle/cancel()`` nothing more is reported, even if
///   the session later delivers bytes or a success (on Linux `cancel()` can be lost).
/// - A 307/308 redirect of a request with a body is replayed with the body (Linux drops it).
/// - A connection closed mid-body is reported as `.networkConnectionLost` on every platform.
/// - The request's `timeoutInterval` is rounded up for the session (Linux truncates it to whole seconds);
///   the queue enforces the exact timeout itself.
public final class URLSessionTransport: Transport {
    let session: URLSession
    let bridge: SessionBridge

    /// Creates a transport with its own session.
    /// - Parameters:
    ///   - configuration: the session configuration; default `.default`. Its `urlCache` is set to nil.
    ///   - maximumConnectionsPerHost: connections the session may open to one host; default 64. Keep it at
    ///     least the queue's ``NetworkQueue/maxConcurrentRequestCount``.
    public init(configuration: URLSessionConfiguration = .default, maximumConnectionsPerHost: Int = 64) {
        let configuration = configuration.copy() as! URLSessionConfiguration
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpMaximumConnectionsPerHost = max(1, maximumConnectionsPerHost)
        let delegateQueue = OperationQueue()
        delegateQueue.maxConcurrentOperationCount = 1
        delegateQueue.name = "URLSessionTransport.delegate"
        bridge = SessionBridge()
        session = URLSession(configuration: configuration, delegate: bridge, delegateQueue: delegateQueue)
    }

    deinit {
        bridge.invalidate()
        session.invalidateAndCancel()
    }

    /// Starts a data task for `request`.
    public func startTransfer(
        _ request: URLRequest, events: @escaping @Sendable (TransferEvent) -> Void
    ) -> any TransferHandle {
        let transfer = SessionTransfer(request: request, events: events)
        bridge.start(transfer, on: session)
        return transfer
    }

    /// The timeout handed to URLSession: whole seconds, rounded up with a second to spare, so the queue's
    /// precise timer always fires first.
    static func sessionTimeout(for interval: TimeInterval) -> TimeInterval {
        guard interval > 0, interval.isFinite else { return interval }
        return interval.rounded(.up) + 1
    }
}

/// One transfer, possibly spanning several tasks (a replayed redirect).
final class SessionTransfer: TransferHandle {
    struct State {
        var task: URLSessionTask?
        var isCancelled = false
        /// A redirect to replay with the body when the current task completes.
        var replay: URLRequest?
        var redirectCount = 0
        /// Whether the final response head arrived (so an early close is a mid-body close).
        var hasResponse = false
    }

    let request: URLRequest
    let events: @Sendable (TransferEvent) -> Void
    let state = Locked(State())

    init(request: URLRequest, events: @escaping @Sendable (TransferEvent) -> Void) {
        self.request = request
        self.events = events
    }

    func cancel() {
        let task = state.withLock { state -> URLSessionTask? in
            state.isCancelled = true
            return state.task
        }
        task?.cancel()
    }

    var isCancelled: Bool { state.withLock { $0.isCancelled } }
}
