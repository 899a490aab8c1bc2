import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Where one request is in its life inside the queue. Every transition is made by
/// ``QueueStateMachine``; an ended request leaves the table.
///
/// ```
/// pending ───────────────────────────────────────────────┐
///    │ go() with accurate progress                       ▼
///    └─► awaitingPreflight ─► [adaptingPreflight] ─► preflighting ─► awaitingMain
///                                                                         │
///   ┌─────────────────────────────────────────────────────────────────────┘
///   ▼
/// [adaptingMain]   ─► running ─► committing ─► (ended)
///                        │ a failed attempt the policy retries
///                        ├─► [deciding] ─► waitingToRetry ─► pending (its turn again)
/// ```
/// Any phase but `committing` and `following` may go to `paused` (pause), which goes back to `pending`, or
/// to `awaitingPreflight` when its HEAD had not finished (resume).
/// `pending` and `awaitingMain` both wait in the scheduler's main lane; `adapting…`, `running` and
/// `preflighting` hold a slot; `deciding` (the retry policy's closure runs), `waitingToRetry` and
/// `committing` (a file destination being moved into place) hold none. The adapting phases happen only when an
/// adapt hook is set.
enum RequestPhase: Equatable, Sendable {
    /// Waiting for a slot; no HEAD preflight planned.
    case pending
    /// Waiting for a slot in the preflight lane (and listed in the main lane too).
    case awaitingPreflight
    /// Its HEAD request is running.
    case preflighting
    /// Its HEAD request finished; waiting for a slot for the transfer itself.
    case awaitingMain
    /// Its adapt hooks run before its HEAD preflight (holding the slot).
    case adaptingPreflight
    /// Its adapt hooks run before its transfer (holding the slot).
    case adaptingMain
    /// Its transfer is running.
    case running
    /// An attempt failed; the retry policy's closure decides whether it is sent again.
    case deciding
    /// An attempt failed; it waits for its retry time (or an early retry), holding no slot.
    case waitingToRetry
    /// Its transfer succeeded and its file is being moved into place; its outcome is decided by that.
    case committing
    /// A duplicate coalesced onto an earlier request (its leader): it holds no slot and ends with the
    /// leader's result.
    case following
    /// Paused by the user: it holds no slot and is in no lane until it is resumed.
    case paused

    /// True while its adapt hooks run.
    var isAdapting: Bool { self == .adaptingPreflight || self == .adaptingMain }

    /// True while a transfer (preflight or main) runs for the request.
    var hasTransfer: Bool { self == .running || self == .preflighting }

    /// True while the request's `timeoutInterval` bounds what it waits for: a transfer, its adapt hooks or
    /// the retry policy's closure.
    var isTimed: Bool { hasTransfer || isAdapting || self == .deciding }

    /// True when the request is not merely waiting in the scheduler's lanes: a bulk end must end it one
    /// by one (committing requests excepted: they end on their own).
    var endsAlone: Bool {
        switch self {
        case .running, .preflighting, .adaptingPreflight, .adaptingMain, .deciding, .waitingToRetry, .following, .paused: true
        case .pending, .awaitingPreflight, .awaitingMain, .committing: false
        }
    }

    /// The public state this phase shows.
    var publicState: NetworkRequest.State {
        switch self {
        case .pending, .awaitingPreflight, .awaitingMain, .following: .pending
        case .preflighting, .adaptingPreflight: .preflighting
        case .running, .committing, .adaptingMain: .running
        case .deciding, .waitingToRetry: .waitingToRetry
        case .paused: .paused
        }
    }
}

