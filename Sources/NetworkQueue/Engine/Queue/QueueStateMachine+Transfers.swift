import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a request's transfers report: their notices (``TransferNotice``: events, heads and bodies, endings, files),
/// and a split file's connections (through the request's machine, which holds the file's). The entries are
/// ``notice(_:now:)`` and ``notices(_:now:)`` for a transfer's notices (one path, ``noticeApplied(_:slot:token:now:)``,
/// which a split file's own notices take too), ``fileEvent(_:slot:token:now:)`` for a file opened before its transfer
/// starts, and ``splitEvent(_:slot:token:now:)`` for a split file's connections. Each is handed to the request's
/// machine through ``apply(_:_:transferEnded:now:)``. Events of a transfer that is no longer current (ended,
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
            if !hostHealth.isEmpty {
                // A file with mirrors may have its answer from one of them: the server that answered is the one up.
                if record.request.fileOptions.mirrors.isEmpty {
                    serverAnswered(slot, now: now)
                } else {
                    locationAnswered(head, of: record.request, now: now)
                }
            }
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
    mutating func countBytes(_ count: Int, of record: RequestRecord, now: Double) {
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
    mutating func shown(_ record: RequestRecord, slot: Int, now: Double) {
        flush.list(slot, isListed: &record.isListedDirty)
        record.downloadDirty = true
        flush.markChanged(at: now)
    }

    /// The final head of `slot`'s HEAD: its size, and whether the existing file is unchanged.
    private mutating func preflightHead(_ head: ResponseHead, slot: Int, now: Double) {
        guard !ResponseRules.isInterim(head) else { return }
        let record = table[slot]
        heedServer(head, of: record.request, now: now)
        let size = (200..<300).contains(head.statusCode) ? ResponseRules.knownLength(of: head) : nil
        if (200..<300).contains(head.statusCode) {
            ledger.setExpectedDownload(&record.progress, size)
            flush.markChanged(at: now)
        }
        samplePreflight(slot, size: size, now: now)
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
        heedServer(head, of: request, now: now)
        headHeard(read, head, slot: slot, now: now)
        // Once the delegate heard the head (by design: the one decision of the machine the coordinator hands back).
        if case .read(_, _, _, let problem?) = read {
            apply(slot, .attemptEnded(problem), now: now)
        }
    }

    /// What the ledger, the log and the delegate hear of `slot`'s attempt head `head`, read by its machine as `read`
    /// (its server heeded already). A problem the head names fails the attempt afterwards: the caller applies it.
    mutating func headHeard(_ read: RequestMachine.HeadAction, _ head: ResponseHead, slot: Int, now: Double) {
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
            connectFailed(slot, now: now)
        {
            return
        }
        // A connection reset before its response while the server answers others: sent again, not spent.
        if case .failed(let error) = outcome, acceptReset(error, slot: slot, now: now) { return }
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
    mutating func sample(_ outcome: RequestMachine.TransferOutcome, of record: RequestRecord, slot: Int, now: Double) {
        guard adaptive != nil else { return }
        let sample = AdaptiveConcurrency.outcome(of: outcome, received: record.progress.received)
        if let host = scheduler.host(of: slot) { adapt(sample, host: host, of: record.request, now: now) }
        adaptQueue(sample, inFlight: scheduler.activeCount, of: record.request, now: now)
    }

    /// An event of the file of `slot`'s current transfer: opened by the shell before the transfer starts (when
    /// the request ended meanwhile, the actions discard it and the caller must not start the transfer), failed,
    /// or moved into place.
    mutating func fileEvent(_ event: RequestMachine.FileEvent, slot: Int, token: UInt64, now: Double) -> QueueActions {
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
