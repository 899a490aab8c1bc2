import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What the queue must do after an event of ``QueueStateMachine``, once its lock is released: plain
/// values, performed by the shell (``NetworkQueue``) in the order of the fields below.
struct QueueActions {
    /// A request's status to show (versioned: performing two of them out of order is harmless).
    struct Publication {
        let request: NetworkRequest
        let status: NetworkRequest.Status
    }

    /// A transfer to start: open its file (main lane with a file destination), start it on the
    /// transport, then report ``QueueStateMachine/fileOpened(slot:token:sink:)`` and
    /// ``QueueStateMachine/transferStarted(slot:token:handle:)``.
    struct Start {
        let slot: Int
        let token: UInt64
        let lane: Scheduler<Int>.Lane
        let urlRequest: URLRequest
        /// The right to write the file destination (main lane only); nil for the memory destination.
        let claim: DestinationClaim?
    }

    /// A file to move into place; report the result with ``QueueStateMachine/fileCommitted(slot:token:error:now:)``.
    struct Commit {
        let slot: Int
        let token: UInt64
        let sink: FileSink
    }

    var publications: [Publication] = []
    /// Transfers to stop. The queue has already reported them ended.
    var cancels: [any TransferHandle] = []
    /// Partial files of failed requests to delete before the call that failed them returns (idempotent;
    /// delivery does it again before the failure is reported, so that no report precedes the deletion).
    var discards: [FileSink] = []
    /// Destination claims to end (idempotent; delivery ends them too before the outcome is reported).
    var releases: [DestinationClaim] = []
    var commits: [Commit] = []
    var starts: [Start] = []
    /// The outbox went from empty to not empty: schedule a delivery pass.
    var deliver = false
    /// Arm the queue's one timer to fire at this time (seconds on the queue's clock).
    var armTimer: Double?
    /// Records dropped in bulk (cancelAll of a big queue), to free off the caller's thread.
    var garbage: [[RequestRecord?]] = []

    var isEmpty: Bool {
        publications.isEmpty && cancels.isEmpty && discards.isEmpty && releases.isEmpty && commits.isEmpty
            && starts.isEmpty && !deliver && armTimer == nil && garbage.isEmpty
    }
}

/// One item of the queue's ordered outbox, delivered by the shell on the delegate executor.
enum Delivery {
    case event(NetworkQueueEvent)
    case downloadProgress(NetworkRequest, TransferProgress)
    case uploadProgress(NetworkRequest, TransferProgress)
    /// A request ended: show its final status and remove its partial file (if it failed) and its claim
    /// before anything about its end is delivered. Posted even when nobody listens.
    case settle(NetworkRequest.Status, NetworkRequest, FileSink?, DestinationClaim?)
    /// Resume this many `run()` callers, oldest first, with this progress.
    case resumeRuns(Int, QueueProgress)
}

/// The ordered outbox: the machine's lock order is the delivery order.
struct Outbox {
    private(set) var items: [Delivery] = []
    private var isScheduled = false

    /// Appends an item; returns true when a delivery pass must be scheduled.
    mutating func post(_ item: Delivery) -> Bool {
        items.append(item)
        guard !isScheduled else { return false }
        isScheduled = true
        return true
    }

    /// Takes everything posted so far, for one delivery pass.
    mutating func take() -> [Delivery] {
        isScheduled = false
        defer { items = [] }
        return items
    }
}

extension QueueActions {
    /// Appends the actions of a later event of the same lock hold.
    mutating func append(_ other: consuming QueueActions) {
        publications += other.publications
        cancels += other.cancels
        discards += other.discards
        releases += other.releases
        commits += other.commits
        starts += other.starts
        deliver = deliver || other.deliver
        if let time = other.armTimer { armTimer = min(armTimer ?? time, time) }
        garbage += other.garbage
    }
}
