import Foundation

/// The per-host books for the ``Scheduler``: the host of each id (a small integer the caller assigns), and per host
/// its active jobs, its pending jobs in each lane, and when it may next start one (its pacing and its hold). Pure;
/// ids and hosts index arrays, with no hashing.
struct HostBook {
    /// `hostOf[id]` is the id's host, or -1 when it has none (never held back by a host limit).
    private var hostOf: [Int32] = []
    /// Per host, indexed by host.
    private var entries: [Entry] = []
    /// Pending jobs that have a host, per lane (preflight, main): the others are never held back by one.
    private var hostedPending = (preflight: 0, main: 0)
    /// The hosts with pending jobs, in no order: what a start pass looks at (a batch read from a source has a window
    /// of pending requests, however many servers it met).
    private var waiting: [Int32] = []
    /// True once a host was paced or held: from then on starts check the time.
    private(set) var isTimed = false
    /// Hosts whose HEADs wait for their sampled ones (see ``setPreflightsWait(_:ofHost:)``).
    private(set) var waitingPreflightHosts = 0

    /// One host's books.
    private struct Entry {
        var active = 0
        var pendingPreflights: Int32 = 0
        var pendingMains: Int32 = 0
        /// The least time between two starts (seconds), when the host has its own (NaN: the scheduler's default).
        var interval = Double.nan
        /// Whether the host's own interval is drawn at random (see ``Scheduler/randomizesPacing``).
        var randomized = false
        /// No start before this time: the last start plus the interval.
        var pacedUntil = -Double.infinity
        /// No start before this time: the host said so (see ``hold(_:until:)``).
        var heldUntil = -Double.infinity
        /// The host's place in ``HostBook/waiting``, or -1 while it has no pending job.
        var waitingIndex: Int32 = -1
        /// True while the host's HEADs wait for its sampled ones to answer (see ``PreflightSampler``).
        var preflightsWait = false
        /// The host's own limit of active jobs (0: the scheduler's), set by ``AdaptiveConcurrency``; a scheduler's
        /// limit bounds it too.
        var ownLimit: Int32 = 0

        /// True when one more job is within `limit` (the scheduler's, 0: none) and the host's own.
        func hasRoom(under limit: Int) -> Bool {
            (limit == 0 || active < limit) && (ownLimit == 0 || active < Int(ownLimit))
        }

        var pending: Int32 { pendingPreflights + pendingMains }
        var notBefore: Double { max(pacedUntil, heldUntil) }
    }

    /// True once an id was given a host: from then on pending jobs are counted per host.
    var hasHosts: Bool { !hostOf.isEmpty }

    /// The host of `id`, if it has one.
    func host(of id: Int) -> Int? {
        id < hostOf.count && hostOf[id] >= 0 ? Int(hostOf[id]) : nil
    }

    /// True once a host was given a limit of its own (``setLimit(_:ofHost:)``): from then on starts check hosts.
    private(set) var hasOwnLimits = false

    /// Gives `host` a limit of its own of `limit` active jobs (0: the scheduler's alone).
    mutating func setLimit(_ limit: Int, ofHost host: Int) {
        grow(to: host)
        if !hasOwnLimits, limit > 0 {
            hasOwnLimits = true
            busyOwnLimits = 0
        }
        let new = Int32(clamping: max(0, limit))
        if entries[host].active > 0 { busyOwnLimits += Int(new) - Int(entries[host].ownLimit) }
        entries[host].ownLimit = new
    }

    /// The sum of the own limits of the hosts with an active job (while any host has one).
    private(set) var busyOwnLimits = 0

    /// The active jobs of `host`.
    func activeCount(ofHost host: Int) -> Int { host < entries.count ? entries[host].active : 0 }

    /// The pending jobs (both lanes) of `host`.
    func pendingCount(ofHost host: Int) -> Int { host < entries.count ? Int(entries[host].pending) : 0 }

    /// True when a job of `host` may start at `now` under a limit of `limit` active jobs per host (0: none).
    func allows(host: Int, limit: Int, now: Double) -> Bool {
        guard host < entries.count else { return true }
        let entry = entries[host]
        return entry.hasRoom(under: limit) && entry.notBefore <= now
    }

    /// True when `id` may start at `now` under a limit of `limit` active jobs per host (0: no limit).
    func allows(_ id: Int, limit: Int, now: Double) -> Bool {
        guard let host = host(of: id) else { return true }
        return allows(host: host, limit: limit, now: now)
    }

    /// True when the preflight (HEAD) jobs of `id`'s host wait for its sampled ones.
    func preflightsWait(_ id: Int) -> Bool {
        guard waitingPreflightHosts > 0, let host = host(of: id) else { return false }
        return entries[host].preflightsWait
    }

    /// Holds (`wait`) or frees the preflight jobs of `host`: its main jobs are not affected.
    mutating func setPreflightsWait(_ wait: Bool, ofHost host: Int) {
        grow(to: host)
        guard entries[host].preflightsWait != wait else { return }
        entries[host].preflightsWait = wait
        waitingPreflightHosts += wait ? 1 : -1
    }

