import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a request's transfers report: their notices (``TransferNotice``: events, heads and bodies, endings, files),
/// and a split file's connections (through the request's machine, which holds the file's). The doors are
/// ``notice(_:now:)`` and ``notices(_:now:)``: one notice, or an engine pass's in a row (one path,
/// `noticeApplied(_:slot:token:now:)`, for all of them); a file opened before its transfer starts is a
/// ``TransferNotice/Kind/file(_:)`` notice, and a split file's events are ``TransferNotice/Kind/split(_:)`` notices.
/// Each is handed to the request's machine through ``apply(_:_:transferEnded:now:)``. Events of a transfer that is no longer current (ended,
/// cancelled, timed out) are dropped: the queue's own state is the truth.
extension QueueStateMachine {
    /// Applies one notice, and ends the event.
    mutating func notice(_ notice: TransferNotice, now: Double) -> QueueActions {
        let (slot, token) = (notice.slot, notice.token)
        switch notice.kind {
        case .event(let event): return transferEvent(event, slot: slot, token: token, now: now)
        case .head(let event, let reading):
            return transferEvent(event, reading: reading, slot: slot, token: token, now: now)
        case .body(let count): return bodyReceived(count, slot: slot, token: token, now: now)
        case .file(let event): return fileEvent(event, slot: slot, token: token, now: now)
        case .checksumMismatch(let expected, let actual):
            return transferEnded(
                .checksumMismatch(expected: expected, actual: actual), slot: slot, token: token, now: now)
        case .reached(let id, let through, let segment):
            let event = RequestMachine.SplitEvent.reached(connection: id, through: through, segment: segment)
            downloadEvent(event, slot: slot, token: token, now: now)
            return finishEvent(now)
        case .split(let event): return splitEvent(event, slot: slot, token: token, now: now)
        }
    }

