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
    mutating func pause(_ targets: [(request: NetworkRequest, slot: Int)], now: Double) -> (paused: [NetworkRequest], actions: QueueActions) {
        var paused: [NetworkRequest] = []
        for (request, slot) in targets where pauseOne(request, slot: slot, now: now) { paused.append(request) }
        return (paused, finishEvent(now))
    }

    /// Resumes each paused request of `targets` that its slot still holds, in one event. Returns the
    /// requests resumed.
    mutating func resume(_ targets: [(request: NetworkRequest, slot: Int)], now: Double) -> (resumed: [NetworkRequest], actions: QueueActions) {
        var resumed: [NetworkRequest] = []
        for (request, slot) in targets {
            guard let record = table.record(at: slot), record.request === request, record.phase == .paused else { continue }
            if record.resumesWithPreflight {
                record.phase = .awaitingPreflight
                scheduler.enqueue(Job(id: slot, lane: .preflight))
            } else {
                record.phase = .pending
            }
            scheduler.enqueue(Job(id: slot, lane: .main))
            actions.list.append(.publish(request, record.status()))
            postEvent(.didResume(request))
            log(.info, .resumed, request, now: now) { "resumed" }
            resumed.append(request)
        }
        return (resumed, finishEvent(now))
    }

    private mutating func pauseOne(_ request: NetworkRequest, slot: Int, now: Double) -> Bool {
        guard let record = table.record(at: slot), record.request === request else { return false }
        let main = Job(id: slot, lane: .main)
        let preflight = Job(id: slot, lane: .preflight)
        record.resumesWithPreflight = false
        switch record.phase {
        case .committing, .following, .paused:
            return false
        case .pending, .awaitingMain:
            scheduler.remove(main)
        case .awaitingPreflight, .adaptingPreflight:
            scheduler.remove(preflight)
            scheduler.remove(main)
            record.resumesWithPreflight = true
        case .preflighting:
            scheduler.remove(preflight)
            scheduler.remove(main)
            if let transfer = record.transfer { actions.list.append(.cancel(transfer)) }
            record.resumesWithPreflight = true
        case .adaptingMain:
            scheduler.remove(main)
            // The attempt never sent anything: the resumed one takes its place.
            record.attempts -= 1
        case .running:
            stopForPause(slot, now: now)
            // Interrupted, not failed: the resumed transfer continues this attempt.
            record.attempts -= 1
        case .deciding:
            record.failure = nil
        case .waitingToRetry:
            waitingRetries -= 1
            record.serverAskedWait = false
        }
        record.phase = .paused
        record.transfer = nil
        // A late transfer event, hook, decision, timeout or retry deadline of what ran is now stale.
        nextToken += 1
        record.token = nextToken
        actions.list.append(.publish(request, record.status()))
        postEvent(.didPause(request))
        log(.info, .paused, request, now: now) {
            record.resumeOffset > 0 || record.hasKeptPart ? "paused, keeping the partial file" : "paused"
        }
        return true
    }

    /// Stops a running transfer for a pause: the slot is freed, a file's part is kept for the resumed
    /// transfer to continue, a memory body is dropped; the bytes stay counted until the resumed transfer's
    /// response rebases them.
    private mutating func stopForPause(_ slot: Int, now: Double) {
        let record = table[slot]
        scheduler.remove(Job(id: slot, lane: .main))
        if let transfer = record.transfer { actions.list.append(.cancel(transfer)) }
        if let sink = record.sink {
            record.hasKeptPart = record.request.resumesDownloads
            actions.list.append(record.hasKeptPart ? .keep(sink) : .discard(sink))
            record.sink = nil
        }
        record.body = Data()
        record.downloadDirty = record.request.downloadProgressHandler != nil
        markProgressDirty(at: now)
    }
}
