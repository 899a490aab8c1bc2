/// The scheduling core of a ``NetworkQueue``: which job starts next, and when.
///
/// A pure value-type state machine: events go in as mutating calls, and the only action it produces is
/// the next job to start, pulled with ``nextStart(now:)`` until it returns nil, and when to ask again
/// (``nextTimedStart(now:)``). It performs no I/O and holds
/// no locks, clocks or callbacks; the queue owns it under its lock and performs the starts afterwards.
///
/// Two lanes of pending jobs share one concurrency limit. The preflight lane (HEAD requests) has strict
/// priority, and an id's main job never starts while its own preflight job is pending or active.
///
/// Without a ``preflightWindow`` (0), the main lane is held back while any preflight job is pending or active,
/// so that every size is known before the first main transfer starts. With a window of `W`, at most `W` ids
/// are *ahead*: their preflight started and their main job has not; after ``go()`` the main lane waits only for
/// the first window (every preflight, when there are fewer than `W`), and from then on preflights roll ahead
/// of the main jobs, `W` at most.
///
/// Each id has a priority (``setPriority(_:_:)``, default 0): a lane starts its highest priority first,
/// and ``order`` decides within one priority.
///
/// An optional per-host limit caps the active jobs of each host (a small integer the caller assigns to
/// each id with ``setHost(_:_:)``). A job held back by its host's limit does not hold back the jobs
/// behind it: the next *eligible* job in the lane's order starts.
///
/// Hosts may also be paced and held (see ``pacingInterval`` and ``hold(host:until:)``): a host's next start waits
/// for its interval after the last one, and for the end of a hold its server asked for. A job held back by its
/// host's time waits in its lane, holding no slot, while the jobs of other hosts start. The start pass looks at
/// the hosts first (``HostBook/mayStart(in:count:limit:now:)``), so a lane whose jobs all wait for their hosts is
/// not scanned; one that has an eligible job is scanned up to it.
struct Scheduler {
    /// Jobs are identified by small non-negative integers (the queue's request slots): the scheduler
    /// keeps per-id state in arrays indexed by them, with no hashing.
    typealias ID = Int

    enum Lane: Hashable, CaseIterable {
        case preflight
        case main
    }

    struct Job: Hashable {
        var id: ID
        var lane: Lane
    }

    /// The outcome of removing a job from the scheduler.
    enum Removal: Equatable {
        /// The job was waiting; it will never start.
        case wasPending
        /// The job held a slot, which is now free; the caller must stop its transfer.
        case wasActive
        /// The scheduler did not know the job.
        case notFound
    }

    private(set) var preflight = PriorityLane()
    private(set) var main = PriorityLane()
    /// `priorityOf[id]` is the id's priority (0 when never set).
    private var priorityOf: [Int] = []
    /// `activeLanes[id]` has bit 0 set when the id's preflight job is active, bit 1 for its main job, bit 2
    /// (``aheadBit``) while the id is ahead, bit 3 (``outstandingBit``) while its preflight job is pending or active,
    /// bit 4 while its preflight job is pending, bit 5 while its main job is (their host's pending counts).
    private var activeLanes: [UInt8] = []
    private(set) var activeCount = 0
    /// Extra connections lent to running jobs (a split file's: see ``lendExtra(host:now:)``); they fill slots as jobs do.
    var extraCount = 0
    private(set) var activePreflightCount = 0
    /// Ids whose preflight started and whose main job has not (see ``preflightWindow``).
    private(set) var preflightsAhead = 0
    /// Ids whose preflight job is pending or active: their main job is not eligible.
    private var outstandingPreflights = 0
    /// True from ``go()`` until the main lane first may start (windowed preflights only).
    private var mainWaitsForWindow = false
    private static let aheadBit: UInt8 = 4
    private static let outstandingBit: UInt8 = 8

    /// The most ids ahead at once: preflights started whose main job has not; 0 (the default) means no
    /// window: every preflight before any main job.
    var preflightWindow = 0 {
        didSet { if preflightWindow < 0 { preflightWindow = 0 } }
    }
    /// The host of each id and the active jobs of each host, for ``perHostLimit``.
    var hosts = HostBook()