    /// Applies the notices of one engine pass in order, as ``notice(_:now:)`` would one by one, but ends the event once:
    /// what may start starts, the timer is armed and the delivery announced after the last of them. Each notice is
    /// moved out of the list (its place left holding nothing), so that its payload is handed on without a copy.
    mutating func notices(_ notices: inout [TransferNotice], now: Double) -> QueueActions {
        var taken = QueueActions()
        notices.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            for index in 0..<buffer.count {
                let notice = (base + index).move()
                (base + index).initialize(to: TransferNotice(slot: 0, token: 0, kind: .body(0)))
                if let ended = noticeApplied(notice.kind, slot: notice.slot, token: notice.token, now: now) {
                    // Rare, and each ends its event its own way: the actions so far go with it.
                    taken.append(ended)
                }
            }
        }
        taken.append(finishEvent(now))
        return taken
    }

    /// Applies one notice of a transfer without ending the event: the one path by which a transfer's events reach the
    /// engine, a plain transfer's pipeline's and a split file's alike. A file's event and a checksum's end their event
    /// their own way: their actions are returned (nil for every other notice).
    private mutating func noticeApplied(_ kind: TransferNotice.Kind, slot: Int, token: UInt64, now: Double)
        -> QueueActions?
    {
        switch kind {
        case .event(let event): applyTransferEvent(event, reading: nil, slot: slot, token: token, now: now)
        case .head(let event, let reading):
            applyTransferEvent(event, reading: reading, slot: slot, token: token, now: now)
        case .body(let count): applyBody(count, slot: slot, token: token, now: now)
        case .file(let event): return fileEvent(event, slot: slot, token: token, now: now)
        case .checksumMismatch(let expected, let actual):
            return transferEnded(
                .checksumMismatch(expected: expected, actual: actual), slot: slot, token: token, now: now)
        case .reached(let id, let through, let segment):
            let event = RequestMachine.SplitEvent.reached(connection: id, through: through, segment: segment)
            downloadEvent(event, slot: slot, token: token, now: now)
        case .split(let event): downloadEvent(event, slot: slot, token: token, now: now)
        }
        return nil
    }

    // MARK: A transfer's events

    /// Applies one transport event; a final head comes with its pipeline's `reading`.
    private mutating func transferEvent(
        _ event: TransferEvent, reading: HeadReading? = nil, slot: Int, token: UInt64, now: Double
    ) -> QueueActions {
        guard table.isCurrent(slot, token: token) else { return QueueActions() }
        transferEventApplied(event, reading: reading, slot: slot, now: now)
        return finishEvent(now)
    }

    /// ``transferEvent(_:reading:slot:token:now:)`` without ending the event (one of an engine pass's notices).
    private mutating func applyTransferEvent(
        _ event: TransferEvent, reading: HeadReading?, slot: Int, token: UInt64, now: Double
    ) {
        guard table.isCurrent(slot, token: token) else { return }
        transferEventApplied(event, reading: reading, slot: slot, now: now)
    }

    /// ``transferEvent(_:reading:slot:token:now:)`` of a current transfer, the event not finished.
    private mutating func transferEventApplied(_ event: TransferEvent, reading: HeadReading?, slot: Int, now: Double) {
        let record = table[slot]
        let preflight: Bool
        switch record.machine.phase {
        case .preflighting: preflight = true
        case .running: preflight = false
        case .committing: return  // the transport reported after completing: nothing can change
        case .pending, .awaitingPreflight, .awaitingMain, .adaptingPreflight, .adaptingMain, .deciding,
            .waitingToRetry, .following, .paused:
            // A current token is held only by the phases above and these; none of these runs a transfer.
            preconditionFailure("a transfer event for a request in phase \(record.machine.phase.name)")
        }
        // Every event of the transfer is activity: its idle timeout counts from here.
        record.machine.touched(at: now)
        switch event {
        case .head(let head):
            hear(.answered(head, slot: slot), now: now)
            guard !preflight else {
                preflightHead(head, slot: slot, now: now)
                break
            }
            // Without a pipeline's reading (tests drive the machine alone) no part is continued.
            let acceptable = record.request.acceptableStatusCodes
            headRead(reading ?? HeadReading(head, continuedFrom: 0, acceptableStatusCodes: acceptable), slot, now)
        case .data(let data):
            if !preflight { receive(data.count, keeping: data, slot: slot, now: now) }
        case .sent(let sent, let expected):
            guard !preflight else { break }
            ledger.send(&record.progress, totalSent: sent, expected: expected, at: now)
            record.machine.touched(at: now, sent: sent)
            flush.list(slot, isListed: &record.isListedDirty)
        case .redirect(let redirect):
            if !preflight { outbox.log(redirect, of: record.request, now: now) }
        // Reported unasked (a transport that always measures): nobody reads them.
        case .metrics(let metrics):
            guard !preflight, collectsMetrics else { break }
            outbox.post(.didCollectMetrics(record.request, metrics: record.collect(metrics)))
        case .completed(let error):
            transferEndedApplied(error.map { .failed($0) } ?? .succeeded, slot: slot, now: now)
        }
    }

    /// `count` bytes of a file-bound body arrived, written and hashed already (lent by the transport: see
    /// ``LendingTransport``). Dropped when the transfer is no longer current, as any transfer event.
    private mutating func bodyReceived(_ count: Int, slot: Int, token: UInt64, now: Double) -> QueueActions {
        guard table.isCurrent(slot, token: token), case .running = table[slot].machine.phase else {
            return QueueActions()
        }
        receive(count, keeping: nil, slot: slot, now: now)
        return finishEvent(now)
    }

    /// ``bodyReceived(_:slot:token:now:)`` without ending the event (one of an engine pass's notices).
    private mutating func applyBody(_ count: Int, slot: Int, token: UInt64, now: Double) {
        guard table.isCurrent(slot, token: token), case .running = table[slot].machine.phase else { return }
        receive(count, keeping: nil, slot: slot, now: now)
    }

    /// `count` body bytes of a main transfer arrived: `data`, which a body in memory keeps.
    private mutating func receive(_ count: Int, keeping data: Data?, slot: Int, now: Double) {
        let record = table[slot]
        let request = record.request
        countBytes(count, of: record, now: now)
        let isMemory = if case .memory = request.destination { true } else { false }
        let received = record.progress.received
        apply(slot, .bodyPiece(keeping: isMemory ? data : nil, received: received), now: now)
        // Past the size cap the attempt failed: the request waits or ended.
        guard table.record(at: slot) === record, case .running = record.machine.phase else { return }
        shown(record, slot: slot, now: now)
    }

    /// `count` body bytes of `record`'s attempt are counted: the ledger's and the rate's.
    private mutating func countBytes(_ count: Int, of record: RequestRecord, now: Double) {
        actions.countedBytes = true
        ledger.receive(&record.progress, bytes: Int64(count), at: now)
        receivedTotal &+= Int64(count)
        if let startedAt = record.machine.phase.attempt?.startedAt {
            record.bytesMoved += Int64(count)
            // Measured from the moment the transfer started, so that the first bytes already give a rate.
            if record.downloadMeter == nil {
                record.downloadMeter = RateMeter(RateWindow(startingAt: min(startedAt, now)))
            }
            record.downloadMeter?.window.record(total: record.bytesMoved, at: now)
        }
    }

    /// `record`'s received bytes changed: shown with the next coalesced progress.
    private mutating func shown(_ record: RequestRecord, slot: Int, now: Double) {
        flush.list(slot, isListed: &record.isListedDirty)
        record.downloadDirty = true
        flush.markChanged(at: now)
    }

    /// The final head of `slot`'s HEAD: its size, and whether the existing file is unchanged.
    private mutating func preflightHead(_ head: ResponseHead, slot: Int, now: Double) {
        guard !ResponseRules.isInterim(head) else { return }
        let record = table[slot]
        hear(.head(head, of: record.request), now: now)
        let size = (200..<300).contains(head.statusCode) ? ResponseRules.knownLength(of: head) : nil
        if (200..<300).contains(head.statusCode) {
            ledger.setExpectedDownload(&record.progress, size)
            flush.markChanged(at: now)
        }
        hear(.preflightAnswered(slot: slot, size: size), now: now)
        let reading = HeadReading(head, continuedFrom: 0, acceptableStatusCodes: record.request.acceptableStatusCodes)
        _ = record.machine.headRead(
            reading, of: record.request, received: 0, existingFile: record.existingFile, expectedBefore: nil,
            wallClock: outbox.wallClock(at: now), &shared, now: now)
    }

    /// The final head of an attempt: what it means for the part, the progress and the request's rules.
    private mutating func headRead(_ reading: HeadReading, _ slot: Int, _ now: Double) {
        let record = table[slot]
        let (head, request) = (reading.head, record.request)
        let wallClock = outbox.wallClock(at: now)
        let (before, clock) = (record.machine.phase, record.machine.deadline)
        let read = record.machine.headRead(
            reading, of: request, received: record.progress.received, existingFile: record.existingFile,
            file: record.claim?.url, expectedBefore: record.progress.expectedDown, wallClock: wallClock, &shared,
            now: now)
        // A refused range starts the attempt again in the same slot: its restart is applied as the machine's action.
        let restart = if case .refusedRange(_, let restart) = read { restart } else { RequestMachine.Action.none }
        settle(slot, before: before, clock: clock, restart, transferEnded: false, now: now)
        if case .interim = read { return }
        hear(.head(head, of: request), now: now)
        headHeard(read, head, slot: slot, now: now)
        // Once the delegate heard the head (by design: the one decision of the machine the coordinator hands back).
        if case .read(_, _, _, let problem?) = read {
            apply(slot, .attemptEnded(problem), now: now)
        }
    }

    /// What the ledger, the log and the delegate hear of `slot`'s attempt head `head`, read by its machine as `read`
    /// (its server heeded already). A problem the head names fails the attempt afterwards: the caller applies it.
    private mutating func headHeard(_ read: RequestMachine.HeadAction, _ head: ResponseHead, slot: Int, now: Double) {
        let record = table[slot]
        let request = record.request
        switch read {
        case .interim: return
        case .refusedRange(let offset, _):
            outbox.log(.debug, .headReceived, request, now: now) { LogText.head(head) }
            outbox.log(.notice, .rangeRefused, request, now: now) {
                "the server refused to continue from byte \(offset) (\(head.statusCode)): sending again from byte 0"
            }
        case .read(let continuation, let length, let encoded, let problem):
            outbox.log(.debug, .headReceived, request, now: now) { LogText.head(head) }
            switch continuation {
            case .fresh: break
            case .appended(let offset):
                outbox.log(.info, .continuedFromByte, request, now: now) { "continued from byte \(offset)" }
                // The part's bytes are done: counted once, as progress (never twice: see rebase).
                ledger.rebase(&record.progress, received: offset)
            case .startedOver(let offset):
                outbox.log(.notice, .rangeRefused, request, now: now) {
                    "the server sent the whole body (200) instead of continuing from byte \(offset)"
                }
                ledger.rebase(&record.progress, received: 0)
            case .unrelated: ledger.rebase(&record.progress, received: 0)
            // The earlier bytes no longer count.
            case .restarted: ledger.restart(&record.progress)
            }
            // An unacceptable response's length (an error page's) never describes the resource: a retry would
            // otherwise have counted the difference as progress.
            if problem == nil {
                if length != nil || encoded { ledger.setExpectedDownload(&record.progress, length) }
                // No size: one unit, as any download of unknown size.
                ledger.stopAwaitingSize(&record.progress)
            }
            // Shown before didReceiveHeaders is delivered; when nobody hears it, with the next coalesced progress.
            if outbox.hasListeners {
                actions.publish(record)
            } else {
                flush.list(slot, isListed: &record.isListedDirty)
                record.uploadDirty = true
            }
            flush.markChanged(at: now)
            outbox.post(.didReceiveHeaders(request, head: head))
        }
    }

    /// The current transfer of `slot` ended as `outcome` says (a checksum mismatch is reported by its pipeline):
    /// the request succeeds, commits its file, fails the attempt, or (a continued part that did not verify)
    /// sends it again without a range.
    private mutating func transferEnded(
        _ outcome: RequestMachine.TransferOutcome, slot: Int, token: UInt64, now: Double
    )
        -> QueueActions
    {
        guard table.isCurrent(slot, token: token) else { return QueueActions() }
        if case .checksumMismatch(let expected, let actual) = outcome {
            guard case .running = table[slot].machine.phase else { return QueueActions() }
            outbox.log(.error, .checksumFailed, table[slot].request, now: now) { "expected \(expected), got \(actual)" }
        }
        transferEndedApplied(outcome, slot: slot, now: now)
        return finishEvent(now)
    }

    /// ``transferEnded(_:slot:token:now:)`` of a current transfer, the event not finished.
    private mutating func transferEndedApplied(_ outcome: RequestMachine.TransferOutcome, slot: Int, now: Double) {
        // A failed connect counts against its server; one that finds the server down ends the request here.
        if case .failed(let error) = outcome, deadHosts.isEnabled, DeadHostRules.isConnectFailure(error),
            hear(.connectFailed(slot: slot), now: now).tookRequest
        {
            return
        }
        // A connection reset before its response while the server answers others: sent again, not spent.
        if case .failed(let error) = outcome, hear(.reset(error, slot: slot), now: now).tookRequest { return }
        let record = table[slot]
        if case .running = record.machine.phase { sample(outcome, of: record, slot: slot, now: now) }
        let file = record.claim?.url
        let checksExistingFile = record.existingFile != nil
        let metrics = record.requestMetrics
        let ended = RequestMachine.Event.transferEnded(
            outcome, received: record.progress.received, file: file, checksExistingFile: checksExistingFile,
            metrics: metrics, expectedBefore: record.progress.expectedDown)
        apply(slot, ended, transferEnded: true, now: now)
    }

    /// The adaptive concurrency's sample of a main transfer of `record` that ended as `outcome`.
    private mutating func sample(
        _ outcome: RequestMachine.TransferOutcome, of record: RequestRecord, slot: Int, now: Double
    ) {
        guard adaptive != nil else { return }
        let sample = AdaptiveConcurrency.outcome(of: outcome, received: record.progress.received)
        hear(.transferEnded(sample, slot: slot, of: record.request), now: now)
    }

    /// An event of the file of `slot`'s current transfer: opened by the shell before the transfer starts (when
    /// the request ended meanwhile, the actions discard it and the caller must not start the transfer), failed,
    /// or moved into place.
    private mutating func fileEvent(_ event: RequestMachine.FileEvent, slot: Int, token: UInt64, now: Double)
        -> QueueActions
    {
        let isCurrent = table.isCurrent(slot, token: token)
        switch event {
        case .opened(let sink):
            guard isCurrent else {
                actions.append(.discard(sink))
                return actions.take(deliverAfter: outbox.announce(now: now))
            }
            // The new attempt's file takes over the part (continuing or replacing it).
            let record = table[slot]
            record.hasKeptPart = false
            _ = record.machine.handle(.file(event, file: nil, metrics: nil), of: record.request, &shared, now: now)
            return actions.take(deliverAfter: outbox.announce(now: now))
        case .failed:
            guard isCurrent else { break }
            apply(slot, .file(event, file: nil, metrics: nil), now: now)
        case .committed(let error, let placedAt):
            guard isCurrent else { preconditionFailure("a commit for a request not committing") }
            let record = table[slot]
            // Where the file went: the name its response gave it (or the free name beside another origin's file), as
            // the shell said, else its destination.
            let file = placedAt.map { URL(fileURLWithPath: $0, isDirectory: false) } ?? record.claim?.url
            let metrics = error == nil ? record.requestMetrics : nil
            apply(slot, .file(event, file: file, metrics: metrics), transferEnded: true, now: now)
        }
        return finishEvent(now)
    }
}

