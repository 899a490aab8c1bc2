import Foundation

/// A snapshot of a queue's aggregate progress: request counts, bytes, fraction, throughput and ETA.
///
/// Counts and bytes cover the current *drain*: everything added since the queue was last idle. A new
/// drain starts from zero when a request is added to an idle queue that has already finished one.
public struct QueueProgress: Sendable, Hashable {
    /// Requests added in this drain: the requests known so far. While a source added with
    /// ``NetworkQueue/add(contentsOf:)-(Source)`` is still being read (``isTotalFinal`` false), more may come.
    public var totalRequestCount: Int
    /// Requests that finished: succeeded, as ``NetworkQueueDelegate/networkQueue(_:didFinish:response:)`` says.
    public var finishedRequestCount: Int
    /// Requests that failed for any reason other than cancellation.
    public var failedRequestCount: Int
    /// Requests that were cancelled, by the caller or because a sibling failed.
    public var cancelledRequestCount: Int

    /// Response body bytes received so far (a restarted transfer's earlier bytes are not counted).
    public var bytesReceived: Int64
    /// The total response bytes expected, or nil while any request's size is unknown or more requests may
    /// come (``isTotalFinal`` false); see ``estimatedBytesExpectedToReceive`` for an estimate meanwhile.
    public var bytesExpectedToReceive: Int64?
    /// Request body bytes sent so far.
    public var bytesSent: Int64
    /// The total request body bytes to send, or nil while any request's body size is unknown.
    public var bytesExpectedToSend: Int64?

    /// The completed share of the drain's work, in 0...1.
    ///
    /// Weighted by bytes when sizes are known; a request of unknown size weighs one unit, and one whose HEAD
    /// is still to come (accurate progress) or announced by a source and not read yet weighs the mean size
    /// learned so far. Never NaN, never
    /// above 1.0, never decreasing within a drain, and exactly 1.0 once every request of the drain has
    /// succeeded. A failed or cancelled request's unfinished work leaves the total without moving the
    /// fraction, so a drain with failures ends at 1.0 only if the work that still counted was completed.
    public var fractionCompleted: Double
    /// Bytes per second (sent plus received) over the last few seconds, or nil before there is a sample.
    public var throughput: Double?
    /// Seconds until the drain completes at the current throughput, or nil when unknown.
    public var estimatedTimeRemaining: TimeInterval?
    /// False while a source added with ``NetworkQueue/add(contentsOf:)-(Source)`` is still being read: more requests
    /// may join the drain, and ``fractionCompleted`` stays below 1.0 (at most 0.999). True otherwise.
    public var isTotalFinal: Bool
    /// The requests of the drain as far as they are known: ``totalRequestCount`` plus those that open sources
    /// announced (``NetworkQueue/add(contentsOf:expectedCount:)``) and have not given yet.
    public var estimatedRequestCount: Int
    /// ``bytesExpectedToReceive`` when it is known; otherwise an estimate: the sizes learned so far, plus
    /// their mean for each request whose size is not known yet (announced requests included). Nil before
    /// any size is known.
    public var estimatedBytesExpectedToReceive: Int64?
    /// True when ``estimatedBytesExpectedToReceive`` is an estimate (``bytesExpectedToReceive`` is nil).
    public var isEstimated: Bool
    /// Requests waiting (not started yet, or waiting to start again) whose server is held now: it asked the queue to
    /// slow down (see ``NetworkQueue/hostBackoff``), or stopped answering connects (see ``NetworkQueue/deadHosts``).
    /// They start when the hold ends. 0 when no server is held.
    public var heldRequestCount = 0
    /// Servers held now because they stopped answering connects (see ``NetworkQueue/deadHosts``): their requests wait,
    /// counted in ``heldRequestCount``, while one at a time probes each. 0 when none is.
    public var heldServerCount = 0
    /// With ``NetworkQueue/adaptiveConcurrency``: the transfers the queue would now run at once, the levels of the
    /// servers with a transfer running added up (within ``NetworkQueue/maxConcurrentRequestCount``); nil without it.
    public var concurrencyLevel: Int?

    /// Requests that ended in any way: finished, failed or cancelled.
    public var endedRequestCount: Int {
        finishedRequestCount + failedRequestCount + cancelledRequestCount
    }

    /// An empty progress: no requests, fraction 0.
    public static let zero = QueueProgress(
        totalRequestCount: 0, finishedRequestCount: 0, failedRequestCount: 0, cancelledRequestCount: 0,
        bytesReceived: 0, bytesExpectedToReceive: 0, bytesSent: 0, bytesExpectedToSend: 0,
        fractionCompleted: 0, throughput: nil, estimatedTimeRemaining: nil, isTotalFinal: true,
        estimatedRequestCount: 0,
        estimatedBytesExpectedToReceive: 0, isEstimated: false)
}
