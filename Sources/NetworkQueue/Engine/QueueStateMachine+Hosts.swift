/// The per-host limit: each request's server (scheme, host and port) as a small integer the scheduler
/// counts active jobs by.
extension QueueStateMachine {
    /// The most transfers at once to one server (0: only the queue's limit applies).
    var perHostLimit: Int { scheduler.perHostLimit }

    /// Sets the per-host limit. Turning it on numbers the server of every request already in the queue,
    /// running ones included, so that they count against it at once.
    mutating func setPerHostLimit(_ limit: Int, now: Double) -> QueueActions {
        let wasOff = scheduler.perHostLimit == 0
        scheduler.perHostLimit = limit
        if wasOff, scheduler.perHostLimit > 0 {
            let hosts = table.records.map { (id: $0.slot, host: hostNumber(of: $0.record.request)) }
            scheduler.reassignHosts(hosts)
        }
        return finishEvent(now)
    }

    /// Numbers the server of a request just put in `slot`, when a per-host limit is on (else nothing is
    /// hashed: the limit is off for almost every queue).
    mutating func assignHost(_ slot: Int, _ request: NetworkRequest) {
        scheduler.setHost(slot, scheduler.perHostLimit > 0 ? hostNumber(of: request) : nil)
    }

    /// The number of the request's server; nil for a URL without a host (it is failed as invalid at its turn).
    private mutating func hostNumber(of request: NetworkRequest) -> Int? {
        guard let key = RequestRules.hostKey(request.url) else { return nil }
        if let number = hostNumbers[key] { return number }
        let number = hostNumbers.count
        hostNumbers[key] = number
        return number
    }
}
