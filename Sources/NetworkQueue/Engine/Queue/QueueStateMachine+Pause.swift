import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Pausing and resuming single requests.
///
/// A paused request holds no slot and waits in no lane; it stays in the table, so the drain (and
/// `queueDidFinish`) waits for it. What a pause does depends on where the request is:
/// - waiting for a slot (`pending`, `awaitingPreflight`, `awaitingMain`): it leaves the lanes;
/// - running: its transfer is stopped. A file destination's part and validator are kept, and the resumed
///   transfer continues them with a `Range` request; a memory body is dropped and starts over. Its bytes stay
///   in the progress until the resumed transfer's response says how many still count (the fraction never
///   goes backwards);
/// - preflighting or adapting: the HEAD or the hooks' result is dropped, and they run again on resume;
/// - deciding or waiting to retry: the wait ends; on resume the next attempt waits only for a slot;
/// - committing (its file being moved into place) or following a duplicate's leader: it cannot be paused
///   (a follower's bytes are its leader's: pause the leader).
extension QueueStateMachine {
    /// Pauses each request of `targets` that its slot still holds and that can be paused, in one event.
    /// Returns the requests paused.
    mutating func pause(_ targets: [(request: NetworkRequest, slot: Int)], now: Double) -> (
        paused: [NetworkRequest], actions: QueueActions
    ) {
        var paused: [NetworkRequest] = []
        for (request, slot) in targets where pauseOne(request, slot: slot, now: now) { paused.append(request) }
        return (paused, finishEvent(now))
    }

    /// Resumes each paused request of `targets` that its slot still holds, in one event. Returns the
    /// requests resumed.
    mutating func resume(_ targets: [(request: NetworkRequest, slot: Int)], now: Double) -> (
        resumed: [NetworkRequest], actions: QueueActions
    ) {
        var resumed: [NetworkRequest] = []
        for (request, slot) in targets {
            guard table.record(at: slot)?.request === request else { continue }
            let action = apply(slot, .resume, now: now)
            if case .resumed = action { resumed.append(request) }
        }
        return (resumed, finishEvent(now))
    }

    /// Pauses `request` if `slot` still holds it and it can be paused (the machine says; the coordinator keeps or
    /// deletes the part of the attempt it stops, as for a retry).
    private mutating func pauseOne(_ request: NetworkRequest, slot: Int, now: Double) -> Bool {
        guard table.record(at: slot)?.request === request else { return false }
        let action = apply(slot, .pause, now: now)
        if case .paused = action { return true }
        return false
    }
}