/// Everything the queue knows about one request. It is the only home of the request's bytes: the
/// ledger keeps sums, and the request's public status is a copy published from actions.
///
/// A class owned by the machine's table (never shared outside the machine), so that reading or
/// updating one field never copies the others.
final class RequestRecord {
    let request: NetworkRequest
    /// Order of addition.
    let sequence: UInt64
    /// The right to write the file destination, held from `add` until the request ends (or handed to the
    /// request that replaces it under ``DuplicatePolicy/cancelEarlier``).
    @exclusivity(unchecked) var claim: DestinationClaim?
    /// The request's key in the machine's duplicate index, while a duplicate policy is on.
    @exclusivity(unchecked) var duplicateKey: String?
    /// The slots of the duplicates coalesced onto this request, oldest first.
    @exclusivity(unchecked) var followers: [Int] = []
    /// The slot of the request this one follows, in ``RequestPhase/following``.
    @exclusivity(unchecked) var leader = -1
    /// True when someone waits for the request's end through ``NetworkRequest/endObserver`` (a decoded
    /// value): its settlement is then delivered at once, even when nobody listens to events.
    let isObserved: Bool
    @exclusivity(unchecked) var phase = RequestPhase.pending
    /// Identifies the transfer now running (preflight or main); events of other transfers are dropped.
    @exclusivity(unchecked) var token: UInt64 = 0
    /// Where the running transfer's handle goes (filled in by the shell).
    @exclusivity(unchecked) var transfer: TransferCell?
    /// The file the current transfer writes to, for the file destination.
    @exclusivity(unchecked) var sink: FileSink?
    /// The bytes of the part file the current transfer continues after (0: not resumed).
    @exclusivity(unchecked) var resumeOffset: Int64 = 0
    /// True when the server refused the range: the next transfer is sent without one.
    @exclusivity(unchecked) var refusedRange = false
    /// What the current main transfer sent (adapted, or the request's own), to send again without a range.
    @exclusivity(unchecked) var sentRequest: URLRequest?
    @exclusivity(unchecked) var response: ResponseHead?
    /// The body size the final response announces in decoded bytes, when it announces one.
    @exclusivity(unchecked) var announcedLength: Int64?
    /// The body, for the memory destination.
    @exclusivity(unchecked) var body = Data()
    /// Byte counts and outcome, as the ledger sees them.
    @exclusivity(unchecked) var progress: ProgressLedger.Entry
    @exclusivity(unchecked) var lastActivity: Double = 0
    @exclusivity(unchecked) var downloadDirty = false
    @exclusivity(unchecked) var uploadDirty = false
    /// True while listed for the next progress flush.
    @exclusivity(unchecked) var isListedDirty = false
    /// How many attempts were begun (an attempt begins when it gets its slot, before any adapt hook).
    @exclusivity(unchecked) var attempts = 0
    /// True once didStart was posted: once per request, not per attempt.
    @exclusivity(unchecked) var hasStarted = false
    /// The delay the current attempt's response asked for (`Retry-After`), in seconds.
    @exclusivity(unchecked) var retryAfter: Double?
    /// The expected download size before the current attempt's response changed it (a HEAD's, or nil).
    @exclusivity(unchecked) var expectedBeforeAttempt: Int64?
    /// The failure of the attempt being decided on, while ``RequestPhase/deciding``.
    @exclusivity(unchecked) var failure: NetworkQueueError?
    /// True while waiting out a `Retry-After` (never cut short by an early retry).
    @exclusivity(unchecked) var serverAskedWait = false
    /// The destination file as it was when the request was added, for a request that may keep it
    /// (``NetworkRequest/ExistingFile/skipIfUnchanged``): its HEAD decides.
    @exclusivity(unchecked) var existingFile: ExistingFileRules.FileState?
    /// The HEAD's response, when it said the existing file is unchanged: the request ends with it.
    @exclusivity(unchecked) var unchangedHead: ResponseHead?
    /// True while a paused request's HEAD preflight is still to run: resuming queues it again.
    @exclusivity(unchecked) var resumesWithPreflight = false
    /// True when an attempt ended (a pause, a retry) keeping the part file for the next one: a request that
    /// ends before that attempt deletes it.
    @exclusivity(unchecked) var hasKeptPart = false
    /// When the request's first transfer started (queue clock), for the log's "finished in".
    @exclusivity(unchecked) var startedAt: Double?
    /// When the current main transfer started (queue clock): where its rate is measured from.
    @exclusivity(unchecked) var transferStartedAt: Double = 0
    /// When the current main transfer's final head arrived (queue clock).
    @exclusivity(unchecked) var headAt: Double?
    /// The metrics each attempt reported, oldest first (only while someone reads metrics).
    @exclusivity(unchecked) var metrics: [TransferMetrics] = []
    /// The download's rate over the last seconds, made on its first body bytes.
    @exclusivity(unchecked) var downloadMeter: RateWindow?
    /// Body bytes received over every attempt (never rebased: what the meter measures).
    @exclusivity(unchecked) var bytesMoved: Int64 = 0
    /// Bumped at every publication, so a late publication never overwrites a newer one.
    @exclusivity(unchecked) var statusVersion: UInt64 = 0

