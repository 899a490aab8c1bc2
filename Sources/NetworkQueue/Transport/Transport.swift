import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One event of a transfer, reported by a ``Transport``.
public enum TransferEvent: Sendable {
    /// The final response head (redirects are followed, not reported). An interim 1xx head should not be
    /// reported; the queue ignores one if it is. A second final `.response` for the same transfer means
    /// it restarted: the bytes received so far no longer count.
    case response(HTTPURLResponse)
    /// A piece of the response body.
    case data(Data)
    /// Request body bytes sent so far, and the body's total size when known.
    case sent(totalBytesSent: Int64, totalBytesExpectedToSend: Int64?)
    /// The end of the transfer: nil for success, or the error that ended it. Always the last event.
    case completed(URLError?)
}

/// A running transfer that can be cancelled.
public protocol TransferHandle: Sendable {
    /// Stops the transfer. The queue has already reported the cancellation; the transport may deliver
    /// further events for this transfer, and the queue ignores them.
    func cancel()
}

/// Moves bytes for a ``NetworkQueue``: starts one transfer per call and reports its events.
///
/// Contract for conformers:
/// - events of one transfer are delivered serially (never two at once) and in order: at most one
///   `.response` before its `.data`, and exactly one `.completed`, last;
/// - `startTransfer` must not call `events` synchronously (deliver on another queue or thread);
/// - the queue owns scheduling, timeouts, validation and progress, so a transport only transfers;
/// - a redirect that changes scheme, host or port must not carry credentials along (see ``RedirectPolicy``).
public protocol Transport: Sendable {
    /// Starts `request` and reports its events to `events`.
    func startTransfer(
        _ request: URLRequest, events: @escaping @Sendable (TransferEvent) -> Void
    ) -> any TransferHandle
}
