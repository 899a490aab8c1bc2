import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One thing the queue must do once its lock is released, as a plain value.
enum QueueAction {
    /// Show this status of a request (versioned: performing two of them out of order is harmless).
    case publish(NetworkRequest, NetworkRequest.PublishedStatus)
    /// Show these requests, which never moved a byte, as ended with `error` (a bulk cancel). Indirect, as the
    /// other rare payloads: an action is moved several times, and the common ones are small.
    indirect case publishEnd([NetworkRequest], NetworkQueueError)
    /// Start a transfer: open its file (file destination) and report
    /// a ``TransferNotice/Kind/file(_:)`` notice (opened), start it on the transport, and attach its handle
    /// to the start's cell.
    case start(Start)
    /// Stop a transfer (whose handle may not be attached yet). The queue has already reported its request
    /// ended.
    case cancel(TransferCell)
    /// Delete a failed request's partial file before the call that failed it returns (idempotent;
    /// delivery does it again before the failure is reported, so that no report precedes the deletion).
    case discard(FileSink)
    /// Close a partial file between attempts: kept for the next attempt to continue when a validator
    /// describes it, else deleted.
    case keep(FileSink)
    /// Delete the part file (and its validator) that an ended attempt kept for the next one, before the
    /// claim is released: the request ended without another attempt.
    case discardPart(DestinationClaim)
    /// End a request's claim on its destination (idempotent; delivery does it again).
    case release(DestinationClaim)
    /// Move a finished transfer's file into place, then report
    /// a ``TransferNotice/Kind/file(_:)`` notice (committed).
    case commit(slot: Int, token: UInt64, sink: FileSink)
    /// Records dropped in bulk (cancelAll of a big queue), to free off the caller's thread.
    case free([RequestRecord?])
    /// Run the adapt hooks (the queue's, then the request's) on `urlRequest`, then report
    /// ``QueueStateMachine/Command/adapted(slot:token:_:)``.
    indirect case adapt(Adapt)
    /// Ask the retry policy's closure about a failed attempt, then report
    /// ``QueueStateMachine/Command/retryDecided(slot:token:_:)``.
    indirect case decide(Decide)
    /// Let the reader of this source, waiting for room, read up to `count` requests.
    case readSource(Int, count: Int)
    /// Stop the reader of this source: a waiting reader is told to stop, a reading one is cancelled.
    case stopSource(Int)
    /// Nothing: what is left in a list's place once the shell has moved an action out of it.
    case moved
    /// Do a split file's work that followed an event other than its shell's own (the end game's look).
    indirect case connections(ConnectionBatch)

    /// Adapt hooks to run before a transfer.
    struct Adapt {
        let slot: Int
        let token: UInt64
        let urlRequest: URLRequest
        let hooks: [@Sendable (URLRequest) async throws -> URLRequest]
    }

    /// A retry decision to ask for.
    struct Decide {
        let slot: Int
        let token: UInt64
        let request: NetworkRequest
        let error: NetworkQueueError
        let attempts: Int
        let decide: @Sendable (NetworkRequest, NetworkQueueError, Int) async -> RetryPolicy.Decision
    }

    /// A transfer to start.
    struct Start {
        let slot: Int
        let token: UInt64
        /// What the transfer sends.
        let outgoing: OutgoingRequest
        let cell: TransferCell
        /// What becomes of the response body.
        let body: BodyPolicy
        /// Whether the transport is asked for the transfer's metrics.
        let collectsMetrics: Bool
        /// The longest the transfer may wait for its connection (``TimeLimits/connect``); nil: the transport's own.
        let connectTimeout: Double?
    }

