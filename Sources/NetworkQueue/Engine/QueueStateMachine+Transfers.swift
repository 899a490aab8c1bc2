import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension QueueStateMachine {
    /// The shell opened the file of a transfer about to start. Returns false when the request ended
    /// meanwhile: the actions then discard the file, and the caller must not start the transfer.
    mutating func fileOpened(slot: Int, token: UInt64, sink: FileSink) -> (isCurrent: Bool, actions: QueueActions) {
        let isCurrent = table.isCurrent(slot, token: token)
        if isCurrent {
            // The new attempt's file takes over the part (continuing or replacing it).
            table[slot].hasKeptPart = false
            table[slot].sink = sink
            table[slot].resumeOffset = sink.resumeOffset
        } else {
            actions.list.append(.discard(sink))
        }
        return (isCurrent, takeActions())
    }

    /// The file of a transfer could not be opened or written: the request fails, if that transfer is
    /// still its current one.
    mutating func fileFailed(slot: Int, token: UInt64, error: NetworkQueueError, now: Double) -> QueueActions {
        if table.isCurrent(slot, token: token), table[slot].phase == .running { fail(slot, error, now: now) }
        return finishEvent(now)
    }

    /// Applies one transport event. Events of a transfer that is no longer current (ended, cancelled,
    /// timed out) are dropped: the queue's own state is the truth, not the transport's.
    mutating func transferEvent(_ event: TransferEvent, slot: Int, token: UInt64, now: Double) -> QueueActions {
        guard table.isCurrent(slot, token: token) else { return QueueActions() }
        table[slot].lastActivity = now
        switch table[slot].phase {
        case .preflighting: preflightEvent(event.normalized, slot: slot, now: now)
        case .running: mainEvent(event.normalized, slot: slot, now: now)
        case .committing: break  // the transport reported after completing: nothing can change now
        case let phase: preconditionFailure("a transfer event for a request in phase \(phase)")
        }
        return finishEvent(now)
    }

    /// A transfer reported success but its body did not hash as expected. A download that continued a
    /// part is sent once more from byte 0 (the part may be what was wrong); any other fails, keeping
    /// nothing of the body.
    mutating func integrityFailed(slot: Int, token: UInt64, expected: Checksum, actual: Checksum, now: Double) -> QueueActions {
        guard table.isCurrent(slot, token: token), table[slot].phase == .running else { return QueueActions() }
        log(.error, .checksumFailed, table[slot].request, now: now) { "expected \(expected), got \(actual)" }
        if table[slot].resumeOffset > 0 {
            restartWithoutRange(slot, now: now)
        } else {
            fail(slot, .integrityCheckFailed(expected: expected, actual: actual), transferEnded: true, now: now)
        }
        return finishEvent(now)
    }

    /// The file of a finished transfer was moved into place (or could not be).
    mutating func fileCommitted(slot: Int, token: UInt64, error: NetworkQueueError?, now: Double) -> QueueActions {
        guard table.isCurrent(slot, token: token), table[slot].phase == .committing else {
            preconditionFailure("a commit for a request that is not committing")
        }
        if let error {
            fail(slot, error, transferEnded: true, now: now)
        } else {
            let record = table[slot]
            let response = NetworkResponse(
                head: record.response!, body: Data(), fileURL: record.claim?.url, metrics: record.requestMetrics)
            end(slot, .success(response), transferEnded: true, now: now)
        }
        return finishEvent(now)
    }

    private mutating func preflightEvent(_ event: TransferEvent, slot: Int, now: Double) {
        switch event {
        case .head(let response) where ResponseRules.isInterim(response):
            break
        case .head(let response):
            if (200..<300).contains(response.statusCode) {
                ledger.setExpectedDownload(&table[slot].progress, ResponseRules.knownLength(of: response))
                markProgressDirty(at: now)
            }
            if let file = table[slot].existingFile, ExistingFileRules.isUnchanged(response, file: file) {
                table[slot].unchangedHead = response
            }
        case .data, .sent, .response, .redirect, .metrics:  // a `.response` arrives as a `.head` (normalized)
            break
        case .completed(let error?) where table[slot].existingFile == nil:
            fail(slot, .preflightFailed(Redaction.redacted(error)), transferEnded: true, now: now)
        case .completed(nil) where table[slot].unchangedHead != nil:
            // The file on disk is the resource: kept as it is, no GET.
            let record = table[slot]
            let response = NetworkResponse(
                head: record.unchangedHead!, body: Data(), fileURL: record.claim?.url, keptExistingFile: true)
            record.response = record.unchangedHead
            end(slot, .success(response), transferEnded: true, now: now)
        case .completed:
            // Done, or (checking an existing file) failed: the GET decides.
            scheduler.finish(Job(id: slot, lane: .preflight))
            table[slot].phase = .awaitingMain
            table[slot].transfer = nil
            table[slot].token = 0
            actions.list.append(.publish(table[slot].request, table[slot].status()))
        }
    }

    private mutating func mainEvent(_ event: TransferEvent, slot: Int, now: Double) {
        switch event {
        case .head(let response) where ResponseRules.isInterim(response):
            // 100 Continue, 103 Early Hints: never the final response.
            break
        case .head(let response):
            receiveHead(response, slot: slot, now: now)
        case .response:  // arrives as a `.head` (normalized)
            break
        case .data(let data):
            let request = table[slot].request
            if case .memory = request.destination { table[slot].body.append(data) }
            ledger.receive(&table[slot].progress, bytes: Int64(data.count), at: now)
            table[slot].meterDownload(Int64(data.count), at: now)
            if let limit = request.maximumResponseSize, table[slot].progress.received > limit {
                fail(slot, .responseTooLarge(limit: limit, url: request.url), now: now)
                return
            }
            noteProgress(slot, download: true, at: now)
        case .sent(let sent, let expected):
            ledger.send(&table[slot].progress, totalSent: sent, expected: expected, at: now)
            listForFlush(slot)
        case .redirect(let redirect):
            logRedirect(redirect, of: table[slot].request, now: now)
        case .metrics(let metrics):
            // Reported unasked (a transport that always measures): nobody reads them.
            if collectsMetrics { collect(metrics, slot: slot) }
        case .completed(let error?):
            fail(slot, .transport(Redaction.redacted(error)), transferEnded: true, now: now)
        case .completed(nil):
            complete(slot, now: now)
        }
    }

    private mutating func receiveHead(_ response: ResponseHead, slot: Int, now: Double) {
        let record = table[slot]
        let request = record.request
        record.headAt = now
        log(.debug, .headReceived, request, now: now) { LogText.head(response) }
        var resumedTotal: Int64?? = nil
        if record.resumeOffset > 0 {
            switch ResumeRules.outcome(of: response, offset: record.resumeOffset) {
            case .append(let total):
                log(.info, .resumedFromByte, request, now: now) { "resumed from byte \(record.resumeOffset)" }
                // The part's bytes are done: counted once, as progress (never twice: see rebase).
                resumedTotal = .some(total ?? ResponseRules.knownLength(of: response).map { $0 + record.resumeOffset })
                ledger.rebase(&record.progress, received: record.resumeOffset)
            case .restartWithoutRange:
                log(.notice, .rangeRefused, request, now: now) {
                    "the server refused to continue from byte \(record.resumeOffset) (\(response.statusCode)): sending again from byte 0"
                }
                return restartWithoutRange(slot, now: now)
            case .startOver:
                log(.notice, .rangeRefused, request, now: now) {
                    "the server sent the whole body (200) instead of continuing from byte \(record.resumeOffset)"
                }
                fallthrough
            case .unrelated:
                record.resumeOffset = 0
                ledger.rebase(&record.progress, received: 0)
            }
        } else if record.response != nil || record.progress.received > 0 {
            // A second response means the transfer restarted, and a retry that kept its part but did not
            // continue it starts over: the earlier bytes no longer count.
            ledger.restart(&record.progress)
            record.body = Data()
        }
        let encoded = ResponseRules.isEncoded(response)
        let length = resumedTotal ?? ResponseRules.knownLength(of: response, encoded: encoded)
        table[slot].response = response
        table[slot].announcedLength = length
        // A 206 continuing the part stands for the whole resource's 200.
        let acceptable = resumedTotal != nil ? nil : request.acceptableStatusCodes
        let problem = ResponseRules.check(
            response, url: request.url, acceptableStatusCodes: acceptable,
            acceptableContentTypes: request.acceptableContentTypes, maximumResponseSize: request.maximumResponseSize,
            expectedLength: length)
        // An unacceptable response's length (an error page's) never describes the resource: a retry would
        // otherwise have counted the difference as progress.
        if problem == nil, length != nil || encoded { ledger.setExpectedDownload(&table[slot].progress, length) }
        if hasListeners {
            // Shown before didReceiveHeaders is delivered.
            actions.list.append(.publish(request, table[slot].status()))
        } else {
            // Nobody hears the head arrive: it is shown with the next coalesced progress (or the end).
            noteProgress(slot, download: false, at: now)
        }
        markProgressDirty(at: now)
        postEvent(.didReceiveHeaders(request, response))
        if let problem {
            if case .unacceptableStatus = problem {
                // Read only for a failing status: a retry honours it.
                table[slot].retryAfter = RetryRules.retryAfter(response, now: wallClock(at: now))
            }
            fail(slot, problem, now: now)
        }
    }

    /// The transfer reported success: the request succeeds, or, for a file destination, its file is
    /// moved into place first (outside the lock) and ``fileCommitted(slot:token:error:now:)`` decides.
    private mutating func complete(_ slot: Int, now: Double) {
        let record = table[slot]
        guard let response = record.response else {
            return fail(slot, .transport(URLError(.badServerResponse)), transferEnded: true, now: now)
        }
        let method = record.request.urlRequest.httpMethod
        if ResponseRules.isShort(response, method: method, received: record.progress.received, knownLength: record.announcedLength) {
            return fail(slot, .transport(URLError(.networkConnectionLost)), transferEnded: true, now: now)
        }
        guard record.claim != nil else {
            let success = NetworkResponse(head: response, body: record.body, metrics: record.requestMetrics)
            return end(slot, .success(success), transferEnded: true, now: now)
        }
        guard let sink = record.sink else {
            return fail(slot, .fileError(path: record.claim!.url.path, reason: "no file open"), transferEnded: true, now: now)
        }
        scheduler.finish(Job(id: slot, lane: .main))
        table[slot].phase = .committing
        table[slot].transfer = nil
        committingCount += 1
        actions.list.append(.commit(slot: slot, token: record.token, sink: sink))
    }

    /// The server refused to continue the part (416, or a 206 for other bytes), or the continued file did
    /// not verify: the transfer is sent again at once without a range, in the same slot and attempt; the
    /// new part file starts empty.
    private mutating func restartWithoutRange(_ slot: Int, now: Double) {
        let record = table[slot]
        if let transfer = record.transfer { actions.list.append(.cancel(transfer)) }
        record.transfer = nil
        // The new attempt's file replaces this one (deleting it first); a late deletion of it is a no-op.
        if let sink = record.sink { actions.list.append(.discard(sink)) }
        record.sink = nil
        ledger.rebase(&record.progress, received: 0)
        markProgressDirty(at: now)
        record.refusedRange = true
        startTransfer(slot, lane: .main, record.sentRequest ?? record.request.urlRequest, now: now)
    }
}
