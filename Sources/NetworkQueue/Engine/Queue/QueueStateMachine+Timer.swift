import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The queue's one timer (``QueueTimer``): what came due goes to its request's ``RequestMachine``, and the
/// coalesced progress is published: a request's counters and handlers at the next flush (or at its end), not per
/// chunk (see ``ProgressFlush``).
extension QueueStateMachine {
    /// The timer fired at `now` (perhaps late, or superseded): flushes progress if due, hands each due idle or
    /// lowest-speed check and each passed deadline to its request's machine, and lets requests whose retry time
    /// has come rejoin the pending ones.
    mutating func timerFired(now: Double) -> QueueActions {
        timer.fired(at: now)
        if let due = flush.due, now >= due { flushProgress(at: now) }
        for entry in timer.idle.popDue(at: now) where table.isCurrent(entry.id, token: entry.stamp) {
            let record = table[entry.id]
            guard record.machine.phase.isTimed else { continue }
            var idle: Double?
            if case .seconds(let timeout)? = RequestRules.idleTimeout(record.request.timeoutInterval) { idle = timeout }
            let speed = (record.request.timeLimits ?? timeLimits).lowestSpeed.map {
                RequestMachine.SpeedCheck(
                    limit: $0, moved: record.bytesMoved + (record.machine.phase.attempt?.sentBytes ?? 0),
                    queueReceived: receivedTotal, rateCap: rateCap, url: record.request.url)
            }
            apply(entry.id, .timedCheck(idle: idle, speed: speed), now: now)
        }
        for entry in timer.deadlines.popDue(at: now) {
            guard let record = table.record(at: entry.id), record.sequence == entry.stamp else { continue }
            let seconds = (record.request.timeLimits ?? timeLimits).deadline
            apply(entry.id, .deadlinePassed(seconds: seconds, url: record.request.url), now: now)
        }
        for entry in timer.splits.popDue(at: now) {
            downloadEvent(.recheckDue, slot: entry.id, token: entry.stamp, now: now)
        }
        // Only a waiting request holds a retry deadline's token.
        for entry in timer.retries.popDue(at: now) where table.isCurrent(entry.id, token: entry.stamp) {
            apply(entry.id, .retryTimeCame, now: now)
        }
        return finishEvent(now)
    }

    /// Publishes each request with unreported bytes and posts its handlers' updates, then the queue's.
    private mutating func flushProgress(at now: Double) {
        for slot in flush.flush(at: now) where table.isOccupied(slot) && table[slot].isListedDirty {
            let record = table[slot]
            record.isListedDirty = false
            // Made once and read from where it is published: no second copy of the status.
            let published = NetworkRequest.PublishedStatus(record.status())
            actions.append(.publish(record.request, published))
            if record.uploadDirty, record.request.uploadProgressHandler != nil {
                outbox.post(.uploadProgress(record.request, published.status.upload))
            }
            if record.downloadDirty, record.request.downloadProgressHandler != nil {
                outbox.post(.downloadProgress(record.request, published.status.download))
            }
            record.uploadDirty = false
            record.downloadDirty = false
        }
        if flush.queueChanged, inDrain {
            flush.queueChanged = false
            outbox.post(.didUpdateProgress(progress(at: now)))
        }
    }
}
