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

    /// Whether ``go()`` on a suspended queue first sends HEAD requests to learn the sizes.
    var showsAccurateProgress = false
    /// Whether a failure ends every other request with `.cancelledBecauseSiblingFailed`.
    var cancelsAllOnFailure = true
    /// True when a delegate or an `events()` subscriber may hear queue events; when false, events
    /// nobody can receive are not posted.
    var hasListeners = false
    /// True while a ``NetworkQueue/logHandler`` is set: decisions are posted as log records.
    var isLogging = false
    /// True while someone reads metrics (see ``NetworkQueue/collectsMetrics``): main transfers are started
    /// asking for them.
    var collectsMetrics = false
    /// The retry policy of requests that have none of their own.
    var retryPolicy = RetryPolicy()
    /// The queue's adapt hook, run before each attempt of every request (the machine never calls it).
    var adapter: (@Sendable (URLRequest) async throws -> URLRequest)?
    /// Draws the backoff's jitter.
    var jitter: JitterSource
    /// When requests waiting to retry may rejoin the pending ones, served by the queue's one timer.
    var retryDeadlines = DeadlineHeap<Int>()
    /// Requests in ``RequestState/waitingToRetry(_:)``.
    var waitingRetries = 0
    /// The wall-clock time (seconds since 1970) at 0 on the queue's clock, set by the shell: it turns
    /// `now` into a date for an HTTP-date `Retry-After` that comes without a `Date` header.
    var wallClockOrigin: Double = 0

    var scheduler: Scheduler
    /// The sources being read (``NetworkQueue/add(contentsOf:)-(Source)``).
    var sources = SourceBook()
    var ledger = ProgressLedger()
    var table = RequestTable()
    var outbox = Outbox()
    /// Idle deadlines of running transfers, served by the queue's one timer.
    var deadlines = DeadlineHeap<Int>()
    var throttle = DeliveryThrottle(interval: 1.0 / 60)
    /// When the coalesced progress is to be flushed, if a flush is due.
    var flushDue: Double?
    var progressDirty = false
    /// Slots with unreported bytes, each listed once.
    var dirtySlots: [Int] = []
    /// When the timer is armed to fire, or nil when it is not.
    var armedTimer: Double?
    /// True from the first add after idle until the drain's queueDidFinish is posted.
    var inDrain = false
    /// True once the drain was started: it began on a running queue, or ``go(now:)`` came since. Until then
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
    /// The number of each server seen while a per-host limit was on (see ``perHostLimit``).
    var hostNumbers: [String: Int] = [:]
    var nextToken: UInt64 = 0
    var nextSequence: UInt64 = 0
    /// The actions of the event being handled.
    var actions = QueueActions()

    /// The limit as set (see ``NetworkQueue/maxConcurrentRequestCount``): 0 means as many as `ceiling`. Set it
    /// with ``setLimit(_:now:)``, which gives the scheduler its effective limit.
    var limit: Int
    /// The most transfers in flight whatever the limit says (see ``NetworkQueue/concurrencyCeiling``).
    private(set) var ceiling: Int

    /// A machine with `limit` transfers at once (0: `ceiling`), never more than `ceiling`; `seed` seeds the
    /// backoff's jitter.
    init(limit: Int, ceiling: Int = 4_096, seed: UInt64 = 0x5EED) {
        self.limit = max(0, limit)
        self.ceiling = max(1, ceiling)
        scheduler = Scheduler(limit: Self.effectiveLimit(limit, ceiling: self.ceiling))
        scheduler.preflightWindow = Self.preflightWindow(limit: scheduler.limit)
        jitter = JitterSource(seed: seed)
    }

    // MARK: Queries

    var order: SchedulingOrder { scheduler.order }
    var isSuspended: Bool { scheduler.isSuspended }
    var requestCount: Int { table.count }
    /// The requests in the queue, in the order they were added.
    var requests: [NetworkRequest] { table.records.map(\.record).sorted { $0.sequence < $1.sequence }.map(\.request) }
    func progress(at now: Double) -> QueueProgress { ledger.snapshot(at: now) }
    /// `now` on the queue's clock as a wall-clock date.
    func wallClock(at now: Double) -> Date { Date(timeIntervalSince1970: wallClockOrigin + now) }

    // MARK: Steps shared by every event

    /// The first request (or source) after idle begins a new drain, from zero.
    mutating func beginDrainIfIdle() {
        guard !inDrain else { return }
        inDrain = true
        drainHasRun = !scheduler.isSuspended
        ledger.reset()
    }

    /// Hands over the actions gathered so far (moved, not copied).
    mutating func takeActions() -> QueueActions {
        var taken = QueueActions()
        swap(&taken, &actions)
        return taken
    }

    /// The last request of the drain ended: the final progress, queueDidFinish, then the `run()` callers.
    mutating func endDrain(_ now: Double) {
        inDrain = false
        // No slot holds a request: the numbering of servers starts over.
        hostNumbers.removeAll(keepingCapacity: true)
        let progress = ledger.snapshot(at: now)
        postEvent(.didUpdateProgress(progress))
        progressDirty = false
        postEvent(.queueDidFinish)
        if waitingRuns > 0 {
            post(.wakeRuns(waitingRuns, progress))
            waitingRuns = 0
        }
    }

    /// Appends an item to the outbox, asking for a delivery pass if none is pending.
    mutating func post(_ item: Delivery, urgent: Bool = true) {
        if outbox.post(item, urgent: urgent) { actions.deliver = true }
    }

    /// Posts a queue event unless nobody can receive it: no listener and, for a request's end, no
    /// completion handler. Progress always goes out: ``NetworkQueue/foundationProgress`` follows it.
    mutating func postEvent(_ event: NetworkQueueEvent) {
        if !hasListeners {
            switch event {
            case .didFinish(let request, _), .didFail(let request, _):
                guard request.completionHandler != nil else { return }
            case .didUpdateProgress: break
            case .didStart, .didReceiveHeaders, .didCollectMetrics, .willRetry, .didPause, .didResume, .sourceDidFail,
                .queueDidFinish:
                return
            }
        }
        post(.event(event))
    }

    /// Publishes the request's status now.
    mutating func publish(_ record: RequestRecord) {
        actions.list.append(.publish(record.request, record.status()))
    }
}