// MARK: A split file's events

/// A split file's events: each is handed to the request's machine, which holds the file's child machine, and its one
/// output is applied here, a field by its applier: the books' entries in order, the connections' work as the event's
/// ``QueueAction/connections(_:)`` for the attempt's shell, and the request's action settled as any event's. The
/// coordinator answers what the machine asks of the shared books in the call (``DownloadBooks``: a loan, a failed
/// connect's verdict), and never hands the machine back what it returned.
extension QueueStateMachine: DownloadBooks {
    /// Hands `event` of `slot`'s split attempt `token` to the request's machine and does what it returns; ends the event.
    /// Dropped when the attempt is not current.
    private mutating func splitEvent(_ event: RequestMachine.SplitEvent, slot: Int, token: UInt64, now: Double)
        -> QueueActions
    {
        // Bytes only placed for the shell to write change nothing the queue shares: no event to finish (their count,
        // with its progress, comes with their writes).
        guard downloadEvent(event, slot: slot, token: token, now: now) else { return actions.take(deliverAfter: nil) }
        return finishEvent(now)
    }

    /// `splitEvent(_:slot:token:now:)` without ending the event (the look at a split file's end game, a
    /// ``QueueTimer`` entry; a batched notice of its writes). False when the event changed nothing the queue shares.
    @discardableResult
    mutating func downloadEvent(_ event: RequestMachine.SplitEvent, slot: Int, token: UInt64, now: Double) -> Bool {
        guard table.isCurrent(slot, token: token), case .running = table[slot].machine.phase else { return false }
        let record = table[slot]
        // The shell that does the work: the attempt's, or the one the file begins with.
        var shell = record.machine.splitShell
        if case .begin(_, _, _, _, _, let beginning, _) = event { shell = beginning }
        let (before, clock) = (record.machine.phase, record.machine.deadline)
        let context = RequestMachine.DownloadContext(
            received: record.progress.received, existingFile: record.existingFile, file: record.claim?.url,
            expectedBefore: record.progress.expectedDown, metrics: record.requestMetrics,
            wallClock: outbox.wallClock(at: now), policy: redirectPolicy, deadAtHead: record.locationsDeadAtHead,
            logs: outbox.isLogging)
        // The books' answers in the call (``connectFailed(startedAt:now:)``) are this slot's.
        downloadSlot = slot
        // The machine's shared state goes in apart from the books (both are the coordinator's): copied out and back.
        var shared = self.shared
        let output = record.machine.split(
            event, of: record.request, context: context, books: &self, &shared, now: now)
        self.shared = shared
        var problem: NetworkQueueError?
        for book in output.books {
            if let failure = recordBook(book, of: record, slot: slot, now: now) { problem = failure }
        }
        let moved =
            !(output.request.isNone && record.machine.phase.isSame(as: before) && record.machine.deadline == clock)
        if moved {
            settle(slot, before: before, clock: clock, output.request, transferEnded: output.transferEnded, now: now)
        }
        // A head's problem fails the attempt once its delegate heard the head (the machine stopped deciding there).
        if let problem { apply(slot, .attemptEnded(problem), now: now) }
        if !output.connections.isEmpty, let shell {
            actions.append(.connections(ConnectionBatch(shell: shell, work: output.connections)))
        }
        return moved || problem != nil || !output.books.isEmpty
    }