    /// The most active jobs of one host; 0 (the default) means only ``limit`` applies. Negative values
    /// are stored as 0.
    var perHostLimit = 0 {
        didSet { if perHostLimit < 0 { perHostLimit = 0 } }
    }
    /// The least time between two starts (either lane, extra connections too) to one host, in seconds, for hosts
    /// without an interval of their own (``setPacing(_:randomized:ofHost:)``); 0 (the default) means none. Values that are not
    /// finite and positive are stored as 0.
    var pacingInterval = 0.0 {
        didSet { if !(pacingInterval.isFinite && pacingInterval > 0) { pacingInterval = 0 } }
    }
    /// When true, each interval is drawn between 0.5 and 1.5 times its length (wget's `--random-wait`), from
    /// ``jitter``. Default false.
    var randomizesPacing = false
    /// The source of the random intervals (seeded: a test knows every draw; the queue's machine seeds it from
    /// the queue's own random seed).
    var jitter = JitterSource(seed: 0x9ACE)

    /// The most jobs active at once; 0 means unlimited. Negative values are stored as 0.
    var limit: Int {
        didSet { if limit < 0 { limit = 0 } }
    }
    /// Which pending job of a lane starts next.
    var order: SchedulingOrder
    /// While true nothing starts; active jobs are not touched.
    private(set) var isSuspended = true

    init(limit: Int, order: SchedulingOrder = .fifo) {
        self.limit = max(0, limit)
        self.order = order
    }

    var pendingCount: Int { preflight.count + main.count }
    /// Ids waiting for their main job to start (an id waiting for its preflight is listed here too).
    var mainPendingCount: Int { main.count }
    /// True when nothing is pending or active.
    var isIdle: Bool { activeCount == 0 && preflight.isEmpty && main.isEmpty }

    func isActive(_ job: Job) -> Bool { has(job.id, Self.bit(job.lane)) }

    private static let pendingPreflightBit: UInt8 = 16
    private static let pendingMainBit: UInt8 = 32

    /// True when starts must look at the time: a host paced (queue-wide or its own) or held.
    private var checksTime: Bool { pacingInterval > 0 || hosts.isTimed }
    /// True when starts must look at the hosts: a per-host limit, or their time.
    private var checksHosts: Bool { perHostLimit > 0 || checksTime || hosts.hasOwnLimits }

    private func has(_ id: ID, _ bit: UInt8) -> Bool { id >= 0 && id < activeLanes.count && activeLanes[id] & bit != 0 }

    private mutating func set(_ id: ID, _ bit: UInt8) {
        if id >= activeLanes.count {
            activeLanes.append(contentsOf: repeatElement(0, count: id + 1 - activeLanes.count))
        }
        activeLanes[id] |= bit
    }

    /// Clears `bit` of `id`; true when it was set.
    private mutating func clear(_ id: ID, _ bit: UInt8) -> Bool {
        guard has(id, bit) else { return false }
        activeLanes[id] &= ~bit
        return true
    }

    /// The id's preflight job left the lanes (done or removed): its main job is eligible.
    private mutating func settlePreflight(_ id: ID) { if clear(id, Self.outstandingBit) { outstandingPreflights -= 1 } }

    /// The id is no longer ahead: its main job started, or it left.
    private mutating func leaveWindow(_ id: ID) { if clear(id, Self.aheadBit) { preflightsAhead -= 1 } }

    /// The active jobs (a scan: for tests and diagnostics).
    var active: Set<Job> {
        var jobs: Set<Job> = []
        for (id, lanes) in activeLanes.enumerated() where lanes & 3 != 0 {
            for lane in Lane.allCases where lanes & Self.bit(lane) != 0 { jobs.insert(Job(id: id, lane: lane)) }
        }
        return jobs
    }

    private static func bit(_ lane: Lane) -> UInt8 { lane == .preflight ? 1 : 2 }

    private mutating func activate(_ job: Job, now: Double) {
        set(job.id, Self.bit(job.lane))
        activeCount += 1
        if job.lane == .preflight {
            activePreflightCount += 1
            if !has(job.id, Self.aheadBit) {
                set(job.id, Self.aheadBit)
                preflightsAhead += 1
            }
        } else {
            leaveWindow(job.id)
        }
        hosts.count(job.id, by: 1)
        if let host = hosts.host(of: job.id) { paced(host, now: now) }
    }

