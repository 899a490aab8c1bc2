import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension QueueStateMachine {
    // MARK: The queue's one timer: idle timeouts and progress flushes

    /// The timer fired at `now` (it may fire late, or for an arming since superseded): flushes progress
    /// if due, fails every transfer idle for its whole timeout and lets requests whose retry time has come
    /// rejoin the pending ones.
    mutating func timerFired(now: Double) -> QueueActions {
        if let armed = armedTimer, now >= armed { armedTimer = nil }
        if let due = flushDue, now >= due { flushProgress(at: now) }
        expireDeadlines(now)
        expireRetryWaits(now)
        return finishEvent(now)
    }

    /// Adds the deadline of what `token` waits for (a transfer, adapt hooks, a retry closure) when the
    /// request has a timeout.
    mutating func addTimeout(slot: Int, token: UInt64, _ interval: TimeInterval, now: Double) {
        guard case .seconds(let timeout)? = RequestRules.idleTimeout(interval) else { return }
        addDeadline(now + timeout, slot: slot, token: token)
    }

    /// Adds a transfer's idle deadline.
    private mutating func addDeadline(_ deadline: Double, slot: Int, token: UInt64) {
        // Entries of ended transfers stay until they come due; drop them when they outnumber the live ones.
        if deadlines.count > 2 * scheduler.activeCount + 64 {
            let table = self.table
            deadlines.removeAll { !table.isTimed($0.id, token: $0.token) }
        }
        deadlines.insert(.init(deadline: deadline, id: slot, token: token))
    }

    /// Fails every transfer due at `now` that was idle for its whole timeout (and every request whose
    /// adapt hooks or retry closure ran that long), and moves the others' deadlines to their last activity
    /// plus their timeout.
    private mutating func expireDeadlines(_ now: Double) {
        for entry in deadlines.popDue(at: now) where table.isTimed(entry.id, token: entry.token) {
            let record = table[entry.id]
            guard case .seconds(let timeout)? = RequestRules.idleTimeout(record.request.timeoutInterval) else {
                continue
            }
            if now - record.lastActivity >= timeout {
                timeOut(entry.id, record.state, now: now)
            } else {
                deadlines.insert(.init(deadline: record.lastActivity + timeout, id: entry.id, token: entry.token))
            }
        }
    }

    /// Fails what waited in `slot` for its whole timeout, as its phase says.
    private mutating func timeOut(_ slot: Int, _ state: RequestState, now: Double) {
        let error = URLError(.timedOut)
        switch state {
        case .preflighting: attemptFailed(slot, .preflightFailed(error), now: now)
        case .adaptingPreflight: attemptFailed(slot, .preflightFailed(error), transferEnded: true, now: now)
        case .adaptingMain: attemptFailed(slot, .transport(error), transferEnded: true, now: now)
        case .running: attemptFailed(slot, .transport(error), now: now)
        // The closure deciding on a failed attempt never answered: no more attempts.
        case .deciding: fail(slot, .transport(error), transferEnded: true, now: now)
        case .pending, .awaitingPreflight, .awaitingMain, .waitingToRetry, .committing, .following, .paused:
            preconditionFailure("a timeout in phase \(state.name), which is not timed")
        }
    }

    /// Arms the timer for the earliest of the flush, the idle deadlines and the retry times, unless it is
    /// armed earlier already.
    mutating func armTimerIfNeeded() {
        if retryDeadlines.count > 2 * waitingRetries + 64 {
            // Waits that ended early (cancelled, retried early) stay until they come due: drop them.
            let table = self.table
            retryDeadlines.removeAll { !table.isCurrent($0.id, token: $0.token) }
        }
        // Pairwise, without an array: this runs after every event.
        func earlier(_ a: Double?, _ b: Double?) -> Double? {
            guard let a, let b else { return a ?? b }
            return min(a, b)
        }
        guard let next = earlier(flushDue, earlier(deadlines.earliest, retryDeadlines.earliest)) else { return }
        if armedTimer.map({ next < $0 }) ?? true {
            armedTimer = next
            actions.armTimer = next
        }
    }
}
