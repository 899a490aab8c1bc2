/// Extra connections: a split file's request runs more than one connection, each in a slot no waiting job could
/// start in (DESIGN 17: connections are slots).
extension Scheduler {
    /// Lends a running job one more connection (to `host`, for the per-host limit) when a slot would otherwise
    /// idle: the queue runs, no job waits in either lane, and the slots and the host's limit have room, and the
    /// host's pacing and hold allow a start at `now` (the connection is paced as a start). The caller gives it back
    /// with ``returnExtra(host:)``.
    mutating func lendExtra(host: Int?, now: Double) -> Bool {
        guard !isSuspended, main.isEmpty, preflight.isEmpty, limit == 0 || activeCount + extraCount < limit else {
            return false
        }
        if let host, !hosts.allows(host: host, limit: perHostLimit, now: now) { return false }
        extraCount += 1
        if let host {
            hosts.count(host: host, by: 1)
            paced(host, now: now)
        }
        return true
    }

    /// An extra connection lent to `host` ended: its slot is free.
    mutating func returnExtra(host: Int?) {
        extraCount = max(0, extraCount - 1)
        if let host { hosts.count(host: host, by: -1) }
    }
}