    /// A start to `host` at `now`: its next one waits for its interval (drawn at random when randomized).
    mutating func paced(_ host: Int, now: Double) {
        guard checksTime else { return }
        let own = hosts.ownPacing(of: host)
        let interval = own?.interval ?? pacingInterval
        guard interval > 0 else { return }
        let factor = own?.randomized ?? randomizesPacing ? 0.5 + Double(jitter.next() >> 11) * 0x1p-53 : 1
        hosts.pace(host, until: now + interval * factor)
    }

    /// Paces `host` with its own interval (nil: ``pacingInterval`` and ``randomizesPacing``; 0: none), in seconds.
    mutating func setPacing(_ interval: Double?, randomized: Bool = false, ofHost host: Int) {
        hosts.setPacing(interval.map { $0.isFinite && $0 > 0 ? $0 : 0 }, randomized: randomized, ofHost: host)
    }

    /// Holds (`wait`) or frees the preflight jobs of `host` while its sampled HEADs run (see ``PreflightSampler``).
    mutating func setPreflightsWait(_ wait: Bool, ofHost host: Int) { hosts.setPreflightsWait(wait, ofHost: host) }

    /// Holds every start to `host` until `time` (a server's word: see ``HostBook/hold(_:until:)``). Returns true when
    /// the hold was extended.
    @discardableResult
    mutating func hold(host: Int, until time: Double) -> Bool { hosts.hold(host, until: time) }

    /// Gives `host` a limit of its own (see ``HostBook/setLimit(_:ofHost:)``).
    mutating func setLimit(_ limit: Int, ofHost host: Int) { hosts.setLimit(limit, ofHost: host) }

    /// Holds the starts of `host` until `time` exactly, ending or shortening a longer hold (a down server's probe
    /// answered, or failed and its waiting requests end).
    mutating func setHold(host: Int, until time: Double) { hosts.setHold(host, until: time) }

    /// The earliest time after `now` at which a job waiting only for its host's pacing or hold may start (nil:
    /// none waits so, or nothing could start anyway: suspended, or every slot taken).
    func nextTimedStart(now: Double) -> Double? {
        guard checksTime, !isSuspended, limit == 0 || activeCount + extraCount < limit,
            !preflight.isEmpty || !main.isEmpty
        else { return nil }
        return hosts.nextTimedStart(limit: perHostLimit, now: now)
    }

    /// `id` joined (`by` 1) or left (`by` -1) `lane`'s pending jobs. Kept only once an id has a host (until then no
    /// count is read: ``reassignHosts(_:)`` counts the lanes when hosts are first assigned).
    private mutating func notePending(_ id: ID, _ lane: Lane, by change: Int32) {
        guard hosts.hasHosts else { return }
        let bit = lane == .preflight ? Self.pendingPreflightBit : Self.pendingMainBit
        if change > 0 { set(id, bit) } else if !clear(id, bit) { return }
        hosts.countPending(id, lanes: lane == .preflight ? 1 : 2, by: change)
    }

    /// The host of `id`, if it has one.
    func host(of id: ID) -> Int? { hosts.host(of: id) }

    /// Assigns the host of `id` (nil: none). The id must not be active: its host is counted while it is.
    mutating func setHost(_ id: ID, _ host: Int?) {
        precondition(activeLanes.count <= id || activeLanes[id] & 3 == 0, "the host of an active job cannot change")
        hosts.assign(host, to: id, pending: id < activeLanes.count ? (activeLanes[id] >> 4) & 3 : 0)
    }

    /// Assigns the host of every id in `hosts` at once, active ones included, and counts the active jobs
    /// of each host again (a per-host limit set while jobs run).
    mutating func reassignHosts(_ hosts: [(id: ID, host: Int?)]) {
        for (id, host) in hosts { self.hosts.assign(host, to: id) }
        // The pending bits, read from the lanes: they were not kept while no id had a host.
        if let last = hosts.map(\.id).max(), last >= activeLanes.count {
            activeLanes.append(contentsOf: repeatElement(0, count: last + 1 - activeLanes.count))
        }
        for id in activeLanes.indices {
            activeLanes[id] &= ~(Self.pendingPreflightBit | Self.pendingMainBit)
            let priority = priority(of: id)
            if preflight.contains(id, priority: priority) { activeLanes[id] |= Self.pendingPreflightBit }
            if main.contains(id, priority: priority) { activeLanes[id] |= Self.pendingMainBit }
        }
        self.hosts.recount(activeLanes)
    }

