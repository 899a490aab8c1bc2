import Foundation

/// The per-host limit's books for the ``Scheduler``: the host of each id (a small integer the caller assigns)
/// and the active jobs of each host. Pure; ids and hosts index arrays, with no hashing.
struct HostBook {
    /// `hostOf[id]` is the id's host, or -1 when it has none (never held back by a host limit).
    private var hostOf: [Int32] = []
    /// Active jobs per host.
    private var activePerHost: [Int] = []

    /// The host of `id`, if it has one.
    func host(of id: Int) -> Int? {
        id < hostOf.count && hostOf[id] >= 0 ? Int(hostOf[id]) : nil
    }

    /// The active jobs of `host`.
    func activeCount(ofHost host: Int) -> Int { host < activePerHost.count ? activePerHost[host] : 0 }

    /// True when `id` may start under a limit of `limit` active jobs per host (0: no limit).
    func allows(_ id: Int, limit: Int) -> Bool {
        limit == 0 || id >= hostOf.count || hostOf[id] < 0 || activePerHost[Int(hostOf[id])] < limit
    }

    /// Records the host of `id` (nil: none), growing the per-id and per-host arrays as needed.
    mutating func assign(_ host: Int?, to id: Int) {
        guard host != nil || id < hostOf.count else { return }
        if id >= hostOf.count { hostOf.append(contentsOf: repeatElement(-1, count: id + 1 - hostOf.count)) }
        hostOf[id] = Int32(host ?? -1)
        if let host, host >= activePerHost.count {
            activePerHost.append(contentsOf: repeatElement(0, count: host + 1 - activePerHost.count))
        }
    }

    /// A job of `id` became active (`by` 1) or left the active set (`by` -1).
    mutating func count(_ id: Int, by change: Int) {
        if let host = host(of: id) { activePerHost[host] += change }
    }

    /// A connection to `host` that is no job's own (an extra one) began (`by` 1) or ended (`by` -1).
    mutating func count(host: Int, by change: Int) {
        if host >= activePerHost.count {
            activePerHost.append(contentsOf: repeatElement(0, count: host + 1 - activePerHost.count))
        }
        activePerHost[host] = max(0, activePerHost[host] + change)
    }

    /// Counts the active jobs of each host again from `activeLanes` (the scheduler's per-id bits: bit 0 and
    /// bit 1 are an active job each).
    mutating func recount(_ activeLanes: [UInt8]) {
        for host in activePerHost.indices { activePerHost[host] = 0 }
        for (id, lanes) in activeLanes.enumerated() where lanes & 3 != 0 {
            guard let host = host(of: id) else { continue }
            activePerHost[host] += (lanes & 3).nonzeroBitCount
        }
    }
}

/// The servers (scheme, host and port) seen while a per-host limit is on, numbered in the order they were met:
/// the small integers ``HostBook`` counts active jobs by.
struct ServerNumbers {
    private var numbers: [String: Int] = [:]

    /// The number of `url`'s server; nil for a URL without a host (failed as invalid at its turn).
    mutating func number(of url: URL?) -> Int? {
        guard let key = RequestRules.hostKey(url) else { return nil }
        if let number = numbers[key] { return number }
        let number = numbers.count
        numbers[key] = number
        return number
    }

    /// Forgets every server: no slot holds a request, so the numbering starts over.
    mutating func removeAll() { numbers.removeAll(keepingCapacity: true) }
}
