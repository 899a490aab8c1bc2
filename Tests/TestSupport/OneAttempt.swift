import Dispatch
import NetworkQueue

extension NetworkQueue {
    /// A queue with ``RetryPolicy/never``: for tests about one attempt's outcome (a failure must be
    /// reported as it happens, not retried). Retries have tests of their own.
    public static func oneAttempt(
        transport: any Transport, delegateQueue: DispatchQueue? = nil, clock: any QueueClock = SystemQueueClock()
    ) -> NetworkQueue {
        let queue = NetworkQueue(transport: transport, delegateQueue: delegateQueue, clock: clock)
        queue.retryPolicy = .never
        return queue
    }
}
