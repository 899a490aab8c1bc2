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
            guard let record = table.record(at: slot), record.request === request else { continue }
            let before = record.machine.phase
            let action = record.machine.resume(now: now)
            guard case .resumed = action else { continue }
            if case .running(let until) = record.machine.deadline {
                timer.addDeadline(until, slot: slot, sequence: record.sequence, table: table)
            }
            move(slot, from: before)
            perform(action, slot, now: now)
            outbox.post(.didResume(request))
            outbox.log(.info, .resumed, request, now: now) { "resumed" }
            resumed.append(request)
        }
        return (resumed, finishEvent(now))
    }

    private mutating func pauseOne(_ request: NetworkRequest, slot: Int, now: Double) -> Bool {
        guard let record = table.record(at: slot), record.request === request else { return false }
        let before = record.machine.phase
        let action = record.machine.pause(now: now)
        guard case .paused(let stopped) = action else { return false }
        // A late transfer event, hook, decision, timeout or retry deadline of what ran is now stale: the paused
        // phase holds no token.
        move(slot, from: before)
        if let stopped {
            // Its part is kept for the resumed transfer to continue (the sink keeps it only with a validator);
            // its bytes stay counted until that transfer's response rebases them.
            if let sink = stopped.sink {
                record.hasKeptPart = request.continuesPartialDownloads
                actions.list.append(record.hasKeptPart ? .keep(sink) : .discard(sink))
            }
            record.downloadDirty = request.downloadProgressHandler != nil
            flush.markChanged(at: now)
        }
        actions.publish(record)
        outbox.post(.didPause(request))
        outbox.log(.info, .paused, request, now: now) {
            (stopped?.continuedFrom ?? 0) > 0 || record.hasKeptPart
                ? "paused, keeping the partial file" : "paused"
        }
        return true
    }
}
