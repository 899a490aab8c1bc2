import Foundation

extension NetworkQueue {
    /// The engine and what the shell keeps beside it, under the queue's one lock.
    struct LockedState {
        var machine: QueueStateMachine
        /// `run()` callers, oldest first; the machine counts them and says when to wake how many.
        var waiters: [CheckedContinuation<QueueProgress, Never>] = []
        var subscribers: [Int: AsyncStream<NetworkQueueEvent>.Continuation] = [:]
        var nextSubscriber = 0
        weak var delegate: (any NetworkQueueDelegate)?
        /// ``NetworkQueue/collectsMetrics`` as the user set it.
        var collectsMetrics = false
        var logHandler: (@Sendable (NetworkQueueLogRecord) -> Void)?
        /// Source readers waiting for room, by source id (see ``SourceBook/ask(_:room:)``).
        var readers: [Int: CheckedContinuation<Int, Never>] = [:]
        /// The task reading each open source, cancelled when the source is stopped.
        var readerTasks: [Int: Task<Void, Never>] = [:]

        /// Tells the machine who listens: whether to post events, log records, and ask for metrics.
        mutating func updateListeners() {
            machine.outbox.hasListeners = delegate != nil || !subscribers.isEmpty
            machine.outbox.isLogging = logHandler != nil
            // Decided by settings only: a delegate that reads metrics sets `collectsMetrics`.
            machine.collectsMetrics = collectsMetrics || !subscribers.isEmpty
        }
    }

    // MARK: Events into the machine

    /// Sends one event to the machine under the lock (with the time read under it, so that the machine
    /// sees time in lock order), then performs its actions. `inline`: the caller is one of the queue's own
    /// threads (a transport's, the timer's), which may start transfers itself (see ``perform(_:inline:)``).
    func send(inline: Bool = false, _ event: (inout QueueStateMachine, Double) -> QueueActions) {
        let actions = locked.withLock { event(&$0.machine, clock.now()) }
        perform(actions, inline: inline)
    }

    /// Sends one of the shell's commands (``QueueStateMachine/Command``) as ``send(inline:_:)`` sends an event; returns
    /// what the command did, its actions performed.
    @discardableResult
    func send(_ command: QueueStateMachine.Command) -> QueueStateMachine.CommandOutcome {
        var outcome = QueueStateMachine.CommandOutcome(actions: QueueActions())
        send { machine, now in
            outcome = machine.perform(command, now: now)
            // The outcome keeps no second reference to the actions: `perform` moves them out of their list in place.
            defer { outcome.actions = QueueActions() }
            return outcome.actions
        }
        return outcome
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
