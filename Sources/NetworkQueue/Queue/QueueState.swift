import Dispatch
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Everything a ``NetworkQueue`` knows, mutated only under its lock.
///
/// Each mutating entry point records what must happen outside the lock in an ``Effects`` value: transfers
/// to start, transfers to cancel, and whether the outbox needs delivering. Delegate events are appended
/// to `outbox` in the order they happen, so the lock's order is the delivery order.
struct QueueState {
    typealias ID = ObjectIdentifier
    typealias Job = Scheduler<ID>.Job

    /// One request's life in the queue. A class, so that reading or updating one field never copies the
    /// others (a struct in the dictionary was copied whole on every `records[id]?.field` read).
    final class Record {
        let request: NetworkRequest
        let sequence: UInt64
        var preflight = PreflightPhase.none
        /// Identifies the transfer now running for this request; events of older transfers are dropped.
        var token: UInt64 = 0
        var handle: (any TransferHandle)?
        var isRunning = false
        var response: HTTPURLResponse?
        /// The body, for the memory destination.
        var body = Data()
        /// Body bytes received by the current transfer, whatever the destination.
        var received: Int64 = 0
        /// Request body bytes sent by the current transfer, and the body's size when known.
        var sent: Int64 = 0
        var expectedToSend: Int64?
        /// The file the current transfer writes to, for the file destination.
        var sink: FileSink?
        /// The right to write the file destination, held from `add` until the request ends.
        var claim: DestinationClaim?
        var lastActivity: UInt64 = 0
        var downloadDirty = false
        var uploadDirty = false
        var hasEnded = false

        init(request: NetworkRequest, sequence: UInt64) {
            self.request = request
            self.sequence = sequence
        }

        /// Publishes the transfer counters to the request's observable progress; returns them.
        func publishProgress() -> (upload: TransferProgress, download: TransferProgress) {
            request.status.withLock { status in
                status.download.completedBytes = received
                status.upload.completedBytes = sent
                if let expectedToSend { status.upload.expectedBytes = expectedToSend }
                return (status.upload, status.download)
            }
        }
    }

    enum PreflightPhase {
        case none
        case pending
        case active
        case done
    }

    /// A transfer to start once the lock is released.
    struct Start {
        let id: ID
        let token: UInt64
        let lane: Scheduler<ID>.Lane
        let urlRequest: URLRequest
        /// The right to write the file destination (main lane only); nil for the memory destination.
        let claim: DestinationClaim?
    }

    struct Effects {
        var starts: [Start] = []
        var cancels: [any TransferHandle] = []
        var deliver = false
        /// Seconds from now at which to flush coalesced progress, if a flush must be scheduled.
        var progressFlush: Double?
        /// The deadline timer must be re-armed to ``QueueState/armedDeadline``.
        var rearmDeadlineTimer = false
        /// Records to free off the caller's thread (a bulk cancel can end 100,000 at once).
        var garbage: [[ID: Record]] = []
    }

    /// One item of the ordered outbox.
    enum Delivery {
        case event(NetworkQueueEvent)
        case downloadProgress(NetworkRequest, TransferProgress)
        case uploadProgress(NetworkRequest, TransferProgress)
        case resume([CheckedContinuation<QueueProgress, Never>], QueueProgress)
    }

    var scheduler: Scheduler<ID>
    var ledger = ProgressLedger<ID>()
    var records: [ID: Record] = [:]
    var showsAccurateProgress = false
    var cancelsAllOnFailure = true
    weak var delegate: (any NetworkQueueDelegate)?
    /// True from the first add after idle until the drain's queueDidFinish is queued.
    var inDrain = false
    var nextToken: UInt64 = 0
    var nextSequence: UInt64 = 0
    var outbox: [Delivery] = []
    var deliveryScheduled = false
    var waiters: [CheckedContinuation<QueueProgress, Never>] = []
    var subscribers: [Int: AsyncStream<NetworkQueueEvent>.Continuation] = [:]
    var nextSubscriber = 0
    var progressDirty = false
    var progressThrottle = DeliveryThrottle(interval: 1.0 / 60)
    var dirtyRecords: [ID] = []
    /// Idle deadlines of running transfers, served by one timer per queue.
    var deadlines = DeadlineHeap<ID>()
    /// When the deadline timer is armed to fire (seconds on `now()`'s clock), or nil when disarmed.
    var armedDeadline: Double?
    /// True while ``startAvailable(_:)`` is pulling jobs.
    var isStartingJobs = false

    init(limit: Int) { scheduler = Scheduler(limit: limit) }

    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    // MARK: Queue operations

    mutating func add(_ request: NetworkRequest, _ fx: inout Effects) throws(NetworkQueueError) {
        let alreadyAdded = request.status.withLock { status in
            defer { status.isAdded = true }
            return status.isAdded
        }
        guard !alreadyAdded else { throw .invalidRequest(.alreadyAdded) }
        var claim: DestinationClaim?
        if case .file(let file) = request.destination, request.invalidReason == nil {
            claim = DestinationClaim.claim(file)
            guard claim != nil else {
                // Rejected, not added: the caller may add it again once the other request has ended.
                request.status.withLock { $0.isAdded = false }
                throw .invalidRequest(.destinationInUse(file))
            }
        }
        if !inDrain {
            inDrain = true
            ledger.reset()
        }
        let id = ID(request)
        nextSequence += 1
        let record = Record(request: request, sequence: nextSequence)
        record.claim = claim
        records[id] = record
        ledger.add(id, expectedUpload: Int64(request.urlRequest.httpBody?.count ?? 0))
        scheduler.enqueue(Job(id: id, lane: .main))
        markProgressDirty(&fx)
        startAvailable(&fx)
    }

