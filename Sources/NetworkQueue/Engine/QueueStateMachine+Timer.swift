import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The queue's one timer: what came due goes to its request's ``RequestMachine`` (see ``QueueTimer``).
extension QueueStateMachine {
    /// The timer fired at `now` (perhaps late, or superseded): flushes progress if due, hands each due idle or
    /// lowest-speed check and each passed deadline to its request's machine, and lets requests whose retry time
    /// has come rejoin the pending ones.
    mutating func timerFired(now: Double) -> QueueActions {
        timer.fired(at: now)
        if let due = flush.due, now >= due { flushProgress(at: now) }
        for entry in timer.idle.popDue(at: now) where table.isCurrent(entry.id, token: entry.token) {
            let record = table[entry.id]
            guard record.machine.phase.isTimed else { continue }
            var idle: Double?
            if case .seconds(let timeout)? = RequestRules.idleTimeout(record.request.timeoutInterval) { idle = timeout }
            let speed = (record.request.timeLimits ?? timeLimits).lowestSpeed.map {
                RequestMachine.SpeedCheck(
                    limit: $0, moved: record.bytesMoved + (record.machine.phase.attempt?.sentBytes ?? 0),
                    queueReceived: receivedTotal, rateCap: rateCap, url: record.request.url)
            }
            let action = record.machine.timedCheck(idle: idle, speed: speed, now: now)
            if case .attemptFailed(.preflightFailed(let error)) = action, case .preflighting = record.machine.phase,
                !record.request.fileOptions.mirrors.isEmpty
            {
                // A HEAD that timed out ends as one that failed: the next mirror is asked, and this one stopped.
                let before = record.machine.phase
                let next = record.machine.transferEnded(
                    .failed(error), received: 0, file: nil, checksExistingFile: false, metrics: nil,
                    expectedBefore: record.progress.expectedDown, mirrors: record.request.fileOptions.mirrors.count,
                    nextToken: &nextToken, now: now)
                move(entry.id, from: before)
                perform(next, entry.id, now: now)
                continue
            }
            perform(action, entry.id, now: now)
        }
        for entry in timer.deadlines.popDue(at: now) {
            guard let record = table.record(at: entry.id), record.sequence == entry.token else { continue }
            let seconds = (record.request.timeLimits ?? timeLimits).deadline
            perform(
                record.machine.deadlinePassed(seconds: seconds, url: record.request.url, now: now), entry.id, now: now)
        }
        // Only a waiting request holds a retry deadline's token.
        for entry in timer.retries.popDue(at: now) where table.isCurrent(entry.id, token: entry.token) {
            let record = table[entry.id]
            let before = record.machine.phase
            let action = record.machine.retryTimeCame()
            move(entry.id, from: before)
            perform(action, entry.id, now: now)
        }
        return finishEvent(now)
    }
}