    /// Records `book`, an entry of `record`'s download event, in the books it names. Returns the problem a head named,
    /// which fails the attempt once the event's books are recorded.
    private mutating func recordBook(
        _ book: RequestMachine.DownloadBook, of record: RequestRecord, slot: Int, now: Double
    ) -> NetworkQueueError? {
        let request = record.request
        switch book {
        case .log(let event, let level, let message):
            outbox.log(level, event, request, now: now) { message }
        case .answered(let head):
            hear(.answered(head, slot: slot), now: now)
            if !ResponseRules.isInterim(head) { hear(.head(head, of: request), now: now) }
        case .unreachable(let url, let startedAt):
            hear(.locationUnreachable(url, startedAt: startedAt, of: request), now: now)
        case .returned(let loan):
            scheduler.returnExtra(host: loan.host)
        case .recheck(let at):
            guard let token = record.machine.phase.token else { break }
            timer.splits.insert(.init(deadline: at, id: slot, stamp: token))
        case .head(let read, let head):
            headHeard(read, head, slot: slot, now: now)
            if case .read(_, _, _, let problem?) = read { return problem }
        case .counted(let count):
            countBytes(count, of: record, now: now)
            shown(record, slot: slot, now: now)
        case .sent(let sent, let expected):
            ledger.send(&record.progress, totalSent: sent, expected: expected, at: now)
            flush.list(slot, isListed: &record.isListedDirty)
        case .redirected(let redirect):
            outbox.log(redirect, of: request, now: now)
        case .metrics(let metrics):
            guard collectsMetrics else { break }
            outbox.post(.didCollectMetrics(request, metrics: record.collect(metrics)))
        case .ended(let outcome):
            sample(outcome, of: record, slot: slot, now: now)
        }
        return nil
    }

    /// One connection lent to a running split download.
    struct ConnectionLoan: Sendable {
        /// The host it counts toward under a per-host limit.
        let host: Int?
    }

    mutating func lend(toServerOf location: URL?, now: Double) -> ConnectionLoan? {
        let host = hostNumber(of: location)
        return scheduler.lendExtra(host: host, now: now) ? ConnectionLoan(host: host) : nil
    }

    mutating func connectFailed(startedAt: Double, now: Double) -> ConnectVerdict {
        hear(.connectFailedDeciding(slot: downloadSlot, startedAt: startedAt), now: now).verdict
    }
}