    mutating func go(_ fx: inout Effects) {
        // Only a go() that starts a suspended queue preflights: requests added to a running queue get no HEAD.
        if showsAccurateProgress, scheduler.isSuspended {
            let candidates = records.values.filter {
                $0.preflight == .none && !$0.isRunning && RequestRules.wantsPreflight($0.request.urlRequest)
            }
            for record in candidates.sorted(by: { $0.sequence < $1.sequence }) {
                record.preflight = .pending
                scheduler.enqueue(Job(id: ID(record.request), lane: .preflight))
            }
        }
        scheduler.resume()
        startAvailable(&fx)
    }

    mutating func setLimit(_ limit: Int, _ fx: inout Effects) {
        scheduler.limit = limit
        startAvailable(&fx)
    }

    mutating func cancel(_ id: ID, _ fx: inout Effects) {
        guard records[id] != nil else { return }
        end(id, .failure(.cancelled), &fx)
        finishStep(&fx)
    }

    /// Ends every request with `error`: running ones first, in the order they were added, then pending ones
    /// in the order they were added. Pending jobs leave the scheduler in bulk, so this stays linear.
    mutating func cancelAll(_ error: NetworkQueueError, _ fx: inout Effects) {
        let running = scheduler.active.map(\.id).sorted { records[$0]!.sequence < records[$1]!.sequence }
        for id in running { end(id, .failure(error), &fx) }
        // What is left is pending: out of the scheduler, the ledger and the records in bulk, then reported
        // one by one. The old records are freed off the caller's thread.
        let pending = scheduler.removeAllPending()
        ledger.cancelUnfinished()
        let ended = records
        records = [:]
        for job in pending {
            // A request with a pending HEAD is listed twice (HEAD and main job): report it once.
            guard let record = ended[job.id], !record.hasEnded else { continue }
            end(record, .failure(error), inBulk: true, &fx)
        }
        // Every record holds a scheduler job until it ends, so nothing should be left; if one ever is, it
        // still gets its one terminal event rather than vanishing.
        for record in ended.values.filter({ !$0.hasEnded }).sorted(by: { $0.sequence < $1.sequence }) {
            end(record, .failure(error), inBulk: true, &fx)
        }
        fx.garbage.append(ended)
        finishStep(&fx)
    }

    /// After any request ended: fire queueDidFinish if the drain is over, then fill free slots.
    mutating func finishStep(_ fx: inout Effects) {
        markProgressDirty(&fx)
        if inDrain, records.isEmpty {
            inDrain = false
            let progress = ledger.snapshot(at: Self.now())
            postEvent(.progress(progress), &fx)
            progressDirty = false
            postEvent(.queueDidFinish, &fx)
            if !waiters.isEmpty {
                post(.resume(waiters, progress), &fx)
                waiters = []
            }
        }
        startAvailable(&fx)
    }

    /// Pulls every job the scheduler allows to start now.
    ///
    /// Not reentrant: failing an invalid request reaches `finishStep`, whose call here returns at once and
    /// leaves the pulling to this loop, so a run of invalid requests neither recurses nor starts a valid
    /// request that the failure is about to cancel.
    mutating func startAvailable(_ fx: inout Effects) {
        guard !isStartingJobs else { return }
        isStartingJobs = true
        defer { isStartingJobs = false }
        let now = Self.now()
        while let job = scheduler.nextStart() {
            guard let record = records[job.id] else {
                preconditionFailure("scheduler started \(job) with no record")
            }
            var urlRequest = record.request.urlRequest
            if let problem = record.request.invalidReason {
                scheduler.finish(job)
                fail(job.id, .invalidRequest(problem), &fx)
                continue
            }
            nextToken += 1
            record.token = nextToken
            record.lastActivity = DispatchTime.now().uptimeNanoseconds
            switch job.lane {
            case .preflight:
                record.preflight = .active
                urlRequest.httpMethod = "HEAD"
                urlRequest.httpBody = nil
                record.request.status.withLock { $0.state = .preflighting }
            case .main:
                record.isRunning = true
                record.request.status.withLock {
                    $0.state = .running
                    $0.attemptCount += 1
                }
                postEvent(.didStart(record.request), &fx)
            }
            if case .seconds(let timeout)? = RequestRules.idleTimeout(urlRequest.timeoutInterval) {
                scheduleDeadline(.init(deadline: now + timeout, id: job.id, token: nextToken), &fx)
            }
            fx.starts.append(
                Start(
                    id: job.id, token: nextToken, lane: job.lane, urlRequest: urlRequest,
                    claim: job.lane == .main ? record.claim : nil))
        }
    }
}
