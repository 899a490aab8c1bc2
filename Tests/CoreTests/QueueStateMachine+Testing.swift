import Foundation

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

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

    /// The adapt hooks the shell ran for attempt `token` returned `outcome`.
    mutating func adapted(
        slot: Int, token: UInt64, _ outcome: Result<URLRequest, NetworkQueueError.UnderlyingError>, now: Double
    ) -> QueueActions {
        perform(.adapted(slot: slot, token: token, outcome), now: now).actions
    }

    /// The retry policy's closure the shell ran answered `decision`.
    mutating func retryDecided(slot: Int, token: UInt64, _ decision: RetryPolicy.Decision, now: Double) -> QueueActions
    {
        perform(.retryDecided(slot: slot, token: token, decision), now: now).actions
    }
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
        perform(.cancel([(request, slot)]), now: now).actions
    }

    /// The reader of source `id` asks how many requests it may read.
    mutating func askToRead(_ id: Int) -> SourceBook.ReadDecision { sources.ask(id, room: readRoom) }

    /// Source `id` read `count` of its granted requests.
    mutating func sourceRead(_ id: Int, count: Int) { sources.read(id, count: count) }

    /// Source `id` ended, in an event of its own.
    mutating func sourceEnded(_ id: Int, failure: NetworkQueueError.UnderlyingError?, now: Double) -> QueueActions {
        _ = perform(.closeSource(id, failure: failure), now: now)
        return finishEvent(now)
    }
}

/// The shell's commands (``QueueStateMachine/Command``) by name, as the tests send them.
extension QueueStateMachine {
    mutating func go(now: Double) -> QueueActions { perform(.go, now: now).actions }

    mutating func setLimit(_ limit: Int, now: Double) -> QueueActions { perform(.setLimit(limit), now: now).actions }

    mutating func setPerHostLimit(_ limit: Int, now: Double) -> QueueActions {
        perform(.setPerHostLimit(limit), now: now).actions
    }

    mutating func setHostPacing(_ pacing: HostPacing?, forServer key: String? = nil, now: Double) -> QueueActions {
        perform(.setHostPacing(pacing, server: key), now: now).actions
    }

    mutating func setPriority(_ priority: Int, for request: NetworkRequest, slot: Int, now: Double) -> (
        changed: Bool, actions: QueueActions
    ) {
        let outcome = perform(.setPriority(priority, request, slot: slot), now: now)
        return (!outcome.requests.isEmpty, outcome.actions)
    }

    mutating func cancelAll(now: Double) -> QueueActions { perform(.cancelAll, now: now).actions }

    mutating func pause(_ targets: [(request: NetworkRequest, slot: Int)], now: Double) -> (
        paused: [NetworkRequest], actions: QueueActions
    ) {
        let outcome = perform(.pause(targets), now: now)
        return (outcome.requests, outcome.actions)
    }

    mutating func resume(_ targets: [(request: NetworkRequest, slot: Int)], now: Double) -> (
        resumed: [NetworkRequest], actions: QueueActions
    ) {
        let outcome = perform(.resume(targets), now: now)
        return (outcome.requests, outcome.actions)
    }

    mutating func openSource(announcing expected: Int, now: Double) -> (id: Int, actions: QueueActions) {
        let outcome = perform(.openSource(announcing: expected), now: now)
        return (outcome.sourceID ?? -1, outcome.actions)
    }

    mutating func closeSource(_ id: Int, failure: NetworkQueueError.UnderlyingError?, now: Double) {
        _ = perform(.closeSource(id, failure: failure), now: now)
    }
}