    /// The priority of `id` (0 unless set).
    func priority(of id: ID) -> Int { id >= 0 && id < priorityOf.count ? priorityOf[id] : 0 }

    /// Sets the priority of `id`. A pending job of it moves behind the others of its new priority, as if
    /// just added; an active one is not affected. Ids are reused: set it again for each new request.
    mutating func setPriority(_ id: ID, _ priority: Int) {
        let old = self.priority(of: id)
        guard old != priority else { return }
        if id >= priorityOf.count {
            priorityOf.append(contentsOf: repeatElement(0, count: id + 1 - priorityOf.count))
        }
        priorityOf[id] = priority
        if preflight.remove(id, priority: old) { preflight.append(id, priority: priority) }
        if main.remove(id, priority: old) { main.append(id, priority: priority) }
    }

    /// The active jobs of `host`.
    func activeCount(ofHost host: Int) -> Int { hosts.activeCount(ofHost: host) }

    // MARK: Events

    /// Adds a pending job. Returns false if the same job is already pending or active.
    @discardableResult
    mutating func enqueue(_ job: Job) -> Bool {
        guard !isActive(job) else { return false }
        let priority = priority(of: job.id)
        switch job.lane {
        case .preflight:
            guard preflight.append(job.id, priority: priority) else { return false }
            set(job.id, Self.outstandingBit)
            outstandingPreflights += 1
        case .main: guard main.append(job.id, priority: priority) else { return false }
        }
        notePending(job.id, job.lane, by: 1)
        return true
    }

    /// Allows jobs to start. Starting a suspended scheduler opens a new first window (see ``preflightWindow``).
    mutating func go() {
        if isSuspended { mainWaitsForWindow = true }
        isSuspended = false
    }

    /// Stops new starts; active jobs continue.
    mutating func suspend() { isSuspended = true }

    /// Marks an active job finished and frees its slot. Returns false if the job was not active.
    @discardableResult
    mutating func finish(_ job: Job) -> Bool {
        guard isActive(job) else { return false }
        activeLanes[job.id] &= ~Self.bit(job.lane)
        activeCount -= 1
        if job.lane == .preflight {
            activePreflightCount -= 1
            settlePreflight(job.id)
        }
        hosts.count(job.id, by: -1)
        return true
    }

    /// Returns a job just given by ``nextStart(now:)`` to its lane without starting it (its host is held since, so
    /// that it waits): its slot is freed, and it is pending again, behind the others of its priority.
    mutating func putBack(_ job: Job) {
        guard isActive(job) else { return }
        activeLanes[job.id] &= ~Self.bit(job.lane)
        activeCount -= 1
        if job.lane == .preflight { activePreflightCount -= 1 }
        hosts.count(job.id, by: -1)
        let priority = priority(of: job.id)
        switch job.lane {
        case .preflight: _ = preflight.append(job.id, priority: priority)
        case .main: _ = main.append(job.id, priority: priority)
        }
        notePending(job.id, job.lane, by: 1)
    }

    /// Removes a job whether pending or active.
    @discardableResult
    mutating func remove(_ job: Job) -> Removal {
        // Whatever it was, the id leaves the window: a removed job never starts the main job it was ahead of.
        leaveWindow(job.id)
        if finish(job) { return .wasActive }
        let removed: Bool
        switch job.lane {
        case .preflight:
            removed = preflight.remove(job.id, priority: priority(of: job.id))
            if removed { settlePreflight(job.id) }
        case .main: removed = main.remove(job.id, priority: priority(of: job.id))
        }
        guard removed else { return .notFound }
        notePending(job.id, job.lane, by: -1)
        return .wasPending
    }

