/// The scheduling core of a ``NetworkQueue``: which job starts next, and when.
///
/// A pure value-type state machine: events go in as mutating calls, and the only action it produces is
/// the next job to start, pulled with ``nextStart()`` until it returns nil. It performs no I/O and holds
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
    /// (``aheadBit``) while the id is ahead, bit 3 (``outstandingBit``) while its preflight job is pending or active.
    private var activeLanes: [UInt8] = []
    private(set) var activeCount = 0
    /// Extra connections lent to running jobs (a split file's: see ``lendExtra(host:)``); they fill slots as jobs do.
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

    private mutating func activate(_ job: Job) {
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
    }

    /// The host of `id`, if it has one.
    func host(of id: ID) -> Int? { hosts.host(of: id) }

    /// Assigns the host of `id` (nil: none). The id must not be active: its host is counted while it is.
    mutating func setHost(_ id: ID, _ host: Int?) {
        precondition(activeLanes.count <= id || activeLanes[id] & 3 == 0, "the host of an active job cannot change")
        hosts.assign(host, to: id)
    }

    /// Assigns the host of every id in `hosts` at once, active ones included, and counts the active jobs
    /// of each host again (a per-host limit set while jobs run).
    mutating func reassignHosts(_ hosts: [(id: ID, host: Int?)]) {
        for (id, host) in hosts { self.hosts.assign(host, to: id) }
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
            return true
        case .main: return main.append(job.id, priority: priority)
        }
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
        return removed ? .wasPending : .notFound
    }

    /// Removes every pending job (preflight first, each lane highest priority first, then oldest first),
    /// leaving active ones alone.
    mutating func removeAllPending() -> [Job] {
        let preflights = preflight.removeAll()
        let mains = main.removeAll()
        for id in preflights { settlePreflight(id) }
        for id in mains { leaveWindow(id) }
        return preflights.map { Job(id: $0, lane: .preflight) } + mains.map { Job(id: $0, lane: .main) }
    }

    // MARK: Actions

    /// Moves the next startable job to the active set and returns it, or returns nil when nothing may
    /// start now (suspended, at the limit, or nothing eligible pending). Call until it returns nil.
    mutating func nextStart() -> Job? {
        guard !isSuspended, limit == 0 || activeCount + extraCount < limit else { return nil }
        if preflightWindow == 0 || preflightsAhead < preflightWindow, let id = pop(from: .preflight) {
            let job = Job(id: id, lane: .preflight)
            activate(job)
            return job
        }
        if preflightWindow == 0 {
            guard activePreflightCount == 0, preflight.isEmpty else { return nil }
        } else if mainWaitsForWindow {
            // The first window: its sizes are known before any main job starts.
            if activePreflightCount > 0 || (!preflight.isEmpty && preflightsAhead < preflightWindow) { return nil }
            mainWaitsForWindow = false
        }
        guard let id = pop(from: .main) else { return nil }
        let job = Job(id: id, lane: .main)
        activate(job)
        return job
    }

    private mutating func pop(from lane: Lane) -> ID? {
        if perHostLimit > 0 || (lane == .main && outstandingPreflights > 0) { return popEligible(from: lane) }
        return switch lane {
        case .preflight: preflight.pop(order)
        case .main: main.pop(order)
        }
    }

    /// The next job of `lane` in order whose host is under its limit, skipping (and keeping) the others.
    private mutating func popEligible(from lane: Lane) -> ID? {
        // Copies for the closure, which cannot read `self` while a lane is being mutated.
        let (hosts, perHostLimit, flags) = (hosts, perHostLimit, activeLanes)
        let checksPreflight = lane == .main && outstandingPreflights > 0
        let isEligible = { (id: ID) in
            // A main job waits for its own preflight.
            if checksPreflight, id < flags.count, flags[id] & Self.outstandingBit != 0 { return false }
            return hosts.allows(id, limit: perHostLimit)
        }
        return switch lane {
        case .preflight: preflight.pop(order, where: isEligible)
        case .main: main.pop(order, where: isEligible)
        }
    }
}
