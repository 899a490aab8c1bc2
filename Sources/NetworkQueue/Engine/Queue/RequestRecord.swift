import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Everything the queue knows about one request. It is the only home of the request's bytes: the
/// ledger keeps sums, and the request's public status is a copy published from actions.
///
/// A class owned by the machine's table (never shared outside the machine), so that reading or
/// updating one field never copies the others.
///
/// Every request of a batch holds one while it waits, so it is kept small: what only some requests use
/// (duplicates, an existing file, metrics) lives in `Extras`, made on first use, and the rate meter is
/// made with the first body bytes.
final class RequestRecord {
    let request: NetworkRequest
    /// Order of addition.
    let sequence: UInt64
    /// True when someone waits for the request's end through its request's `endObserver` (a decoded
    /// value): its settlement is then delivered at once, even when nobody listens to events.
    let isObserved: Bool
    /// The request's life: its phase and what lives for the whole request (see ``RequestMachine``).
    // Unchecked: read and written on every transfer event, only by the coordinator, which is only ever used under
    // the queue's lock (no overlapping access can exist); the dynamic check would cost on each of them.
    @exclusivity(unchecked) var machine = RequestMachine()
    /// Byte counts and outcome, as the ledger sees them.
    // Unchecked: as `state`, updated on every body event.
    @exclusivity(unchecked) var progress: ProgressLedger.Entry
    /// The right to write the file destination, held from `add` until the request ends (or handed to the
    /// request that replaces it under ``DuplicatePolicy/cancelEarlier``).
    var claim: DestinationClaim?
    /// What only some requests have; nil until one of them is set.
    private var extras: Extras?

    /// The fields few requests use.
    private final class Extras {
        var duplicateKey: String?
        var followers: [Int] = []
        var existingFile: ExistingFileRules.FileState?
        var rejection: NetworkQueueError.InvalidRequestReason?
        var locationsDeadAtHead = 0
        var acceptResets = 0
        // Unchecked: as `state`, touched by every event of a request that collects metrics.
        @exclusivity(unchecked) var metrics: [TransferMetrics] = []
    }

    /// The extras, made on first use.
    private var madeExtras: Extras {
        if let extras { return extras }
        let made = Extras()
        extras = made
        return made
    }

    /// The request's key in the machine's duplicate index, while a duplicate policy is on.
    var duplicateKey: String? {
        get { extras?.duplicateKey }
        set { if newValue != nil || extras != nil { madeExtras.duplicateKey = newValue } }
    }
    /// The slots of the duplicates coalesced onto this request, oldest first.
    var followers: [Int] {
        get { extras?.followers ?? [] }
        set { if !newValue.isEmpty || extras != nil { madeExtras.followers = newValue } }
    }
    /// True when an attempt ended (a pause, a retry) keeping its part for the next one, which takes it over when
    /// its file opens: a request that ends before deletes it.
    var hasKeptPart = false
    /// True when the download handler has an update the next flush (or the end) must post.
    // Unchecked: touched on every event, only under the queue's lock (as `machine`).
    @exclusivity(unchecked) var downloadDirty = false
    /// True when the upload handler has an update the next flush (or the end) must post.
    // Unchecked: touched on every event, only under the queue's lock (as `machine`).
    @exclusivity(unchecked) var uploadDirty = false
    /// True while listed for the next progress flush.
    // Unchecked: touched on every event, only under the queue's lock (as `machine`).
    @exclusivity(unchecked) var isListedDirty = false
    /// The destination file as it was when the request was added, for a request that may keep it
    /// (``NetworkRequest/ExistingFile/skipIfUnchanged``): its HEAD decides.
    var existingFile: ExistingFileRules.FileState? {
        get { extras?.existingFile }
        set { if newValue != nil || extras != nil { madeExtras.existingFile = newValue } }
    }
    /// Why the request, read from a source before the drain ran, cannot run (its file is another request's):
    /// it fails when it would start.
    /// How many of the file's locations (its URL, then its mirrors, in order) failed its HEAD preflight: its first
    /// attempt leaves them for the location that answered (``FailoverRules``).
    var locationsDeadAtHead: Int {
        get { extras?.locationsDeadAtHead ?? 0 }
        set { if newValue != 0 || extras != nil { madeExtras.locationsDeadAtHead = newValue } }
    }
    /// How many of the request's attempts were sent again without being spent, their connections reset before a
    /// response while the server answered others (``QueueStateMachine/ServerNews/reset(_:slot:)``).
    var acceptResets: Int {
        get { extras?.acceptResets ?? 0 }
        set { if newValue != 0 || extras != nil { madeExtras.acceptResets = newValue } }
    }
    var rejection: NetworkQueueError.InvalidRequestReason? {
        get { extras?.rejection }
        set { if newValue != nil || extras != nil { madeExtras.rejection = newValue } }
    }
    /// The metrics each attempt reported, oldest first (only while someone reads metrics).
    var metrics: [TransferMetrics] {
        get { extras?.metrics ?? [] }
        set { if !newValue.isEmpty || extras != nil { madeExtras.metrics = newValue } }
    }
    /// The download's rate over the last seconds, made on its first body bytes.
    // Unchecked: touched on every event, only under the queue's lock (as `machine`).
    @exclusivity(unchecked) var downloadMeter: RateMeter?
    /// Body bytes received over every attempt (never rebased: what the meter measures).
    // Unchecked: touched on every event, only under the queue's lock (as `machine`).
    @exclusivity(unchecked) var bytesMoved: Int64 = 0
    /// Bumped at every publication, so a late publication never overwrites a newer one.
    // Unchecked: touched on every event, only under the queue's lock (as `machine`).
    @exclusivity(unchecked) var statusVersion: UInt64 = 0

