import Dispatch

/// The time source of a ``NetworkQueue``: a monotonic reading and one-shot timers.
///
/// The queue reads time only through its clock, so a test (or a simulation) can inject one it drives
/// by hand and make timeouts and progress coalescing happen without waiting. The default,
/// ``SystemQueueClock``, uses the system's monotonic uptime and Dispatch timers.
public protocol QueueClock: Sendable {
    /// Seconds on a monotonic timeline (any origin).
    func now() -> Double
    /// Calls `action` once, on any thread, at or after `deadline` (seconds on ``now()``'s timeline).
    /// Scheduling never cancels an earlier call; the queue ignores calls that come too early or late.
    func schedule(at deadline: Double, _ action: @escaping @Sendable () -> Void)
}

/// The system's monotonic clock (uptime, not wall time) with Dispatch timers: every queue's default.
public struct SystemQueueClock: QueueClock {
    private let queue: DispatchQueue

    /// Creates a clock whose timers fire on a private serial queue.
    public init() { queue = DispatchQueue(label: "NetworkQueue.timer") }

    /// Seconds of system uptime (monotonic; sleep excluded on Apple platforms).
    public func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// Runs `action` on the clock's private queue at `deadline` (seconds of uptime).
    public func schedule(at deadline: Double, _ action: @escaping @Sendable () -> Void) {
        let when = DispatchTime(uptimeNanoseconds: UInt64(max(0, deadline) * 1e9))
        queue.asyncAfter(deadline: when, execute: action)
    }
}
