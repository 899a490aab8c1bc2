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
/// - Redirects follow a ``RedirectPolicy``: credentials stay behind when the origin changes, `https` →
///   `http` is refused, and so is any target that is not HTTP(S).
/// - A 1xx head (`100 Continue`) is never reported as the response.
/// - Cookies go to a private in-memory jar per transport by default (``CookiePolicy``), stored only from
///   heads the transport accepted (Foundation's own store would keep a cookie from a head it then rejects).
/// - A head whose `Content-Length` values differ fails with `.badServerResponse`. Foundation hides the raw
///   head lines, so a bare CR or LF in a field cannot be detected here, and a server that sends only a
///   status line and closes crashes the process inside FoundationNetworking: prefer ``CurlTransport`` on
///   Linux (the default).
/// - A request without an `Accept-Encoding` header is sent with `Accept-Encoding: identity`, so sizes
///   and progress count the bytes as sent. Set the header yourself to accept compressed bodies; Foundation
///   then decodes them and hides the encoded bytes, so a gzip stream cut short while its `Content-Length`
///   still matches cannot be detected (a corrupt one fails with `.cannotDecodeContentData`).
/// - Proxies: the environment's on Linux (`http_proxy`, `https_proxy`, `all_proxy`, `no_proxy`, read by
///   Foundation's libcurl for every request; Foundation there ignores `connectionProxyDictionary`), the
///   configuration's `connectionProxyDictionary` or the system's settings on Apple platforms. Proxy credentials
///   go in the proxy's URL or dictionary: a request's own `Proxy-Authorization` header is never sent (Foundation
///   would send it to the server). ``CurlTransport`` also takes a proxy set in code (``Proxy``).
/// - Errors are mapped: a connection closed mid-body → `.networkConnectionLost`; an undecodable body →
///   `.cannotDecodeContentData`; a malformed status line → `.badServerResponse`.
/// - The request's `timeoutInterval` is rounded up for the session (Linux truncates it to whole seconds);
///   the queue enforces the exact timeout itself. Infinity, NaN and values of
///   ``NetworkRequest/noTimeoutThreshold`` or more mean no timeout (Foundation would crash on them).
public final class URLSessionTransport: Transport {
    /// Where the transport keeps cookies that servers set.
    public enum CookiePolicy: Sendable, Hashable {
        /// A private in-memory jar for this transport: cookies set by a response the transport accepted are
        /// sent back on later requests of this transport (by RFC 6265's domain, path, `Secure` and expiry
        /// rules) and never written to disk. The default.
        case ephemeral
        /// The configuration's own store; for `URLSessionConfiguration.default` that is the process-wide
        /// `HTTPCookieStorage.shared`, which Foundation may persist to a file.
        case fromConfiguration
        /// No cookie handling: nothing stored, nothing added; only a `Cookie` header you set is sent.
        case disabled
        /// The jar of `store`, which the program holds (filled from a cookie file, say, and written back after the
        /// batch): used as the ephemeral jar is; several transports may share it.
        case store(CookieStore)
    }

    let session: URLSession
    let bridge: SessionBridge

    /// The redirect policy given at creation (`redirects`).
    public var redirectPolicy: RedirectPolicy { bridge.redirects }

    /// Creates a transport with its own session.
    /// - Parameters:
    ///   - configuration: the session configuration; default `.default`. Its `urlCache` is set to nil. Without a
    ///     `User-Agent` in its `httpAdditionalHeaders`, ``NetworkQueue/defaultUserAgent`` is added there (in place
    ///     of the platform's own, which differs between Linux and Apple platforms); a request's own header still
    ///     wins.
    ///   - maximumConnectionsPerHost: connections the session may open to one host; default 64. Keep it at
    ///     least the queue's ``NetworkQueue/maxConcurrentRequestCount``.
    ///   - cookies: where cookies are kept; default ``CookiePolicy/ephemeral``.
    ///   - redirects: how redirects are followed; default ``RedirectPolicy/default``.
    public init(
        configuration: URLSessionConfiguration = .default, maximumConnectionsPerHost: Int = 64,
        cookies: CookiePolicy = .ephemeral, redirects: RedirectPolicy = .default
    ) {
        let configuration = configuration.copy() as! URLSessionConfiguration
        switch cookies {
        case .fromConfiguration:
            break
        case .ephemeral, .disabled, .store:
            // Ephemeral cookies live in the bridge's own jar: Foundation would store a cookie from a head it
            // then rejects (one too large, say).
            configuration.httpCookieStorage = nil
            configuration.httpShouldSetCookies = false
            configuration.httpCookieAcceptPolicy = .never
        }
        configuration.urlCache = nil
        var additional = configuration.httpAdditionalHeaders ?? [:]
        if !additional.keys.contains(where: {
            ($0 as? String).map { HeaderName.matches($0, lowercased: "user-agent") } ?? false
        }) {
            additional["User-Agent"] = NetworkQueue.defaultUserAgent
            configuration.httpAdditionalHeaders = additional
        }
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpMaximumConnectionsPerHost = max(1, maximumConnectionsPerHost)
        let delegateQueue = OperationQueue()
        delegateQueue.maxConcurrentOperationCount = 1
        delegateQueue.name = "URLSessionTransport.delegate"
        let jar: Locked<CookieJar>? =
            switch cookies {
            case .ephemeral: Locked(CookieJar())
            case .store(let store): store.jar
            case .fromConfiguration, .disabled: nil
            }
        bridge = SessionBridge(redirects: redirects, cookieJar: jar)
        session = URLSession(configuration: configuration, delegate: bridge, delegateQueue: delegateQueue)
    }

