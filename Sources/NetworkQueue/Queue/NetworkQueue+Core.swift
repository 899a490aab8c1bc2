import Foundation

extension NetworkQueue {
    /// The engine and what the shell keeps beside it, under one lock.
    struct Core {
        var machine: QueueStateMachine
        /// `run()` callers, oldest first; the machine counts them and says when to resume how many.
        var waiters: [CheckedContinuation<QueueProgress, Never>] = []
        var subscribers: [Int: AsyncStream<NetworkQueueEvent>.Continuation] = [:]
        var nextSubscriber = 0
        weak var delegate: (any NetworkQueueDelegate)?
        /// Set when a delivery found that ``delegate`` implements neither head method (both defaults ran):
        /// its later heads are not delivered, so no `HTTPURLResponse` is built for it. Cleared with the delegate.
        var delegateIgnoresHeads = false
        /// Set when a delivery found that ``delegate`` does not implement the metrics method (its default ran).
        var delegateIgnoresMetrics = false
        /// ``NetworkQueue/collectsMetrics`` as the user set it.
        var collectsMetrics = false
        var logHandler: (@Sendable (NetworkQueueLogRecord) -> Void)?

        /// Tells the machine who listens: whether to post events, log records, and ask for metrics.
        mutating func updateListeners() {
            machine.hasListeners = delegate != nil || !subscribers.isEmpty
            machine.isLogging = logHandler != nil
            machine.collectsMetrics =
                collectsMetrics || !subscribers.isEmpty || (delegate != nil && !delegateIgnoresMetrics)
        }
    }

    // MARK: Events into the machine

    /// Sends one event to the machine under the lock (with the time read under it, so that the machine
    /// sees time in lock order), then performs its actions.
    func send(_ event: (inout QueueStateMachine, Double) -> QueueActions) {
        let actions = core.withLock { event(&$0.machine, clock.now()) }
        perform(actions)
    }

    /// Marks `request` added, or throws if it already was (to this queue or another).
    func markAdded(_ request: NetworkRequest) throws(NetworkQueueError) {
        let alreadyAdded = request.shared.withLock { shared in
            defer { shared.isAdded = true }
            return shared.isAdded
        }
        guard !alreadyAdded else { throw .invalidRequest(.alreadyAdded) }
    }
}
