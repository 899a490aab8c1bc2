import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension QueueStateMachine {
    /// Applies one transport event; a final head comes with its pipeline's `reading`. Events of a transfer
    /// that is no longer current (ended, cancelled, timed out) are dropped: the queue's own state is the truth,
    /// not the transport's.
    mutating func transferEvent(
        _ event: TransferEvent, reading: HeadReading? = nil, slot: Int, token: UInt64, now: Double
    ) -> QueueActions {
        guard table.isCurrent(slot, token: token) else { return QueueActions() }
        let record = table[slot]
        record.lastActivity = now
        switch record.state {
        case .preflighting: preflightEvent(event, slot: slot, now: now)
        case .running: mainEvent(event, reading: reading, slot: slot, now: now)
        case .committing: break  // the transport reported after completing: nothing can change now
        case .pending, .awaitingPreflight, .awaitingMain, .adaptingPreflight, .adaptingMain, .deciding, .waitingToRetry,
            .following,
            .paused:
            // A current token is held only by the phases above and these; none of these runs a transfer.
            preconditionFailure("a transfer event for a request in phase \(record.state.name)")
        }
        return finishEvent(now)
    }

    /// A transfer reported success but its body did not hash as expected. A download that continued a
    /// part is sent once more from byte 0 (the part may be what was wrong); any other fails, keeping
    /// nothing of the body.
    mutating func integrityFailed(slot: Int, token: UInt64, expected: Checksum, actual: Checksum, now: Double)
        -> QueueActions
    {
        guard table.isCurrent(slot, token: token), let attempt = table[slot].state.attempt else {
            return QueueActions()
        }
        log(.error, .checksumFailed, table[slot].request, now: now) { "expected \(expected), got \(actual)" }
        if attempt.continuedFrom > 0 {
            restartWithoutRange(slot, now: now)
        } else {
            attemptFailed(
                slot, .integrityCheckFailed(expected: expected, actual: actual), transferEnded: true, now: now)
        }
        return finishEvent(now)
    }

    private mutating func preflightHead(_ head: ResponseHead, slot: Int, now: Double) {
        guard !ResponseRules.isInterim(head) else { return }
        let record = table[slot]
        if (200..<300).contains(head.statusCode) {
            ledger.setExpectedDownload(&record.progress, ResponseRules.knownLength(of: head))
            markProgressDirty(at: now)
        }
        if let file = record.existingFile, ExistingFileRules.isUnchanged(head, file: file) {
            record.state.keepUnchanged(head)
        }
    }

    private mutating func preflightEvent(_ event: TransferEvent, slot: Int, now: Double) {
        let record = table[slot]
        guard case .preflighting(let preflight) = record.state else { preconditionFailure("not preflighting") }
        switch event {
        case .head(let head):
            preflightHead(head, slot: slot, now: now)
        case .data, .sent, .redirect, .metrics:
            break
        case .completed(let error?) where record.existingFile == nil:
            attemptFailed(slot, .preflightFailed(Redaction.redacted(error)), transferEnded: true, now: now)
        case .completed(nil) where preflight.unchangedHead != nil:
            // The file on disk is the resource: kept as it is, no GET.
            let response = NetworkResponse(
                head: preflight.unchangedHead!, body: Data(), fileURL: record.claim?.url, keptExistingFile: true)
            end(slot, .success(response), transferEnded: true, now: now)
        case .completed:
            // Done, or (checking an existing file) failed: the GET decides.
            scheduler.finish(Job(id: slot, lane: .preflight))
            record.state.finishPreflight()
            // A HEAD without a size: the request weighs one unit, as any download of unknown size.
            ledger.stopAwaitingSize(&record.progress)
            actions.list.append(.publish(record.request, record.status()))
        }
    }

    private mutating func mainEvent(_ event: TransferEvent, reading: HeadReading?, slot: Int, now: Double) {
        switch event {
        case .head(let head):
            // Without a pipeline's reading (tests drive the machine alone) no part is continued: read it here.
            let request = table[slot].request
            receiveHead(
                reading ?? HeadReading(head, continuedFrom: 0, acceptableStatusCodes: request.acceptableStatusCodes),
                slot: slot, now: now)
        case .data(let data):
            receive(data.count, keeping: data, slot: slot, now: now)
        case .sent(let sent, let expected):
            ledger.send(&table[slot].progress, totalSent: sent, expected: expected, at: now)
            listForFlush(slot)
        case .redirect(let redirect):
            logRedirect(redirect, of: table[slot].request, now: now)
        case .metrics(let metrics):
            // Reported unasked (a transport that always measures): nobody reads them.
            if collectsMetrics { collect(metrics, slot: slot) }
        case .completed(let error?):
            attemptFailed(slot, .transport(Redaction.redacted(error)), transferEnded: true, now: now)
        case .completed(nil):
            complete(slot, now: now)
        }
    }

    /// `count` bytes of a file-bound body arrived, written and hashed already (lent by the transport: see
    /// ``LendingTransport``). Dropped when the transfer is no longer current, as any transfer event.
    mutating func bodyReceived(_ count: Int, slot: Int, token: UInt64, now: Double) -> QueueActions {
        guard table.isCurrent(slot, token: token), case .running = table[slot].state else { return QueueActions() }
        table[slot].lastActivity = now
        receive(count, keeping: nil, slot: slot, now: now)
        return finishEvent(now)
    }

    /// `count` body bytes of a main transfer arrived: `data`, which a body in memory keeps.
    private mutating func receive(_ count: Int, keeping data: Data?, slot: Int, now: Double) {
        let record = table[slot]
        let request = record.request
        let startedAt = record.state.withAttempt { attempt in
            if case .memory = request.destination, let data {
                // The first piece is kept as it is (its buffer shared, not copied): most bodies are one piece. A
                // slice is copied, so that a body's indices always start at 0.
                if attempt.body.isEmpty, data.startIndex == 0 { attempt.body = data } else { attempt.body.append(data) }
            }
            return attempt.startedAt
        }
        ledger.receive(&record.progress, bytes: Int64(count), at: now)
        record.meterDownload(Int64(count), startedAt: startedAt, at: now)
        if let limit = request.maximumResponseSize, record.progress.received > limit {
            return attemptFailed(slot, .responseTooLarge(limit: limit, url: request.url), now: now)
        }
        noteProgress(slot, download: true, at: now)
    }

    /// The final head of a main transfer: what it means for the part, the progress and the request's rules.
    private mutating func receiveHead(_ reading: HeadReading, slot: Int, now: Double) {
        // 100 Continue, 103 Early Hints: never the final response.
        guard !ResponseRules.isInterim(reading.head) else { return }
        let record = table[slot]
        let (head, request) = (reading.head, record.request)
        log(.debug, .headReceived, request, now: now) { LogText.head(head) }
        guard let continuedTotal = continuation(reading, slot: slot, now: now) else {
            return restartWithoutRange(slot, now: now)
        }
        let encoded = ResponseRules.isEncoded(head)
        let length = continuedTotal ?? ResponseRules.knownLength(of: head, encoded: encoded)
        let problem = ResponseRules.check(
            head, isAcceptableStatus: reading.isAcceptable, acceptableContentTypes: request.acceptableContentTypes,
            maximumResponseSize: request.maximumResponseSize, expectedLength: length)
        var retryAfter: Double?
        if case .unacceptableStatus? = problem { retryAfter = RetryRules.retryAfter(head, now: wallClock(at: now)) }
        record.state.withAttempt { attempt in
            attempt.head = head
            attempt.headAt = now
            attempt.announcedLength = length
            // Read only for a failing status: a retry honours it.
            attempt.retryAfter = retryAfter
        }
        // An unacceptable response's length (an error page's) never describes the resource: a retry would
        // otherwise have counted the difference as progress.
        if problem == nil {
            if length != nil || encoded { ledger.setExpectedDownload(&record.progress, length) }
            // No size: one unit, as any download of unknown size.
            ledger.stopAwaitingSize(&record.progress)
        }
        if hasListeners {
            // Shown before didReceiveHeaders is delivered.
            actions.list.append(.publish(request, record.status()))
        } else {
            // Nobody hears the head arrive: it is shown with the next coalesced progress (or the end).
            noteProgress(slot, download: false, at: now)
        }
        markProgressDirty(at: now)
        postEvent(.didReceiveHeaders(request, head: head))
        if let problem { attemptFailed(slot, problem, now: now) }
    }

    /// What a final head means for the bytes counted so far. Returns the whole size a continuing 206 gives
    /// (`.some(nil)`: unknown), `.some(nil)` for a head that starts the body over, or nil when the transfer must
    /// be sent again without a range.
    private mutating func continuation(_ reading: HeadReading, slot: Int, now: Double) -> Int64?? {
        let record = table[slot]
        guard case .running(let attempt) = record.state else {
            preconditionFailure("a head in phase \(record.state.name)")
        }
        let (head, offset) = (reading.head, attempt.continuedFrom)
        switch reading.continuation {
        case .append(let total)?:
            log(.info, .continuedFromByte, record.request, now: now) { "continued from byte \(offset)" }
            // The part's bytes are done: counted once, as progress (never twice: see rebase).
            ledger.rebase(&record.progress, received: offset)
            return .some(total ?? ResponseRules.knownLength(of: head).map { $0 + offset })
        case .restartWithoutRange?:
            log(.notice, .rangeRefused, record.request, now: now) {
                "the server refused to continue from byte \(offset) (\(head.statusCode)): sending again from byte 0"
            }
            return nil
        case .startOver?:
            log(.notice, .rangeRefused, record.request, now: now) {
                "the server sent the whole body (200) instead of continuing from byte \(offset)"
            }
            fallthrough
        case .unrelated?:
            record.state.withAttempt { $0.continuedFrom = 0 }
            ledger.rebase(&record.progress, received: 0)
        case nil:
            if attempt.head != nil || record.progress.received > 0 {
                // A second head means the transfer restarted, and a retry that kept its part but did not
                // continue it starts over: the earlier bytes no longer count.
                ledger.restart(&record.progress)
                record.state.withAttempt { $0.body = Data() }
            }
        }
        return .some(nil)
    }

    /// The transfer reported success: the request succeeds, or, for a file destination, its file is
    /// moved into place first (outside the lock) and ``fileCommitted(slot:token:error:now:)`` decides.
    private mutating func complete(_ slot: Int, now: Double) {
        let record = table[slot]
        guard case .running(let attempt) = record.state else {
            preconditionFailure("completed in phase \(record.state.name)")
        }
        guard let head = attempt.head else {
            return attemptFailed(slot, .transport(URLError(.badServerResponse)), transferEnded: true, now: now)
        }
        let method = attempt.sent.httpMethod
        if ResponseRules.isShort(
            head, method: method, received: record.progress.received, knownLength: attempt.announcedLength)
        {
            return attemptFailed(slot, .transport(URLError(.networkConnectionLost)), transferEnded: true, now: now)
        }
        guard let claim = record.claim else {
            let success = NetworkResponse(head: head, body: attempt.body, metrics: record.requestMetrics)
            return end(slot, .success(success), transferEnded: true, now: now)
        }
        guard let sink = attempt.sink else {
            return attemptFailed(
                slot, .fileError(path: claim.url.path, reason: "no file open"), transferEnded: true, now: now)
        }
        scheduler.finish(Job(id: slot, lane: .main))
        _ = record.state.startCommit()
        committingCount += 1
        actions.list.append(.commit(slot: slot, token: attempt.token, sink: sink))
    }

    /// The server refused to continue the part (416, or a 206 for other bytes), or the continued file did
    /// not verify: the transfer is sent again at once without a range, in the same slot and attempt; the
    /// new part file starts empty.
    private mutating func restartWithoutRange(_ slot: Int, now: Double) {
        let record = table[slot]
        let attempt = record.state.attempt!
        actions.list.append(.cancel(attempt.cell))
        // The new transfer's file replaces this one (deleting it first); a late deletion of it is a no-op.
        if let sink = attempt.sink { actions.list.append(.discard(sink)) }
        ledger.rebase(&record.progress, received: 0)
        markProgressDirty(at: now)
        startTransfer(slot, attempt.sent, withoutRange: true, now: now)
    }
}
