import Foundation

/// The extra connections of a split file (issue 36). The request's own slot runs its first connection; every other
/// one is lent by the scheduler only from a slot no waiting request could start in, and given back when it ends
/// (``SplitMachine/Action/giveBack(_:)``, or with its attempt: ``move(_:from:leaving:transferEnded:)``).
extension QueueStateMachine {
    /// One connection lent to a running split download.
    struct ConnectionLoan: Sendable {
        /// The host it counts toward under a per-host limit.
        let host: Int?
    }

    /// Lends `slot`'s running attempt one more connection to `source`, or nil when no slot would idle.
    mutating func lendConnection(slot: Int, to source: URL?) -> ConnectionLoan? {
        let host = scheduler.perHostLimit > 0 ? servers.number(of: source) : nil
        return scheduler.lendExtra(host: host) ? ConnectionLoan(host: host) : nil
    }
}
