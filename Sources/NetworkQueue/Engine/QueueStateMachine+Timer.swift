import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension QueueStateMachine {
    // MARK: The queue's one timer: its deadlines (see timerFired(now:))

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
