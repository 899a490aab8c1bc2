import Foundation

/// The queue's one timer and the deadlines it serves: what requests wait for under their idle timeout, and when
/// requests waiting to retry rejoin the others (with the progress flush, which the caller names). A pure book:
/// it says when to arm the timer; the caller drops the entries of waits that ended.
struct QueueTimer {
    /// Idle deadlines of what requests wait for (a transfer, adapt hooks, a retry closure).
    var idle = DeadlineHeap<Int>()
    /// When requests waiting to retry may rejoin the pending ones.
    var retries = DeadlineHeap<Int>()
    /// When the timer is armed to fire, or nil when it is not.
    private(set) var armed: Double?

    /// Adds the idle deadline of what `token` waits for in `slot`, when `interval` is a timeout. Entries of
    /// ended waits stay until they come due; once they outnumber twice the `live` ones (plus 64), those `table`
    /// no longer times are dropped.
    mutating func addTimeout(
        _ interval: TimeInterval, slot: Int, token: UInt64, now: Double, live: Int, table: RequestTable
    ) {
        guard case .seconds(let timeout)? = RequestRules.idleTimeout(interval) else { return }
        if idle.count > 2 * live + 64 {
            idle.removeAll { !table.isCurrent($0.id, token: $0.token) || !table[$0.id].machine.phase.isTimed }
        }
        idle.insert(.init(deadline: now + timeout, id: slot, token: token))
    }

    /// The timer fired at `now`: an arming that came due is over.
    mutating func fired(at now: Double) {
        if let armed, now >= armed { self.armed = nil }
    }

    /// The time to arm the timer for — the earliest of `flushDue`, the idle deadlines and the retry times — when
    /// it is not armed that early already. Retry times of waits that ended early (cancelled, retried early) stay
    /// until they come due; once they outnumber twice the `waiting` ones (plus 64), those `table` no longer
    /// holds are dropped.
    mutating func arm(flushDue: Double?, waiting: Int, table: RequestTable) -> Double? {
        if retries.count > 2 * waiting + 64 { retries.removeAll { !table.isCurrent($0.id, token: $0.token) } }
        // Pairwise, without an array: this runs after every event.
        func earlier(_ a: Double?, _ b: Double?) -> Double? {
            guard let a, let b else { return a ?? b }
            return min(a, b)
        }
        guard let next = earlier(flushDue, earlier(idle.earliest, retries.earliest)) else { return nil }
        guard armed.map({ next < $0 }) ?? true else { return nil }
        armed = next
        return next
    }
}
