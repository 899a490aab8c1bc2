/// The per-host limit: each request's server (scheme, host and port) as a small integer the scheduler
/// counts active jobs by.
extension QueueStateMachine {
    /// The most transfers at once to one server (0: only the queue's limit applies).
    var perHostLimit: Int { scheduler.perHostLimit }

    /// Sets the per-host limit. Turning it on numbers the server of every request already in the queue,
    /// running ones included, so that they count against it at once. While it is on, each request is numbered
    /// as it joins the queue (otherwise nothing is hashed: the limit is off for almost every queue).
    mutating func setPerHostLimit(_ limit: Int, now: Double) -> QueueActions {
        let wasOff = scheduler.perHostLimit == 0
        scheduler.perHostLimit = limit
        if wasOff, scheduler.perHostLimit > 0 {
            let hosts = table.records.map { (id: $0.slot, host: servers.number(of: $0.record.request.url)) }
            scheduler.reassignHosts(hosts)
        }
        return finishEvent(now)
    }
}
