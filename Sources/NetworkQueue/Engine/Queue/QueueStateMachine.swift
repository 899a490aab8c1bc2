import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The engine of a ``NetworkQueue``: every request's life, the scheduling, the timeouts and the progress,
/// as one pure state machine.
///
/// Each input is an event method that takes the time (`now`, seconds on the queue's monotonic clock) and
/// returns the ``QueueActions`` to perform once the queue's lock is released: transfers to start or
/// cancel, statuses to publish, files to move or delete, a delivery pass, the timer to arm. It reads no
/// clock, takes no lock, does no I/O and calls no closure of the user; delegate events, handler calls
/// and `run()` wake-ups go into an ordered ``Outbox`` that the shell delivers.
///
/// It coordinates what requests share — the scheduler's lanes, the ledger, the deadlines, the outbox, the
/// sources and the duplicates — and leaves each request's life to its ``RequestMachine``, doing what its events
/// return. Starts are computed in one pass at the end of each event, so no event method re-enters another.
struct QueueStateMachine {
    typealias Job = Scheduler.Job

    /// Whether ``Command/go`` on a suspended queue first sends HEAD requests to learn the sizes.
    var showsAccurateProgress = false
    /// Which requests get those HEADs: each server's first ones decide for the rest (see ``PreflightPolicy``).
    var preflights = PreflightSampler()
    /// True for a drain whose every GET got its HEAD at ``Command/go``: a batch within the first window, no source open
    /// (its whole total is known before its first GET, as the window promises).
    var asksEveryPreflight = false
    /// True once a source opened in this drain: its requests' HEADs are planned per server, however few there are
    /// (a short list may be read whole, and its source closed, before ``Command/go``).
    var drainReadsSource = false
    /// Whether a failure ends every other request with `.cancelledBecauseSiblingFailed`.
    var cancelsAllOnFailure = true
    /// True while someone reads metrics (see ``NetworkQueue/collectsMetrics``): main transfers are started
    /// asking for them.
    var collectsMetrics = false
    /// The retry policy of requests that have none of their own.
    var retryPolicy: RetryPolicy {
        get { shared.retryPolicy }
        set { shared.retryPolicy = newValue }
    }
    /// The deadline and lowest speed of requests that have none of their own.
    var timeLimits = TimeLimits()
    /// What a mirror's HEAD leaves behind of the request's headers: the transport's redirect policy.
    var redirectPolicy = RedirectPolicy.default
    /// The queue's receive cap (``NetworkQueue/maximumBytesPerSecond``), which a lowest speed never holds against
    /// a transfer.
    var rateCap: Int?
    /// Every body byte the queue's main transfers received, never reset: lowest-speed windows read the queue's
    /// rate from it.
    var receivedTotal: Int64 = 0
    /// The queue's adapt hook, run before each attempt of every request (the machine never calls it).
    var adapter: (@Sendable (URLRequest) async throws -> URLRequest)?
    /// What every request's machine draws on: the next token, the backoff's jitter, the queue's retry policy.
    var shared: RequestMachine.Shared
    /// Requests in ``RequestState/waitingToRetry(_:)``.
    var waitingRetries = 0