    deinit {
        bridge.invalidate()
        // Its cancels too run on the delegate queue (``SessionTransfer/cancel(_:on:)``).
        let session = session
        session.delegateQueue.addOperation { session.invalidateAndCancel() }
    }

    /// Starts a data task for `request` (uncapped: `options.rateCap` is ignored). With
    /// `options.collectsMetrics` it reports ``TransferEvent/metrics(_:)`` before it completes: from the
    /// platform's `URLSessionTaskMetrics` where they are delivered (Apple platforms), else what the transport
    /// measures itself (Linux: total time, time to first byte, redirects, body bytes; the rest nil).
    public func startTransfer(
        _ request: URLRequest, options: TransferOptions, events: @escaping @Sendable (TransferEvent) -> Void
    ) -> any TransferHandle {
        let transfer = SessionTransfer(
            request: request, endsAtHead: options.endsAtHead, delegateQueue: session.delegateQueue, events: events)
        if options.collectsMetrics {
            transfer.state.withLock { $0.measure = SessionMeasure(startedAt: DispatchTime.now().uptimeNanoseconds) }
        }
        bridge.start(transfer, on: session)
        return transfer
    }

    /// The timeout handed to URLSession: whole seconds, rounded up with a second to spare, so the queue's
    /// precise timer always fires first. "No timeout" (and, from direct callers, a non-positive one)
    /// becomes the largest timeout Foundation handles without overflowing.
    static func sessionTimeout(for interval: TimeInterval) -> TimeInterval {
        guard case .seconds(let seconds)? = RequestRules.idleTimeout(interval) else {
            return RequestRules.noTimeoutThreshold
        }
        return min(seconds.rounded(.up) + 1, RequestRules.noTimeoutThreshold)
    }
}

/// One transfer, possibly spanning several tasks (a replayed redirect).
final class SessionTransfer: TransferHandle {
    /// Why a redirect was not followed by URLSession itself.
    enum Interruption {
        /// Replay the redirect with the request body (307/308).
        case replay(URLRequest)
        /// The redirect was refused by the policy: fail with this error.
        case refused(URLError)
        /// The transfer ended at its final head, as it asked (``TransferOptions/endsAtHead``): its task was cancelled
        /// before the body, and it completes without an error.
        case endedAtHead
    }

    struct State {
        var task: URLSessionTask?
        var isCancelled = false
        /// Set when a redirect was answered with "stop here": what to do when the task completes.
        var interruption: Interruption?
        var redirectCount = 0
        /// Whether the final response head arrived (so an early close is a mid-body close).
        var hasResponse = false
        /// What the transfer measures, when metrics were asked for.
        var measure: SessionMeasure?
    }

    let request: URLRequest
    /// True when the transfer ends at its final head (``TransferOptions/endsAtHead``).
    let endsAtHead: Bool
    let events: @Sendable (TransferEvent) -> Void
    let state = Locked(State())
    /// The session's serial delegate queue, where its tasks are cancelled (``cancel(_:on:)``).
    let delegateQueue: OperationQueue

    init(
        request: URLRequest, endsAtHead: Bool = false, delegateQueue: OperationQueue,
        events: @escaping @Sendable (TransferEvent) -> Void
    ) {
        self.request = request
        self.endsAtHead = endsAtHead
        self.delegateQueue = delegateQueue
        self.events = events
    }

    /// Marks the transfer cancelled, then cancels its task on the session's delegate queue. Setting the flag
    /// first, under the lock the redirect handler answers under, keeps an answer from reaching a cancelled task:
    /// Foundation traps on that.
    func cancel() {
        let task = state.withLock { state -> URLSessionTask? in
            state.isCancelled = true
            return state.task
        }
        if let task { Self.cancel(task, on: delegateQueue) }
    }

    /// Cancels `task` on its session's serial delegate queue (`queue`), after the callback running there now.
    ///
    /// Foundation on Linux traps when a cancel races the task's own end ("Trying to access a behaviour for a task
    /// that in not in the registry", LINUX-URLSESSION.md): the cancel checks that the task runs and queues its
    /// failure; the task's end, delivered on the delegate queue, can unregister the task before that failure is
    /// read. It was seen in 4 runs of 300 of `EndsAtHeadTests` (a 404's head and small body arrive together, the
    /// cancel came from another thread). On the delegate queue the end's delivery cannot run between the cancel's
    /// check and its queued failure.
    static func cancel(_ task: URLSessionTask, on queue: OperationQueue) {
        queue.addOperation { task.cancel() }
    }

    var isCancelled: Bool { state.withLock { $0.isCancelled } }

    /// The caller's own `Cookie` header, for a request to `url`: it stays on the caller's origin.
    func ownCookie(for url: URL?) -> String? {
        guard let own = request.value(forHTTPHeaderField: "Cookie"), let url, let origin = request.url,
            RedirectPolicy.origin(of: url) == RedirectPolicy.origin(of: origin)
        else { return nil }
        return own
    }
}
