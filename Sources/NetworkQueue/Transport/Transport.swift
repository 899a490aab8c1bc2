import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One event of a transfer, reported by a ``Transport``.
public enum TransferEvent: Sendable {
    /// The final response head (redirects are followed, not reported). An interim 1xx head should not be
    /// reported; the queue ignores one if it is. A second final head (`.head` or `.response`) for the same
    /// transfer means it restarted: the bytes received so far no longer count.
    case head(ResponseHead)
    /// The final response head as Foundation's type, for transports that have one already (URLSession): the
    /// queue treats it as `.head(ResponseHead(response))`. A transport that parses heads itself reports
    /// ``head(_:)``, which costs no `HTTPURLResponse` unless one is read.
    case response(HTTPURLResponse)
    /// A piece of the response body.
    case data(Data)
    /// Request body bytes sent so far, and the body's total size when known.
    case sent(totalBytesSent: Int64, totalBytesExpectedToSend: Int64?)
    /// A redirect was followed, or refused (then `.completed` with the refusal's error follows).
    case redirect(TransferRedirect)
    /// What the transfer measured, reported once just before `.completed` when the transfer was started with
    /// ``TransferOptions/collectsMetrics`` (a transport that measures nothing reports none).
    case metrics(TransferMetrics)
    /// The end of the transfer: nil for success, or the error that ended it. Always the last event.
    case completed(URLError?)
}

/// One redirect a transport met, as ``TransferEvent/redirect(_:)`` reports it.
public struct TransferRedirect: Sendable, Hashable {
    /// The redirect's status code (301, 302, 303, 307 or 308).
    public var statusCode: Int
    /// The URL that answered with the redirect.
    public var from: URL
    /// Where it pointed, when that is a URL.
    public var to: URL?
    /// Why it was not followed (the transfer then fails with this error); nil when it was followed.
    public var refusal: URLError?

    /// Creates a redirect report.
    public init(statusCode: Int, from: URL, to: URL?, refusal: URLError? = nil) {
        self.statusCode = statusCode
        self.from = from
        self.to = to
        self.refusal = refusal
    }
}

/// How the queue wants one transfer run, beyond its `URLRequest`.
public struct TransferOptions: Sendable {
    /// The cap the transfer's received bytes are drawn from; nil for none. Default nil.
    public var limiter: BandwidthLimiter?
    /// Whether the transfer reports ``TransferEvent/metrics(_:)`` before it completes. Default false: the
    /// queue asks only when someone will read them.
    public var collectsMetrics: Bool

    /// Creates options; the defaults are uncapped and without metrics.
    public init(limiter: BandwidthLimiter? = nil, collectsMetrics: Bool = false) {
        self.limiter = limiter
        self.collectsMetrics = collectsMetrics
    }
}

/// A running transfer that can be cancelled, and, where the transport can, paused and throttled.
public protocol TransferHandle: Sendable {
    /// Stops the transfer. The queue has already reported the cancellation; the transport may deliver
    /// further events for this transfer, and the queue ignores them.
    func cancel()

    /// Stops (`true`) or resumes (`false`) reading the response body; the server is slowed by TCP flow
    /// control meanwhile. Returns false when the transport cannot pause (the default implementation:
    /// `URLSessionTransport` cannot, a Linux task restarts when suspended).
    func setReceivingPaused(_ paused: Bool) -> Bool

    /// Caps this transfer's receive rate in bytes per second (nil removes the cap), also while it runs.
    /// Returns false when the transport cannot (the default implementation).
    func setMaximumReceiveRate(_ bytesPerSecond: Int?) -> Bool
}

extension TransferHandle {
    /// Not supported: returns false.
    public func setReceivingPaused(_ paused: Bool) -> Bool { false }

    /// Not supported: returns false.
    public func setMaximumReceiveRate(_ bytesPerSecond: Int?) -> Bool { false }
}

/// Moves bytes for a ``NetworkQueue``: starts one transfer per call and reports its events.
///
/// Contract for conformers:
/// - events of one transfer are delivered serially (never two at once) and in order: at most one
///   `.response` before its `.data`, and exactly one `.completed`, last;
/// - `startTransfer` must not call `events` synchronously (deliver on another queue or thread);
/// - the queue owns scheduling, timeouts, validation and progress, so a transport only transfers;
/// - a redirect that changes scheme, host or port must not carry credentials along (see ``RedirectPolicy``);
/// - back-pressure: the queue consumes each event before it returns (a file destination is written
///   inside the `.data` event), so a transport that reads no more of a transfer until its event returns
///   (``CurlTransport`` on Linux) keeps memory flat however fast the server is. A transport that queues
///   events instead can pause reading with ``TransferHandle/setReceivingPaused(_:)``.
public protocol Transport: Sendable {
    /// Starts `request` and reports its events to `events`.
    func startTransfer(
        _ request: URLRequest, events: @escaping @Sendable (TransferEvent) -> Void
    ) -> any TransferHandle

    /// Starts `request` with its received bytes drawn from `limiter` (nil: uncapped), and reports its events
    /// to `events`. The queue calls this one, with its ``NetworkQueue/maximumBytesPerSecond`` limiter for
    /// every main transfer. The default implementation ignores the limiter and calls
    /// ``startTransfer(_:events:)``: such a transport's transfers are uncapped.
    func startTransfer(
        _ request: URLRequest, limiter: BandwidthLimiter?, events: @escaping @Sendable (TransferEvent) -> Void
    ) -> any TransferHandle

    /// Starts `request` as `options` say (its cap, whether it reports metrics), and reports its events to
    /// `events`. The queue calls this one. The default implementation ignores ``TransferOptions/collectsMetrics``
    /// and calls ``startTransfer(_:limiter:events:)``: such a transport reports no metrics.
    func startTransfer(
        _ request: URLRequest, options: TransferOptions, events: @escaping @Sendable (TransferEvent) -> Void
    ) -> any TransferHandle
}

extension Transport {
    /// Ignores `limiter` (this transport cannot hold a transfer back) and calls ``startTransfer(_:events:)``.
    public func startTransfer(
        _ request: URLRequest, limiter: BandwidthLimiter?, events: @escaping @Sendable (TransferEvent) -> Void
    ) -> any TransferHandle {
        startTransfer(request, events: events)
    }

    /// Calls ``startTransfer(_:limiter:events:)`` with the options' limiter; reports no metrics.
    public func startTransfer(
        _ request: URLRequest, options: TransferOptions, events: @escaping @Sendable (TransferEvent) -> Void
    ) -> any TransferHandle {
        startTransfer(request, limiter: options.limiter, events: events)
    }
}

extension TransferEvent {
    /// The event with a `.response` turned into a `.head`: what the queue's handlers see.
    var normalized: TransferEvent {
        if case .response(let response) = self { return .head(ResponseHead(response)) }
        return self
    }
}
