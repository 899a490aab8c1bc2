import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One event of a transfer, reported by a ``Transport``.
public enum TransferEvent: Sendable {
    /// The final response head (redirects are followed, not reported). An interim 1xx head should not be
    /// reported; the queue ignores one if it is. A second final head for the same transfer means it
    /// restarted: the bytes received so far no longer count. A transport holding an `HTTPURLResponse` reports
    /// `.head(ResponseHead(response))`.
    case head(ResponseHead)
    /// A piece of the response body.
    case data(Data)
    /// Request body bytes sent so far, and the body's total size when known.
    case sent(totalBytesSent: Int64, totalBytesExpectedToSend: Int64?)
    /// A redirect was followed, or refused (then `.completed` with the refusal's error follows).
    case redirect(TransferRedirect)
    /// What the transfer measured, reported once just before `.completed` when the transfer was started with
    /// ``TransferOptions/collectsMetrics`` (a transport that measures nothing reports none). Stored apart from the
    /// event (the metrics are big and come once), so that every other event is a small value.
    indirect case metrics(TransferMetrics)
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
    public var rateCap: RateCap?
    /// Whether the transfer reports ``TransferEvent/metrics(_:)`` before it completes. Default false: the
    /// queue asks only when someone will read them.
    public var collectsMetrics: Bool
    /// The longest the transfer may wait for its connection, in seconds (see ``TimeLimits/connect``); nil for the
    /// transport's own bound. Default nil. A transport that cannot bound a connect on its own ignores it.
    public var connectTimeout: TimeInterval?
    /// Whether the transfer ends at its final head: the transport reports the head, then completes without an error
    /// and reads none of the body, closing the connection when a body follows (see
    /// ``NetworkRequest/Validation-swift.struct/endsAtHead``). Default false.
    public var endsAtHead: Bool

    /// Creates options; the defaults are uncapped, without metrics, with the transport's own connect bound, reading
    /// the whole body.
    public init(
        rateCap: RateCap? = nil, collectsMetrics: Bool = false, connectTimeout: TimeInterval? = nil,
        endsAtHead: Bool = false
    ) {
        self.rateCap = rateCap
        self.collectsMetrics = collectsMetrics
        self.connectTimeout = connectTimeout
        self.endsAtHead = endsAtHead
    }
}

/// A running transfer, as the queue holds it: it can be cancelled.
public protocol TransferHandle: Sendable {
    /// Stops the transfer. The queue has already reported the cancellation; the transport may deliver
    /// further events for this transfer, and the queue ignores them.
    func cancel()
}

/// A running transfer whose reading can also be paused and capped while it runs (``CurlTransport``'s are; a
/// URLSession task is not: on Linux a suspended task restarts). Internal: the queue pauses a request by
/// stopping its transfer and caps through ``TransferOptions/rateCap``; only the transport's tests use it.
protocol ThrottlableTransfer: TransferHandle {
    /// Stops (`true`) or resumes (`false`) reading the response body; the server is slowed by TCP flow
    /// control meanwhile.
    func setReceivingPaused(_ paused: Bool)

    /// Caps this transfer's receive rate in bytes per second (nil removes the cap), also while it runs.
    func setMaximumBytesPerSecond(_ bytesPerSecond: Int?)
}

/// Moves bytes for a ``NetworkQueue``: starts one transfer per call and reports its events.
///
/// Contract for conformers:
/// - events of one transfer are delivered serially (never two at once) and in order: at most one final
///   `.head` before its `.data`, and exactly one `.completed`, last;
/// - `startTransfer` must not call `events` synchronously (deliver on another queue or thread);
/// - the queue owns scheduling, timeouts, validation and progress, so a transport only transfers;
/// - a redirect that changes scheme, host or port must not carry credentials along (see ``RedirectPolicy``);
/// - back-pressure: the queue consumes each event before it returns (a file destination is written
///   inside the `.data` event), so a transport that reads no more of a transfer until its event returns
///   (``CurlTransport`` on Linux) keeps memory flat however fast the server is.
public protocol Transport: Sendable {
    /// Starts `request` as `options` say (its rate cap, whether it reports metrics) and reports its events
    /// to `events`. A transport that cannot cap or measure ignores those options: its transfers are then
    /// uncapped, and report no ``TransferEvent/metrics(_:)``.
    func startTransfer(
        _ request: URLRequest, options: TransferOptions, events: @escaping @Sendable (TransferEvent) -> Void
    ) -> any TransferHandle

    /// The redirect policy the transport follows. The queue applies its ``RedirectPolicy/crossOriginStrippedHeaders``
    /// where it sends a request to another origin itself: a mirror (``NetworkRequest/FileOptions/mirrors``).
    /// Default (for a transport that does not say): ``RedirectPolicy/default``.
    var redirectPolicy: RedirectPolicy { get }
}

extension Transport {
    /// ``RedirectPolicy/default``, for a transport that does not say which policy it follows.
    public var redirectPolicy: RedirectPolicy { .default }

    /// Starts `request` with the default ``TransferOptions`` (uncapped, no metrics).
    public func startTransfer(
        _ request: URLRequest, events: @escaping @Sendable (TransferEvent) -> Void
    ) -> any TransferHandle {
        startTransfer(request, options: TransferOptions(), events: events)
    }
}
