/// The limits a queue's scheduler runs with, from what the queue was given.
extension Scheduler {
    /// The transfers the scheduler runs at once for a limit as set: `limit`, but never more than `ceiling`;
    /// 0 (unlimited) and negative values mean `ceiling`.
    static func effectiveLimit(_ limit: Int, ceiling: Int) -> Int { limit <= 0 ? ceiling : min(limit, ceiling) }

    /// HEADs that may roll ahead of the transfers with accurate progress (see ``Scheduler/preflightWindow``):
    /// 8 per slot of the effective limit, at least 64 and at most 4,096 (saturating: any limit is safe).
    static func preflightWindow(limit: Int) -> Int {
        let (window, overflow) = max(1, limit).multipliedReportingOverflow(by: 8)
        return overflow ? 4_096 : min(4_096, max(64, window))
    }
}