    /// True when some job among `count` pending in `lane` may start at `now` as far as hosts go: one without a host,
    /// or one whose host allows it (a preflight job also one whose host's HEADs do not wait). O(hosts): it spares the
    /// start pass a scan of a lane whose jobs all wait.
    func mayStart(in lane: Scheduler.Lane, count: Int, limit: Int, now: Double) -> Bool {
        let hosted = lane == .preflight ? hostedPending.preflight : hostedPending.main
        if count > hosted { return true }
        let gates = lane == .preflight && waitingPreflightHosts > 0
        for host in waiting {
            let entry = entries[Int(host)]
            let pending = lane == .preflight ? entry.pendingPreflights : entry.pendingMains
            if pending > 0, entry.hasRoom(under: limit) && entry.notBefore <= now,
                !(gates && entry.preflightsWait)
            {
                return true
            }
        }
        return false
    }

    /// The earliest time after `now` at which a host with pending jobs and room under `limit` may start one
    /// again (its pacing or hold ends), or nil when no such host waits for time.
    func nextTimedStart(limit: Int, now: Double) -> Double? {
        var earliest: Double?
        for host in waiting {
            let entry = entries[Int(host)]
            guard entry.hasRoom(under: limit) else { continue }
            let time = entry.notBefore
            // A hold without an end (a down server's probe runs) ends with an event, not a time.
            if time > now, time.isFinite { earliest = min(earliest ?? time, time) }
        }
        return earliest
    }

    /// Records the host of `id` (nil: none), growing the per-id and per-host arrays as needed. `pending` is the
    /// id's pending lanes (bit 0 preflight, bit 1 main), which move with it from its former host.
    mutating func assign(_ host: Int?, to id: Int, pending: UInt8 = 0) {
        guard host != nil || id < hostOf.count else { return }
        if id >= hostOf.count { hostOf.append(contentsOf: repeatElement(-1, count: id + 1 - hostOf.count)) }
        if pending != 0 { countPending(id, lanes: pending, by: -1) }
        hostOf[id] = Int32(host ?? -1)
        if let host { grow(to: host) }
        if pending != 0 { countPending(id, lanes: pending, by: 1) }
    }

    private mutating func grow(to host: Int) {
        if host >= entries.count { entries.append(contentsOf: repeatElement(Entry(), count: host + 1 - entries.count)) }
    }

    /// A job of `id` became active (`by` 1) or left the active set (`by` -1).
    mutating func count(_ id: Int, by change: Int) {
        if let host = host(of: id) { setActive(host, entries[host].active + change) }
    }

    /// A job of `id` joined (`by` 1) or left (`by` -1) the pending jobs of the lanes in `lanes` (bit 0 preflight,
    /// bit 1 main).
    mutating func countPending(_ id: Int, lanes: UInt8, by change: Int32) {
        guard let host = host(of: id) else { return }
        let before = entries[host].pending
        if lanes & 1 != 0 {
            entries[host].pendingPreflights += change
            hostedPending.preflight += Int(change)
        }
        if lanes & 2 != 0 {
            entries[host].pendingMains += change
            hostedPending.main += Int(change)
        }
        let after = entries[host].pending
        if before == 0, after > 0 {
            entries[host].waitingIndex = Int32(waiting.count)
            waiting.append(Int32(host))
        } else if before > 0, after == 0 {
            leaveWaiting(host)
        }
    }

    /// `host` has no pending job any more: it leaves `waiting` (the last one takes its place).
    private mutating func leaveWaiting(_ host: Int) {
        let index = Int(entries[host].waitingIndex)
        guard index >= 0 else { return }
        let last = waiting.removeLast()
        if index < waiting.count {
            waiting[index] = last
            entries[Int(last)].waitingIndex = Int32(index)
        }
        entries[host].waitingIndex = -1
    }

    /// A connection to `host` that is no job's own (an extra one) began (`by` 1) or ended (`by` -1).
    mutating func count(host: Int, by change: Int) {
        grow(to: host)
        setActive(host, max(0, entries[host].active + change))
    }

    /// Sets the active jobs of `host`, keeping ``busyOwnLimits``.
    private mutating func setActive(_ host: Int, _ active: Int) {
        let entry = entries[host]
        if hasOwnLimits, (entry.active > 0) != (active > 0) {
            busyOwnLimits += active > 0 ? Int(entry.ownLimit) : -Int(entry.ownLimit)
        }
        entries[host].active = active
    }

    /// The pacing `host` has of its own (nil: the scheduler's default).
    func ownPacing(of host: Int) -> (interval: Double, randomized: Bool)? {
        guard host < entries.count, !entries[host].interval.isNaN else { return nil }
        return (entries[host].interval, entries[host].randomized)
    }

    /// No start to `host` before `time` (its last start plus its interval).
    mutating func pace(_ host: Int, until time: Double) {
        grow(to: host)
        entries[host].pacedUntil = time
    }

