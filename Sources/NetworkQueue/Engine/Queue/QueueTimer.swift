import Foundation

/// The queue's one timer and the deadlines it serves: what requests wait for under their idle timeout and lowest
/// speed, the requests' own deadlines, and when requests waiting to retry rejoin the others (with the progress
/// flush, which the caller names). A pure book: it says when to arm the timer; the caller drops the entries of
/// waits that ended.
struct QueueTimer {
    /// Idle deadlines of what requests wait for (a transfer, adapt hooks, a retry closure).
    var idle = DeadlineHeap<Int>()
    /// When requests waiting to retry may rejoin the pending ones.
    var retries = DeadlineHeap<Int>()
    /// When split files look at their end game again (``SplitMachine/Action/recheck(at:)``), under each
    /// attempt's token. Entries of attempts that ended stay until they come due.
    var splits = DeadlineHeap<Int>()
    /// When requests' deadlines pass (see ``TimeLimits/deadline``), under each request's sequence number.
    var deadlines = DeadlineHeap<Int>()
    /// The count of ``deadlines`` at which the entries of ended requests are dropped: twice the count after the
    /// last drop (plus 64), so that dropping costs O(1) per entry over time.
    private var deadlinesPruneAt = 64
    /// When the timer is armed to fire, or nil when it is not.
    private(set) var armed: Double?

    /// Adds the first check of what `token` waits for in `slot`: at its idle timeout, when `interval` is one, or
    /// at the end of its first lowest-speed window (`speedWindow` seconds), whichever comes first. Entries of
    /// ended waits stay until they come due; once they outnumber twice the `live` ones (plus 64), those `table`
    /// no longer times are dropped.
    mutating func addTimeout(
        _ interval: TimeInterval, speedWindow: Double? = nil, slot: Int, token: UInt64, now: Double, live: Int,
        table: RequestTable
    ) {
        var first = speedWindow
        if case .seconds(let timeout)? = RequestRules.idleTimeout(interval) { first = min(first ?? timeout, timeout) }
        guard let first else { return }
        if idle.count > 2 * live + 64 {
            idle.removeAll { !table.isCurrent($0.id, token: $0.stamp) || !table[$0.id].machine.phase.isTimed }
        }
        idle.insert(.init(deadline: now + first, id: slot, stamp: token))
    }

    /// Adds the deadline of the request with `sequence` in `slot`, passing at `time`. Entries of requests that
    /// ended stay until they come due or are dropped in bulk (those `table` no longer holds).
    mutating func addDeadline(_ time: Double, slot: Int, sequence: UInt64, table: RequestTable) {
        if deadlines.count >= deadlinesPruneAt {
            deadlines.removeAll { table.record(at: $0.id)?.sequence != $0.stamp }
            deadlinesPruneAt = 2 * deadlines.count + 64
        }
        deadlines.insert(.init(deadline: time, id: slot, stamp: sequence))
    }

    /// The timer fired at `now`: an arming that came due is over.
    mutating func fired(at now: Double) {
        if let armed, now >= armed { self.armed = nil }
    }

    /// The time to arm the timer for — the earliest of `flushDue`, `startDue` (when a paced or held server may
    /// start a request again), the idle checks, the deadlines and the retry times — when
    /// it is not armed that early already. Retry times of waits that ended early (cancelled, retried early) stay
    /// until they come due; once they outnumber twice the `waiting` ones (plus 64), those `table` no longer
    /// holds are dropped. Deadlines of ended requests are dropped with the last request.
    mutating func arm(flushDue: Double?, startDue: Double? = nil, waiting: Int, table: RequestTable) -> Double? {
        if retries.count > 2 * waiting + 64 { retries.removeAll { !table.isCurrent($0.id, token: $0.stamp) } }
        // With no request left, every deadline is of a request that ended: none keeps the timer armed.
        if table.isEmpty, deadlines.count > 0 { deadlines = DeadlineHeap() }
        // Pairwise, without an array: this runs after every event.
        let due = Self.earlier(
            Self.earlier(Self.earlier(idle.earliest, deadlines.earliest), retries.earliest), splits.earliest)
        guard let next = Self.earlier(Self.earlier(flushDue, startDue), due) else { return nil }
        guard armed.map({ next < $0 }) ?? true else { return nil }
        armed = next
        return next
    }

    /// The earlier of two times, either of which may be missing.
    private static func earlier(_ a: Double?, _ b: Double?) -> Double? {
        guard let a, let b else { return a ?? b }
        return min(a, b)
    }
}