    var scheduler: Scheduler
    /// The sources being read (``NetworkQueue/add(contentsOf:)-(Source)``).
    var sources = SourceBook()
    var ledger = ProgressLedger()
    var table = RequestTable()
    var outbox = Outbox()
    /// The queue's one timer: idle deadlines and retry times.
    var timer = QueueTimer()
    /// When the coalesced progress is published.
    var flush = ProgressFlush()
    /// True from the first add after idle until the drain's queueDidFinish is posted.
    var inDrain = false
    /// True once the drain was started: it began on a running queue, or ``Command/go`` came since. Until then
    /// it does not end, and what its sources did is held (see ``SourceBook/heldFailures``), so that a
    /// listener that subscribes after adding, before `go()`, hears every event of the drain.
    var drainHasRun = false
    /// `run()` callers waiting for the drain to end.
    var waitingRuns = 0
    /// Records whose file is being moved into place (they cannot be cancelled any more).
    var committingCount = 0
    /// What an added duplicate of a request in the queue does.
    var duplicatePolicy = DuplicatePolicy.allow
    /// The slot of the request each duplicate key leads to (while the policy is not `.allow`).
    var leaders: [String: Int] = [:]
    /// The servers seen while requests were numbered by server (see ``numbersHosts``).
    var servers = ServerNumbers()
    /// True while every request in the table is numbered by its server (see ``ServerNews/settingsChanged``).
    var numbersHosts = false
    /// The pacing of servers without one of their own (see ``NetworkQueue/hostPacing``).
    var hostPacing = HostPacing.unpaced
    /// The pacing of servers that have their own, by `scheme://host:port`.
    var pacingByServer: [String: HostPacing] = [:]
    /// Whether servers that ask for it hold the queue's new requests to them (see ``NetworkQueue/hostBackoff``).
    var hostBackoff = HostBackoff()
    /// True once a server was held since the numbering started.
    var hasHeldHost = false
    /// Each server's level when concurrency adapts (see ``NetworkQueue/adaptiveConcurrency``); nil: it does not.
    var adaptive: AdaptiveLevels?
    /// When a server is judged down (see ``NetworkQueue/deadHosts``).
    var deadHosts = DeadHosts()
    /// Each server's failed connects and whether it is down (see ``HostHealth``).
    var hostHealth = HostHealth()
    /// True once a connect failed since the numbering started: servers are numbered from then on.
    var hasFailedConnect = false
    /// The slot whose download event the request's machine is deciding: the books' answers it asks for are this slot's
    /// (``DownloadBooks``).
    var downloadSlot = -1
    var nextSequence: UInt64 = 0
    /// The actions of the event being handled.
    var actions = QueueActions()

    /// The limit as set (see ``NetworkQueue/maxConcurrentRequestCount``): 0 means as many as `ceiling`. Set it
    /// with ``Command/setLimit(_:)``, which gives the scheduler its effective limit.
    var limit: Int
    /// The most transfers in flight whatever the limit says (see ``NetworkQueue/concurrencyCeiling``).
    private(set) var ceiling: Int

    /// A machine with `limit` transfers at once (0: `ceiling`), never more than `ceiling`; `seed` seeds the
    /// backoff's jitter and, through a stream of its own, the pacing's (`--random-wait`): a queue is given a random
    /// seed, so no two queues draw the same waits.
    init(limit: Int, ceiling: Int = 4_096, seed: UInt64 = 0x5EED) {
        self.limit = max(0, limit)
        self.ceiling = max(1, ceiling)
        scheduler = Scheduler(limit: Scheduler.effectiveLimit(limit, ceiling: self.ceiling))
        scheduler.preflightWindow = Scheduler.preflightWindow(limit: scheduler.limit)
        shared = RequestMachine.Shared(jitter: JitterSource(seed: seed))
        scheduler.jitter = JitterSource(seed: Self.pacingSeed(from: seed))
    }

    /// The pacing jitter's seed drawn from the queue's `seed` (splitmix64's mix of it): apart from the backoff's
    /// stream, and different for each seed.
    private static func pacingSeed(from seed: UInt64) -> UInt64 {
        var mixed = seed &+ 0x9E37_79B9_7F4A_7C15
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    // MARK: Queries

    var isSuspended: Bool { scheduler.isSuspended }
    var requestCount: Int { table.count }
    /// The requests in the queue, in the order they were added.
    var requests: [NetworkRequest] { table.records.map(\.record).sorted { $0.sequence < $1.sequence }.map(\.request) }

    // MARK: Steps shared by every event

    /// The first request (or source) after idle begins a new drain, from zero.
    mutating func beginDrainIfIdle() {
        guard !inDrain else { return }
        inDrain = true
        drainHasRun = !scheduler.isSuspended
        drainReadsSource = false
        ledger.reset()
    }
}
