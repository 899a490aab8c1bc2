@testable import NetworkQueue

/// Shorthands the tests read the machine by: each is one step the shell takes itself.
extension QueueStateMachine {
    /// The queue's progress at `now`.
    func progress(at now: Double) -> QueueProgress { ledger.snapshot(at: now) }

    /// Stops new starts (running transfers continue), as ``NetworkQueue/suspend()`` does.
    mutating func suspend() { scheduler.suspend() }

    /// Everything posted so far, for one delivery pass.
    mutating func takeDeliveries() -> [Delivery] { outbox.take() }

    /// Whether anyone hears the queue's events.
    var hasListeners: Bool {
        get { outbox.hasListeners }
        set { outbox.hasListeners = newValue }
    }

    /// Whether decisions are posted as log records.
    var isLogging: Bool {
        get { outbox.isLogging }
        set { outbox.isLogging = newValue }
    }

    /// When requests waiting to retry rejoin the pending ones.
    var retryDeadlines: DeadlineHeap<Int> { timer.retries }

    /// HEADs that may roll ahead of the transfers (see ``Scheduler/preflightWindow(limit:)``).
    static func preflightWindow(limit: Int) -> Int { Scheduler.preflightWindow(limit: limit) }
}