    /// The pacing of `host` of its own (nil: the default). Turns the time checks on.
    mutating func setPacing(_ interval: Double?, randomized: Bool, ofHost host: Int) {
        grow(to: host)
        entries[host].interval = interval ?? .nan
        entries[host].randomized = randomized
        if interval != nil { isTimed = true }
    }

    /// Holds the starts of `host` until `time` (a later hold extends it; an earlier one changes nothing). Returns
    /// true when the hold was extended.
    @discardableResult
    mutating func hold(_ host: Int, until time: Double) -> Bool {
        grow(to: host)
        isTimed = true
        guard time > entries[host].heldUntil else { return false }
        entries[host].heldUntil = time
        return true
    }

    /// Holds the starts of `host` until `time` exactly (an earlier time ends a longer hold).
    mutating func setHold(_ host: Int, until time: Double) {
        grow(to: host)
        isTimed = true
        entries[host].heldUntil = time
    }

    /// Until when `host` is held (nil: not held at `now`).
    func heldUntil(_ host: Int, now: Double) -> Double? {
        host < entries.count && entries[host].heldUntil > now ? entries[host].heldUntil : nil
    }

    /// The pending jobs of the hosts held at `now`.
    func pendingOfHeldHosts(now: Double) -> Int {
        guard isTimed else { return 0 }
        return waiting.reduce(0) { $0 + (entries[Int($1)].heldUntil > now ? Int(entries[Int($1)].pending) : 0) }
    }

    /// True when the books agree with themselves: `waiting` holds exactly the hosts with pending jobs, each where its
    /// entry says, and the per-lane totals are the sums of the hosts' (for tests).
    var isConsistent: Bool {
        let expected = Set(entries.indices.filter { entries[$0].pending > 0 })
        let listed = waiting.map(Int.init)
        return Set(listed) == expected && listed.count == expected.count
            && listed.enumerated().allSatisfy { entries[$1].waitingIndex == Int32($0) }
            && hostedPending.preflight == entries.reduce(0) { $0 + Int($1.pendingPreflights) }
            && hostedPending.main == entries.reduce(0) { $0 + Int($1.pendingMains) }
    }

    /// True when some host's pacing or hold lasts past `now`: its number must not go to another server yet.
    func hasTimesPast(_ now: Double) -> Bool { isTimed && entries.contains { $0.notBefore > now } }

    /// Forgets every host's times and intervals (the numbering starts over); counts stay.
    mutating func forgetTimes() {
        for host in entries.indices {
            entries[host].interval = .nan
            entries[host].pacedUntil = -.infinity
            entries[host].heldUntil = -.infinity
            entries[host].preflightsWait = false
        }
        isTimed = false
        waitingPreflightHosts = 0
    }

    /// Counts the active and pending jobs of each host again from `lanes` (the scheduler's per-id bits: bit 0 and
    /// bit 1 an active job each, bit 4 a pending preflight, bit 5 a pending main job).
    mutating func recount(_ lanes: [UInt8]) {
        for host in entries.indices {
            entries[host].active = 0
            entries[host].pendingPreflights = 0
            entries[host].pendingMains = 0
            entries[host].waitingIndex = -1
        }
        hostedPending = (0, 0)
        waiting.removeAll(keepingCapacity: true)
        for (id, bits) in lanes.enumerated() where bits & 0x33 != 0 {
            guard let host = host(of: id) else { continue }
            entries[host].active += (bits & 3).nonzeroBitCount
            if bits & 0x30 != 0 { countPending(id, lanes: (bits >> 4) & 3, by: 1) }
        }
        busyOwnLimits = entries.reduce(0) { $0 + ($1.active > 0 ? Int($1.ownLimit) : 0) }
    }
}

/// The servers (scheme, host and port) seen while a per-host limit is on, numbered in the order they were met:
/// the small integers ``HostBook`` counts active jobs by.
struct ServerNumbers {
    private var numbers: [String: Int] = [:]

    /// The number of `url`'s server; nil for a URL without a host (failed as invalid at its turn). `numbered` is
    /// called with the number and the server's key (`scheme://host:port`) when the server is new.
    mutating func number(of url: URL?, numbered: (Int, String) -> Void = { _, _ in }) -> Int? {
        guard let key = RequestRules.hostKey(url) else { return nil }
        if let number = numbers[key] { return number }
        let number = numbers.count
        numbers[key] = number
        numbered(number, key)
        return number
    }

    /// The number of the server `key` names, if it was met.
    func number(ofKey key: String) -> Int? { numbers[key] }

    /// The server numbered `number` (`scheme://host:port`), for the log.
    func key(of number: Int) -> String? { numbers.first { $0.value == number }?.key }

    /// Forgets every server: no slot holds a request, so the numbering starts over.
    mutating func removeAll() { numbers.removeAll(keepingCapacity: true) }

    /// How many servers are numbered (their numbers are 0 up to this).
    var count: Int { numbers.count }
}
