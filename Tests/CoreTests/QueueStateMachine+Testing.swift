@testable import NetworkQueue

/// Shorthands the tests read the machine by: each is one step the shell takes itself.
extension QueueStateMachine {
    /// Stops new starts (running transfers continue), as ``NetworkQueue/suspend()`` does.
    mutating func suspend() { scheduler.suspend() }

    /// Everything posted so far, for one delivery pass (at `now`: by default long ago, so that the next pass is
    /// due at once).
    mutating func takeDeliveries(at now: Double = -.infinity) -> [Delivery] { outbox.take(now: now) }

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

extension QueueStateMachine {
    /// Adds a request and ends the event, as ``NetworkQueue/add(_:)`` does. Returns its slot.
    mutating func add(
        _ request: NetworkRequest, claim: DestinationClaim?, isObserved: Bool = false,
        existingFile: ExistingFileRules.FileState? = nil, now: Double
    ) -> (slot: Int, actions: QueueActions) {
        let slot = insert(
            request, claim: claim, isObserved: isObserved, existingFile: existingFile, source: nil, now: now)
        return (slot, finishEvent(now))
    }

    /// Cancels one request, if `slot` still holds it.
    mutating func cancel(_ request: NetworkRequest, slot: Int, now: Double) -> QueueActions {
        cancel([(request, slot)], now: now)
    }

    /// The reader of source `id` asks how many requests it may read.
    mutating func askToRead(_ id: Int) -> SourceBook.ReadDecision { sources.ask(id, room: readRoom) }

    /// Source `id` read `count` of its granted requests.
    mutating func sourceRead(_ id: Int, count: Int) { sources.read(id, count: count) }

    /// Source `id` ended, in an event of its own.
    mutating func sourceEnded(_ id: Int, failure: NetworkQueueError.UnderlyingError?, now: Double) -> QueueActions {
        closeSource(id, failure: failure, now: now)
        return finishEvent(now)
    }
}
