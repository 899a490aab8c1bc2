import Foundation

extension NetworkQueue {
    /// Whether every request's metrics are collected (``NetworkRequest/metrics``,
    /// ``NetworkResponse/metrics``, and the delegate's
    /// ``NetworkQueueDelegate/networkQueue(_:didCollectMetrics:metrics:)``). Default false: metrics are then
    /// collected only while an ``events()`` stream is open, so that a queue nobody asks costs nothing for them.
    /// A delegate that reads metrics sets this. Applies to transfers that start afterwards.
    public var collectsMetrics: Bool {
        get { locked.withLock { $0.collectsMetrics } }
        set {
            locked.withLock { core in
                core.collectsMetrics = newValue
                core.updateListeners()
            }
        }
    }

    /// Hears every decision the queue makes about its requests, as ``NetworkQueueLogRecord``s: added, attempt
    /// started, head received, redirect followed or refused, retry scheduled, continued from a byte or range
    /// refused, paused and resumed, checksum verified or failed, finished, failed, cancelled.
    ///
    /// Called serially and in order on the delegate executor (see ``init(transport:delegateQueue:clock:)``),
    /// in step with the delegate's events. Records never carry a secret: URLs are redacted and no header is
    /// logged. Default nil: no record is made, and the log costs nothing. Applies to decisions made after it
    /// is set.
    ///
    /// The article <doc:Observing> shows how to bridge it to swift-log without this package depending on it.
    public var logHandler: (@Sendable (NetworkQueueLogRecord) -> Void)? {
        get { locked.withLock { $0.logHandler } }
        set {
            locked.withLock { core in
                core.logHandler = newValue
                core.updateListeners()
            }
        }
    }
}
