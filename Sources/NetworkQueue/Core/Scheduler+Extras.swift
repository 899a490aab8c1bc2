/// Extra connections: a split file's request runs more than one connection, each in a slot no waiting job could
/// start in (DESIGN 17: connections are slots).
extension Scheduler {
    /// Lends a running job one more connection (to `host`, for the per-host limit) when a slot would otherwise
    /// idle: the queue runs, no job waits in either lane, and the slots and the host's limit have room. The caller
    /// gives it back with ``returnExtra(host:)``.
    mutating func lendExtra(host: Int?) -> Bool {
        guard !isSuspended, main.isEmpty, preflight.isEmpty, limit == 0 || activeCount + extraCount < limit else {
            return false
        }
        if perHostLimit > 0, let host, hosts.activeCount(ofHost: host) >= perHostLimit { return false }
        extraCount += 1
        if let host { hosts.count(host: host, by: 1) }
        return true
    }

    /// An extra connection lent to `host` ended: its slot is free.
    mutating func returnExtra(host: Int?) {
        extraCount = max(0, extraCount - 1)
        if let host { hosts.count(host: host, by: -1) }
    }
}
