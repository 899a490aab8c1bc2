import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Hears the life of every request in a ``NetworkQueue``. Every method has an empty default.
///
/// All methods of one queue are called **serially and in order** on the queue's delegate executor: the
/// `DispatchQueue` given as `delegateQueue` when the queue was created (a private serial queue by
/// default, so headless code never needs the main thread). Pass `.main` to get them on the main thread;
/// a `@MainActor` delegate then implements the methods as `nonisolated` and enters the main actor with
/// `MainActor.assumeIsolated`, which is checked at run time. For each request the order is
/// didStart → didReceiveHeaders → progress updates → exactly one of didFinish / didFail, and a request's own
/// handlers run before the delegate's method for the same event. A retried request hears didStart once;
/// each failed attempt that is retried adds willRetry (after that attempt's didReceiveHeaders, if any),
/// and each later attempt may add its own didReceiveHeaders. A paused request hears didPause, and didResume
/// when it is resumed, between its didStart (if it had started) and its end.
public protocol NetworkQueueDelegate: AnyObject, Sendable {
    /// A request's transfer started (not called for requests that never start, nor for HEAD preflights).
    func networkQueue(_ queue: NetworkQueue, didStart request: NetworkRequest)
    /// A request received its final response head (redirects are followed, not reported). Reading the head
    /// costs nothing more than receiving it; its ``ResponseHead/httpURLResponse`` is built only when read.
    func networkQueue(_ queue: NetworkQueue, didReceiveHeaders request: NetworkRequest, head: ResponseHead)
    /// An attempt's transfer ended, with what it measured (see ``RequestMetrics`` for attempts the queue
    /// stopped itself): once per attempt that sent its request, after the attempt's didReceiveHeaders (if
    /// any) and before its willRetry, didFinish or didFail. Called only while metrics are collected: set
    /// ``NetworkQueue/collectsMetrics`` (or listen to ``NetworkQueue/events()``).
    func networkQueue(_ queue: NetworkQueue, didCollectMetrics request: NetworkRequest, metrics: TransferMetrics)
    /// A request succeeded.
    func networkQueue(_ queue: NetworkQueue, didFinish request: NetworkRequest, response: NetworkResponse)
    /// A request failed or was cancelled (cancellation is a failure with a cancellation error). With
    /// retries, only after its last attempt: `error` is that attempt's, and
    /// ``NetworkRequest/attemptCount`` says how many attempts were made.
    func networkQueue(_ queue: NetworkQueue, didFail request: NetworkRequest, error: NetworkQueueError)
    /// An attempt of `request` failed with `error` and it will be sent again in `delay` seconds (sooner
    /// if another request to its host succeeds meanwhile; see ``RetryPolicy``). Its slot is free while it
    /// waits. Comes after the attempt's didReceiveHeaders, if it had one; didStart is not repeated.
    func networkQueue(
        _ queue: NetworkQueue, willRetry request: NetworkRequest, after delay: TimeInterval, error: NetworkQueueError)
    /// A request was paused by ``NetworkQueue/pause(_:)`` (or ``NetworkQueue/pause(where:)``): its transfer,
    /// if one ran, was stopped, and it holds no slot until it is resumed.
    func networkQueue(_ queue: NetworkQueue, didPause request: NetworkRequest)
    /// A paused request was resumed by ``NetworkQueue/resume(_:)`` (or ``NetworkQueue/resume(where:)``): it
    /// waits for a slot again, among the pending requests of its priority. When it starts again, didStart is
    /// not repeated.
    func networkQueue(_ queue: NetworkQueue, didResume request: NetworkRequest)
    /// The queue's aggregate progress changed (coalesced to at most about 60 updates per second).
    func networkQueue(_ queue: NetworkQueue, didUpdateProgress progress: QueueProgress)
    /// A source added with ``NetworkQueue/add(contentsOf:)-(Source)`` threw (`error` is
    /// ``NetworkQueueError/sourceFailed(_:)``): it is read no further. The requests it gave before run on, unless
    /// ``NetworkQueue/cancelsAllOnFailure`` is on: then every request ends with
    /// ``NetworkQueueError/cancelledBecauseSourceFailed`` and every other source stops.
    func networkQueue(_ queue: NetworkQueue, sourceDidFail error: NetworkQueueError)
    /// A server stopped answering connects and its requests are held, answered again, or stayed down for its whole
    /// retry window so that its held requests end (see ``DeadHosts``). Heard once per change of each server.
    func networkQueue(_ queue: NetworkQueue, serverHoldChanged hold: ServerHold)
    /// Every request added since the queue was last idle has finished or failed. Called once per drain.
    func networkQueueDidFinish(_ queue: NetworkQueue)
}