    init(request: NetworkRequest, sequence: UInt64, claim: DestinationClaim?, isObserved: Bool = false) {
        self.request = request
        self.isObserved = isObserved
        self.sequence = sequence
        self.claim = claim
        progress = ProgressLedger.Entry(expectedUpload: request.uploadSize)
    }

    /// The download's progress, for a body announced to be `announced` bytes (nil: unknown).
    private func downloadProgress(announced: Int64?) -> TransferProgress {
        let rate = downloadMeter?.window.rate(at: machine.lastActivity)
        let remaining = announced.map { max(0, $0 - progress.received) }
        return TransferProgress(
            completedBytes: progress.received, expectedBytes: announced, throughput: rate,
            estimatedTimeRemaining: ThroughputMeter.timeRemaining(remaining, at: rate))
    }

    /// Keeps what a transport reported (or the queue measured) of the current attempt, numbered with it, and
    /// returns it numbered, to be posted.
    func collect(_ reported: TransferMetrics) -> TransferMetrics {
        var metrics = reported
        metrics.attempt = machine.attempts
        self.metrics.append(metrics)
        return metrics
    }

    /// The metrics of the attempts so far, when any were collected.
    var requestMetrics: RequestMetrics? { metrics.isEmpty ? nil : RequestMetrics(attempts: metrics) }

    var uploadProgress: TransferProgress {
        TransferProgress(completedBytes: progress.sent, expectedBytes: progress.expectedUp)
    }

    /// The status to publish now, with a new version. An ending shows the head it ended with: a success's
    /// own, or `endingHead` (a follower shows its leader's), or the phase's.
    func status(ending result: Result<NetworkResponse, NetworkQueueError>? = nil, endingHead: ResponseHead? = nil)
        -> NetworkRequest.Status
    {
        statusVersion += 1
        let shown = machine.phase.shown
        let state: NetworkRequest.State
        var head = endingHead ?? shown.head
        switch result {
        case nil: state = shown.state
        case .success(let response)?:
            state = .finished
            head = response.head
        case .failure(let error)?: state = error.isCancellation ? .cancelled : .failed
        }
        return NetworkRequest.Status(
            version: result == nil ? statusVersion : .max, state: state, head: head, result: result,
            download: downloadProgress(announced: shown.announcedLength),
            upload: uploadProgress, attemptCount: machine.attempts, metrics: requestMetrics)
    }
}

/// A request's download rate window, made with its first body bytes (a pending request holds none).
final class RateMeter {
    // Unchecked: updated on every body event, only under the queue's lock (as the record's `state`).
    @exclusivity(unchecked) var window: RateWindow
    init(_ window: RateWindow) { self.window = window }
}

/// The queue's requests by slot.
typealias RequestTable = SlotTable<RequestRecord>

extension SlotTable<RequestRecord> {
    /// True when `slot` holds a request whose current transfer (or hooks, decision, retry wait) is `token`.
    func isCurrent(_ slot: Int, token: UInt64) -> Bool { record(at: slot)?.machine.phase.token == token }
}