    init(request: NetworkRequest, sequence: UInt64, claim: DestinationClaim?, isObserved: Bool = false) {
        self.request = request
        self.isObserved = isObserved
        self.sequence = sequence
        self.claim = claim
        progress = ProgressLedger.Entry(expectedUpload: Int64(request.urlRequest.httpBody?.count ?? 0))
    }

    var downloadProgress: TransferProgress {
        let rate = downloadMeter?.rate(at: lastActivity)
        let remaining = announcedLength.map { max(0, $0 - progress.received) }
        return TransferProgress(
            completedBytes: progress.received, expectedBytes: announcedLength, throughput: rate,
            estimatedTimeRemaining: ThroughputMeter.timeRemaining(remaining, at: rate))
    }

    /// The metrics of the attempts so far, when any were collected.
    var requestMetrics: RequestMetrics? { metrics.isEmpty ? nil : RequestMetrics(attempts: metrics) }

    /// `count` body bytes arrived at `now`: the download's rate meter takes them.
    func meterDownload(_ count: Int64, at now: Double) {
        bytesMoved += count
        // Measured from the moment the transfer started, so that the first bytes already give a rate.
        if downloadMeter == nil { downloadMeter = RateWindow(startingAt: min(transferStartedAt, now)) }
        downloadMeter?.record(total: bytesMoved, at: now)
    }

    var uploadProgress: TransferProgress {
        TransferProgress(completedBytes: progress.sent, expectedBytes: progress.expectedUp)
    }

    /// The status to publish now, with a new version.
    func status(ending result: Result<NetworkResponse, NetworkQueueError>? = nil) -> NetworkRequest.Status {
        statusVersion += 1
        let state: NetworkRequest.State
        switch result {
        case nil: state = phase.publicState
        case .success?: state = .finished
        case .failure(let error)?: state = error.isCancellation ? .cancelled : .failed
        }
        return NetworkRequest.Status(
            version: result == nil ? statusVersion : .max, state: state, response: response, result: result, download: downloadProgress,
            upload: uploadProgress, attemptCount: attempts, metrics: requestMetrics)
    }
}

/// The queue's requests in slots: lookups by slot are array reads, freed slots are reused.
struct RequestTable {
    private var slots: [RequestRecord?] = []
    private var free: [Int] = []
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// Stores `record` and returns its slot.
    mutating func insert(_ record: RequestRecord) -> Int {
        count += 1
        if let slot = free.popLast() {
            slots[slot] = record
            return slot
        }
        slots.append(record)
        return slots.count - 1
    }

    /// The record in `slot`; the slot must be occupied.
    subscript(slot: Int) -> RequestRecord { slots[slot]! }

    /// The record in `slot`, if any.
    func record(at slot: Int) -> RequestRecord? { slot >= 0 && slot < slots.count ? slots[slot] : nil }


    /// True when `slot` holds a record.
    func isOccupied(_ slot: Int) -> Bool { record(at: slot) != nil }

    /// True when `slot` holds a record whose current transfer is `token`.
    func isCurrent(_ slot: Int, token: UInt64) -> Bool { record(at: slot)?.token == token }

    /// True when `token` is what `slot` waits for now under its timeout (see ``RequestPhase/isTimed``).
    func isTimed(_ slot: Int, token: UInt64) -> Bool {
        guard let record = record(at: slot), record.token == token else { return false }
        return record.phase.isTimed
    }

    /// Removes and returns the record in `slot`.
    mutating func remove(_ slot: Int) -> RequestRecord {
        let record = slots[slot].take()!
        count -= 1
        if count == 0 {
            slots.removeAll(keepingCapacity: true)
            free.removeAll(keepingCapacity: true)
        } else {
            free.append(slot)
        }
        return record
    }

    /// Removes every record, returning the storage so that the caller can free it elsewhere.
    mutating func removeAll() -> [RequestRecord?] {
        defer {
            slots = []
            free = []
            count = 0
        }
        return slots
    }

    /// The occupied slots with their records, in slot order.
    var records: some Sequence<(slot: Int, record: RequestRecord)> {
        slots.enumerated().lazy.compactMap { slot, record in record.map { (slot, $0) } }
    }
}
