import NetworkQueue

/// A `QueueClock` that moves only when a test advances it: timeouts and progress flushes of a queue
/// using it happen inside ``advance(by:)``, on the test's thread, with no real waiting.
public final class ManualClock: QueueClock {
    private struct Timer {
        let deadline: Double
        let order: Int
        let action: @Sendable () -> Void
    }

    private let state = Box((now: 1_000.0, timers: [Timer](), scheduled: 0))

    /// Creates a clock reading 1,000 s.
    public init() {}

    /// The time the clock shows.
    public func now() -> Double { state.with { $0.now } }

    /// Remembers `action` until the clock is advanced to `deadline`.
    public func schedule(at deadline: Double, _ action: @escaping @Sendable () -> Void) {
        state.with { state in
            state.scheduled += 1
            state.timers.append(Timer(deadline: deadline, order: state.scheduled, action: action))
        }
    }

    /// Moves the clock forward by `seconds`, running every timer that comes due on the way, earliest
    /// first, with the clock showing its deadline.
    public func advance(by seconds: Double) {
        let target = now() + seconds
        while let timer = nextDue(before: target) { timer.action() }
        state.with { $0.now = max($0.now, target) }
    }

    private func nextDue(before target: Double) -> Timer? {
        state.with { state in
            let due = state.timers.filter { $0.deadline <= target }
            guard let first = due.min(by: { ($0.deadline, $0.order) < ($1.deadline, $1.order) }) else { return nil }
            state.timers.removeAll { $0.order == first.order }
            state.now = max(state.now, first.deadline)
            return first
        }
    }
}