    /// What a started transfer's body is for: what its pipeline checks and where it writes.
    enum BodyPolicy {
        /// A HEAD preflight: no body, nothing checked, uncapped.
        case preflight
        /// A main transfer of `request`: its statuses, checksum and digests are checked; with a `file` claim
        /// the body goes to that file's part, continuing it when `continuesPart` and a validator allow. `revalidation`:
        /// the existing file's validator, sent when no part is continued (``NetworkRequest/ExistingFile/revalidate``).
        /// `shares`: the file may be fetched over several connections or locations (its split machine decides how
        /// many at the first head). `carrying`: for such a file whose download has nothing to decide before its first
        /// head (one location, no location fetched alone, no log), the rule its shell reads that head by: the shell starts the
        /// first connection as a plain transfer and begins the download only at a head the rule may share (a head it
        /// does not share is carried as a plain transfer's, and no download is ever begun); nil: the download begins
        /// once the file is open, and its machine starts the first connection.
        case checked(
            NetworkRequest, file: DestinationClaim?, continuesPart: Bool,
            revalidation: ExistingFileRules.Conditional?, shares: Bool, carrying: SplitRules.CarryRule?)
    }
}

/// Work on a split file's connections and file, for its shell to do.
struct ConnectionBatch {
    let shell: any ConnectionShell
    let work: [ConnectionWork]
}

/// What the queue must do after one event of ``QueueStateMachine``: the actions in the order they
/// happened, then a delivery pass and the timer. The shell performs them in that order.
struct QueueActions {
    var list: [QueueAction] = []
    /// The outbox went from empty to due: schedule a delivery pass (after everything in `list`) this many
    /// seconds from now (0: at once; see ``Outbox/passInterval``).
    var deliverAfter: Double?
    /// True when a delivery pass is to be scheduled.
    var deliver: Bool { deliverAfter != nil }
    /// Arm the queue's one timer to fire at this time (seconds on the queue's clock).
    var armTimer: Double?
    /// True when the event counted body bytes: the benchmarks' lock counter notes the first such event.
    var countedBytes = false

    /// Hands over the actions gathered so far (moved, not copied), asking for a delivery pass after
    /// `deliverAfter` seconds when it is given.
    mutating func take(deliverAfter: Double?) -> QueueActions {
        var taken = QueueActions()
        swap(&taken, &self)
        taken.deliverAfter = deliverAfter
        return taken
    }

    /// Shows `record`'s status as it is now.
    mutating func publish(_ record: RequestRecord) {
        append(.publish(record.request, .init(record.status())))
    }

    /// Appends `action`. A list handed over by ``take(deliverAfter:)`` starts with no room: the first action makes
    /// room for four, so that the two to four actions of most events cost one allocation, not one per doubling.
    mutating func append(_ action: consuming QueueAction) {
        if list.capacity == 0 { list.reserveCapacity(4) }
        list.append(action)
    }

    /// Appends the actions of a later event of the same lock hold.
    mutating func append(_ other: consuming QueueActions) {
        if list.isEmpty { list = other.list } else { list += other.list }
        if let delay = other.deliverAfter { deliverAfter = min(deliverAfter ?? delay, delay) }
        if let time = other.armTimer { armTimer = min(armTimer ?? time, time) }
        countedBytes = countedBytes || other.countedBytes
    }
}

/// One item of the queue's ordered outbox, delivered by the shell on the delegate executor.
enum Delivery {
    case event(NetworkQueueEvent)
    case downloadProgress(NetworkRequest, TransferProgress)
    case uploadProgress(NetworkRequest, TransferProgress)
    /// A request ended: show its final status and remove its partial file (if it failed) and its claim
    /// before anything about its end is delivered. Posted even when nobody listens.
    /// `observed`: a decoded value waits for it (``NetworkRequest/takeEndObserver()`` is called only then).
    case settle(NetworkRequest.PublishedStatus, NetworkRequest, FileSink?, DestinationClaim?, observed: Bool)
    /// Requests that never moved a byte ended with this error (a bulk cancel): as `settle` for each.
    /// `observed`: at least one of them has a decoded value waiting.
    case settleAll([NetworkRequest], NetworkQueueError, [DestinationClaim], observed: Bool)
    /// Wake this many `run()` callers, oldest first, with this progress (indirect: rare, and big).
    indirect case wakeRuns(Int, QueueProgress)
    /// Hand a record to the log handler.
    case log(NetworkQueueLogRecord)
}