    /// Removes every pending job (preflight first, each lane highest priority first, then oldest first),
    /// leaving active ones alone.
    mutating func removeAllPending() -> [Job] {
        let preflights = preflight.removeAll()
        let mains = main.removeAll()
        for id in preflights {
            settlePreflight(id)
            notePending(id, .preflight, by: -1)
        }
        for id in mains {
            leaveWindow(id)
            notePending(id, .main, by: -1)
        }
        return preflights.map { Job(id: $0, lane: .preflight) } + mains.map { Job(id: $0, lane: .main) }
    }

    // MARK: Actions

    /// Moves the next startable job to the active set and returns it, or returns nil when nothing may
    /// start at `now` (suspended, at the limit, or nothing eligible pending). Call until it returns nil.
    mutating func nextStart(now: Double) -> Job? {
        guard !isSuspended, limit == 0 || activeCount + extraCount < limit else { return nil }
        if preflightWindow == 0 || preflightsAhead < preflightWindow, let id = pop(from: .preflight, now: now) {
            let job = Job(id: id, lane: .preflight)
            activate(job, now: now)
            return job
        }
        if preflightWindow == 0 {
            guard activePreflightCount == 0, preflight.isEmpty else { return nil }
        } else if mainWaitsForWindow {
            // The first window: its sizes are known before any main job starts. A HEAD that waits for its host's time
            // (paced or held) or its host's sampled HEADs holds no other server's transfer back: the window ends
            // when none is running and none of those pending may start now.
            if activePreflightCount > 0
                || (!preflight.isEmpty && preflightsAhead < preflightWindow && preflightMayStart(now: now))
            {
                return nil
            }
            mainWaitsForWindow = false
        }
        guard let id = pop(from: .main, now: now) else { return nil }
        let job = Job(id: id, lane: .main)
        activate(job, now: now)
        return job
    }

    /// True when a pending preflight job may start at `now` as far as its host goes (its time, its limit, its
    /// sampled HEADs).
    private func preflightMayStart(now: Double) -> Bool {
        guard checksHosts || hosts.waitingPreflightHosts > 0 else { return true }
        return hostsMayStart(in: .preflight, now: now)
    }

    /// True when some pending job of `lane` may start at `now` as far as its host goes. Without host checks only the
    /// preflight lane's sampling gate applies: no limit, and no time holds a job.
    private func hostsMayStart(in lane: Lane, now: Double) -> Bool {
        let checksHosts = checksHosts
        return hosts.mayStart(
            in: lane, count: lane == .preflight ? preflight.count : main.count, limit: checksHosts ? perHostLimit : 0,
            now: checksHosts ? now : .infinity)
    }

    private mutating func pop(from lane: Lane, now: Double) -> ID? {
        let id: ID?
        if checksHosts || (lane == .main && outstandingPreflights > 0)
            || (lane == .preflight && hosts.waitingPreflightHosts > 0)
        {
            id = popEligible(from: lane, now: now)
        } else {
            id =
                switch lane {
                case .preflight: preflight.pop(order)
                case .main: main.pop(order)
                }
        }
        if let id { notePending(id, lane, by: -1) }
        return id
    }

    /// The next job of `lane` in order whose host allows it at `now` (room under its limit, its pacing and hold
    /// over), skipping (and keeping) the others.
    private mutating func popEligible(from lane: Lane, now: Double) -> ID? {
        let checksHosts = checksHosts
        // A host's HEADs may wait for its sampled ones (its main jobs never do).
        let gates = lane == .preflight && hosts.waitingPreflightHosts > 0
        if checksHosts || gates, !hostsMayStart(in: lane, now: now) { return nil }
        // Copies for the closure, which cannot read `self` while a lane is being mutated.
        let (hosts, perHostLimit, flags) = (hosts, perHostLimit, activeLanes)
        let checksPreflight = lane == .main && outstandingPreflights > 0
        let isEligible = { (id: ID) in
            // A main job waits for its own preflight.
            if checksPreflight, id < flags.count, flags[id] & Self.outstandingBit != 0 { return false }
            if gates, hosts.preflightsWait(id) { return false }
            return !checksHosts || hosts.allows(id, limit: perHostLimit, now: now)
        }
        return switch lane {
        case .preflight: preflight.pop(order, where: isEligible)
        case .main: main.pop(order, where: isEligible)
        }
    }
}