extension NetworkQueueDelegate {
    /// Does nothing.
    public func networkQueue(_ queue: NetworkQueue, didStart request: NetworkRequest) {}
    /// Does nothing.
    public func networkQueue(_ queue: NetworkQueue, didReceiveHeaders request: NetworkRequest, head: ResponseHead) {}
    /// Does nothing.
    public func networkQueue(_ queue: NetworkQueue, didCollectMetrics request: NetworkRequest, metrics: TransferMetrics)
    {}
    /// Does nothing.
    public func networkQueue(_ queue: NetworkQueue, didFinish request: NetworkRequest, response: NetworkResponse) {}
    /// Does nothing.
    public func networkQueue(_ queue: NetworkQueue, didFail request: NetworkRequest, error: NetworkQueueError) {}
    /// Does nothing.
    public func networkQueue(
        _ queue: NetworkQueue, willRetry request: NetworkRequest, after delay: TimeInterval, error: NetworkQueueError
    ) {}
    /// Does nothing.
    public func networkQueue(_ queue: NetworkQueue, didPause request: NetworkRequest) {}
    /// Does nothing.
    public func networkQueue(_ queue: NetworkQueue, didResume request: NetworkRequest) {}
    /// Does nothing.
    public func networkQueue(_ queue: NetworkQueue, didUpdateProgress progress: QueueProgress) {}
    /// Does nothing.
    public func networkQueue(_ queue: NetworkQueue, sourceDidFail error: NetworkQueueError) {}
    /// Does nothing.
    public func networkQueue(_ queue: NetworkQueue, serverHoldChanged hold: ServerHold) {}
    /// Does nothing.
    public func networkQueueDidFinish(_ queue: NetworkQueue) {}
}

/// One delegate event, as seen through ``NetworkQueue/events()``.
public enum NetworkQueueEvent: Sendable {
    /// See ``NetworkQueueDelegate/networkQueue(_:didStart:)``.
    case didStart(NetworkRequest)
    /// See ``NetworkQueueDelegate/networkQueue(_:didReceiveHeaders:head:)``.
    case didReceiveHeaders(NetworkRequest, head: ResponseHead)
    /// See ``NetworkQueueDelegate/networkQueue(_:didCollectMetrics:metrics:)``. (This case and
    /// ``didUpdateProgress(_:)`` are stored apart from the event, their values being big: every other event is a
    /// small value.)
    indirect case didCollectMetrics(NetworkRequest, metrics: TransferMetrics)
    /// See ``NetworkQueueDelegate/networkQueue(_:didFinish:response:)``.
    case didFinish(NetworkRequest, response: NetworkResponse)
    /// See ``NetworkQueueDelegate/networkQueue(_:didFail:error:)``.
    case didFail(NetworkRequest, error: NetworkQueueError)
    /// See ``NetworkQueueDelegate/networkQueue(_:willRetry:after:error:)``.
    case willRetry(NetworkRequest, after: TimeInterval, error: NetworkQueueError)
    /// See ``NetworkQueueDelegate/networkQueue(_:didPause:)``.
    case didPause(NetworkRequest)
    /// See ``NetworkQueueDelegate/networkQueue(_:didResume:)``.
    case didResume(NetworkRequest)
    /// See ``NetworkQueueDelegate/networkQueue(_:didUpdateProgress:)``.
    indirect case didUpdateProgress(QueueProgress)
    /// See ``NetworkQueueDelegate/networkQueue(_:sourceDidFail:)``.
    case sourceDidFail(error: NetworkQueueError)
    /// See ``NetworkQueueDelegate/networkQueue(_:serverHoldChanged:)``.
    indirect case serverHoldChanged(ServerHold)
    /// See ``NetworkQueueDelegate/networkQueueDidFinish(_:)``.
    case queueDidFinish
}
