import Foundation

/// The extra connections of a split file (issue 36). The request's own slot runs its first connection; every other
/// one is lent by the scheduler only from a slot no waiting request could start in, and given back when it ends.
extension QueueStateMachine {
    /// One connection lent to a running split download, given back with ``returnConnection(_:now:)``.
    struct ConnectionLoan: Sendable {
        /// The host it counts toward under a per-host limit.
        let host: Int?
    }

    /// Lends `slot`'s running attempt `token` one more connection to `source`, or nil when no slot would idle (or
    /// the attempt is not current any more).
    mutating func lendConnection(slot: Int, token: UInt64, to source: URL?) -> ConnectionLoan? {
        guard table.isCurrent(slot, token: token), case .running = table[slot].machine.phase else { return nil }
        let host = scheduler.perHostLimit > 0 ? servers.number(of: source) : nil
        return scheduler.lendExtra(host: host) ? ConnectionLoan(host: host) : nil
    }

    /// A lent connection ended: its slot may start a waiting request.
    mutating func returnConnection(_ loan: ConnectionLoan, now: Double) -> QueueActions {
        scheduler.returnExtra(host: loan.host)
        return finishEvent(now)
    }

    /// Logs what a split download of `slot`'s attempt `token` decided (dropped when the attempt is not current).
    mutating func splitNote(
        _ event: NetworkQueueLogRecord.Event, _ message: String, level: NetworkQueueLogRecord.Level, slot: Int,
        token: UInt64, now: Double
    ) -> QueueActions {
        guard table.isCurrent(slot, token: token) else { return QueueActions() }
        outbox.log(level, event, table[slot].request, now: now) { message }
        return finishEvent(now)
    }
}
