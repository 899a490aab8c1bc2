import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The coordinator's side of a request's life: each event goes to the request's ``RequestMachine``, its lanes and
/// counts follow its holdings (``move(_:from:leaving:transferEnded:)``), and what the machine asks is done
/// (``perform(_:_:transferEnded:now:)``). With `RequestMachine.swift`: a request's path from its slot to its retry.
extension QueueStateMachine {
    /// Ends an event: starts what may start, grants reads, ends an empty drain, arms the timer; returns the actions.
    mutating func finishEvent(_ now: Double) -> QueueActions {
        startReady(now)
        for (id, count) in sources.line.isEmpty ? [] : sources.grantWaiting(room: readRoom) {
            actions.list.append(.readSource(id, count: count))
        }
        if inDrain, drainHasRun, table.isEmpty, sources.isEmpty { endDrain(now) }
        if let time = timer.arm(flushDue: flush.due, waiting: waitingRetries, table: table) { actions.armTimer = time }
        return actions.take(deliverAfter: outbox.announce(now: now))
    }

    /// Gives each job the scheduler allows now its slot; an invalid request fails instead.
    private mutating func startReady(_ now: Double) {
        while let job = scheduler.nextStart() {
            let record = table[job.id]
            let limits = record.request.timeLimits ?? timeLimits
            if let problem = record.request.invalidReason ?? record.rejection
                ?? (limits.problem == nil ? nil : .invalidTimeLimits(limits))
            {
                scheduler.finish(job)
                attemptFailed(job.id, .invalidRequest(problem), now: now)
                continue
            }
            let before = record.machine.phase
            let clock = record.machine.deadline
            let action = record.machine.granted(
                job.lane, hooks: adapter != nil || record.request.adapt != nil, sending: record.request.urlRequest,
                expectedBefore: record.progress.expectedDown, deadline: limits.deadlineSeconds, nextToken: &nextToken,
                now: now)
            if case .running(let until) = record.machine.deadline, record.machine.deadline != clock {
                timer.addDeadline(until, slot: job.id, sequence: record.sequence, table: table)
            }
            move(job.id, from: before)
            perform(action, job.id, now: now)
        }
    }

    /// The one place a request joins or leaves a lane or a count: from what `slot` held in `phase` (nil: new) to
    /// what it holds now (nothing when `leaving`). A finished HEAD keeps its place ahead of the window; a transfer
    /// no longer held is stopped, unless the transport reported its end (`transferEnded`).
    mutating func move(_ slot: Int, from phase: RequestState?, leaving: Bool = false, transferEnded: Bool = false) {
        let before = phase?.holdings ?? RequestState.Holdings()
        let after = leaving ? RequestState.Holdings() : table[slot].machine.phase.holdings
        if before.preflightLane != after.preflightLane {
            let job = Job(id: slot, lane: .preflight)
            if after.preflightLane {
                scheduler.enqueue(job)
            } else if after.mainLane {
                _ = scheduler.finish(job)
            } else {
                _ = scheduler.remove(job)
            }
        }
        if before.mainLane != after.mainLane {
            let job = Job(id: slot, lane: .main)
            if after.mainLane { scheduler.enqueue(job) } else { _ = scheduler.remove(job) }
        }
        if before.runsTransfers, case .running(let left)? = phase,
            leaving || table[slot].machine.phase.attempt !== left,
            let loans = left.split?.release()
        {
            // A split download's lent connections go back with its attempt, however it ended.
            for loan in loans { scheduler.returnExtra(host: loan.host) }
        }
        if !transferEnded, before.runsTransfers, let phase {
            let kept = leaving ? Transfers() : table[slot].machine.phase.transfers
            for cell in phase.transfers where !kept.contains(cell) { actions.list.append(.cancel(cell)) }
        }
        if before.retryWait != after.retryWait { waitingRetries += after.retryWait ? 1 : -1 }
        if before.committing != after.committing { committingCount += after.committing ? 1 : -1 }
        if before.leader != after.leader {
            // A leader ending its followers has already left the table.
            if let leader = before.leader, let record = table.record(at: leader) {
                record.followers.removeAll { $0 == slot }
            }
            if let leader = after.leader { table[leader].followers.append(slot) }
        }
    }

    /// Does what the machine of the request in `slot` asked (`transferEnded`: the transport reported the end).
    mutating func perform(_ action: RequestMachine.Action, _ slot: Int, transferEnded: Bool = false, now: Double) {
        let record = table[slot]
        let request = record.request
        switch action {
        case .none:
            break
        case .adapt, .startPreflight, .commit, .rejoin, .resumed, .preflightDone, .waitUntil:
            performControl(action, slot, now: now)
        case .paused:
            preconditionFailure("a pause is performed where it is asked")
        case .sendAgainWithoutRange:
            preconditionFailure("the machine sends an attempt again itself")
        case .startTransfer(let attempt, let first, let replacing):
            if let replacing {
                // The new transfer's file replaces the refused one's (deleting it first).
                if let sink = replacing.sink { actions.list.append(.discard(sink)) }
                ledger.rebase(&record.progress, received: 0)
                flush.markChanged(at: now)
            }
            actions.publish(record)
            if first { outbox.post(.didStart(request)) }
            let sent = attempt.sent
            let lowestSpeed = (request.timeLimits ?? timeLimits).lowestSpeed
            if lowestSpeed != nil {
                attempt.speedWindow = SpeedWindow(start: now, moved: record.bytesMoved, queueReceived: receivedTotal)
            }
            timer.addTimeout(
                sent.timeoutInterval, speedWindow: lowestSpeed?.seconds, slot: slot, token: attempt.token, now: now,
                live: scheduler.activeCount, table: table)
            outbox.log(.debug, .attemptStarted, request, now: now) {
                "attempt \(record.machine.attempts): \(sent.httpMethod ?? "GET") \(Redaction.describe(sent.url))"
            }
            let continuesPart =
                record.claim != nil && request.continuesPartialDownloads && replacing == nil
                && RangeRules.mayContinue(sent)
            let start = QueueAction.Start(
                slot: slot, token: attempt.token, urlRequest: sent, cell: attempt.cell,
                body: .checked(request, file: record.claim, continuesPart: continuesPart),
                collectsMetrics: collectsMetrics)
            actions.list.append(.start(start))
        case .attemptFailed(let error):
            attemptFailed(slot, error, transferEnded: transferEnded, now: now)
        case .askRetry(let decision, _):
            timer.addTimeout(
                request.timeoutInterval, slot: slot, token: decision.token, now: now, live: scheduler.activeCount,
                table: table)
            actions.publish(record)
            let decide = QueueAction.Decide(
                slot: slot, token: decision.token, request: request, error: decision.failure,
                attempts: record.machine.attempts, decide: (request.retryPolicy ?? retryPolicy).decide!)
            actions.list.append(.decide(decide))
        case .waitToRetry(let wait, let delay, let error, _):
            timer.retries.insert(.init(deadline: now + delay, id: slot, token: wait.token))
            actions.publish(record)
            outbox.post(.willRetry(request, after: delay, error: error))
            // Counted as retries (the first retry of two is "retry 1/2"), as the Demo's rows count them (issue 50).
            let retry = record.machine.attempts
            let retries = (request.retryPolicy ?? retryPolicy).maximumAttempts - 1
            outbox.log(.notice, .retryScheduled, request, now: now) {
                "retry \(retry)/\(retries) in \(String(format: "%.2f", delay)) s: \(error)"
            }
        case .end(.success(let response)):
            end(slot, .success(response), transferEnded: transferEnded, now: now)
        case .end(.failure(let error)):
            end(slot, .failure(error), transferEnded: transferEnded, failsSiblings: true, now: now)
        }
    }

    /// Applies one transport event; a final head comes with its pipeline's `reading`. Events of a transfer that
    /// is no longer current (ended, cancelled, timed out) are dropped: the queue's own state is the truth.
    mutating func transferEvent(
        _ event: TransferEvent, reading: HeadReading? = nil, slot: Int, token: UInt64, now: Double
    ) -> QueueActions {
        guard table.isCurrent(slot, token: token) else { return QueueActions() }
        transferEventApplied(event, reading: reading, slot: slot, token: token, now: now)
        return finishEvent(now)
    }

    /// ``transferEvent(_:reading:slot:token:now:)`` of a current transfer, the event not finished.
    mutating func transferEventApplied(
        _ event: TransferEvent, reading: HeadReading?, slot: Int, token: UInt64, now: Double
    ) {
        let record = table[slot]
        record.machine.lastActivity = now
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
        switch event {
        case .head(let head):
            guard !preflight else {
                preflightHead(head, slot: slot, now: now)
                break
            }
            // Without a pipeline's reading (tests drive the machine alone) no part is continued.
            let acceptable = record.request.acceptableStatusCodes
            headRead(reading ?? HeadReading(head, continuedFrom: 0, acceptableStatusCodes: acceptable), slot, now)
        case .data(let data): if !preflight { receive(data.count, keeping: data, slot: slot, now: now) }
        case .sent(let sent, let expected):
            guard !preflight else { break }
            ledger.send(&record.progress, totalSent: sent, expected: expected, at: now)
            record.machine.phase.attempt?.sentBytes = sent
            flush.list(slot, isListed: &record.isListedDirty)
        case .redirect(let redirect): if !preflight { outbox.log(redirect, of: record.request, now: now) }
        // Reported unasked (a transport that always measures): nobody reads them.
        case .metrics(let metrics):
            guard !preflight, collectsMetrics else { break }
            outbox.post(.didCollectMetrics(record.request, metrics: record.collect(metrics)))
        case .completed(let error):
            transferEndedApplied(error.map { .failed($0) } ?? .succeeded, slot: slot, now: now)
        }
    }

    /// The final head of an attempt: what it means for the part, the progress and the request's rules.
    mutating func headRead(_ reading: HeadReading, _ slot: Int, _ now: Double) {
        let record = table[slot]
        let (head, request) = (reading.head, record.request)
        let read = record.machine.headRead(
            reading, of: request, received: record.progress.received, existingFile: nil,
            expectedBefore: record.progress.expectedDown, wallClock: outbox.wallClock(at: now), nextToken: &nextToken,
            now: now)
        switch read {
        case .interim: return
        case .refusedRange(let offset, let restart):
            outbox.log(.debug, .headReceived, request, now: now) { LogText.head(head) }
            outbox.log(.notice, .rangeRefused, request, now: now) {
                "the server refused to continue from byte \(offset) (\(head.statusCode)): sending again from byte 0"
            }
            guard case .startTransfer(_, _, let refused?) = restart else { preconditionFailure("no restart") }
            move(slot, from: .running(refused))
            return perform(restart, slot, now: now)
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
            if let problem { attemptFailed(slot, problem, now: now) }
        }
    }

    /// An attempt failed: the request's machine asks its retry policy; the request leaves the attempt and waits
    /// (or asks the policy's closure), or ends with the failure.
    private mutating func attemptFailed(
        _ slot: Int, _ error: NetworkQueueError, transferEnded: Bool = false, now: Double
    ) {
        let record = table[slot]
        let before = record.machine.phase
        let action = record.machine.attemptEnded(
            error, policy: (record.request.retryPolicy ?? retryPolicy), method: record.request.method,
            nextToken: &nextToken, jitter: &jitter, now: now)
        switch action {
        case .askRetry(_, let left), .waitToRetry(_, _, _, let left):
            if !transferEnded, collectsMetrics, let left {
                outbox.post(.didCollectMetrics(record.request, metrics: record.collect(.init(stopped: left, at: now))))
            }
            move(slot, from: before, transferEnded: transferEnded)
            // A part is kept for the next attempt when the request continues parts (the sink keeps it only with a
            // validator); its bytes stay counted until the next attempt's response says whether they still count.
            if let sink = left?.sink {
                record.hasKeptPart = record.request.continuesPartialDownloads
                actions.list.append(record.hasKeptPart ? .keep(sink) : .discard(sink))
            }
            if left?.sink == nil || !record.hasKeptPart { ledger.restart(&record.progress) }
            if let left, record.progress.expectedDown != left.expectedBefore {
                // The size came from this attempt's response (perhaps an error page's): back to what was known.
                ledger.replaceExpectedDownload(&record.progress, left.expectedBefore)
            }
            record.downloadDirty = record.request.downloadProgressHandler != nil
            record.uploadDirty = record.request.uploadProgressHandler != nil
            flush.markChanged(at: now)
        case .none, .adapt, .startPreflight, .startTransfer, .attemptFailed, .commit, .end, .rejoin, .waitUntil,
            .preflightDone, .paused, .resumed, .sendAgainWithoutRange:
            break
        }
        perform(action, slot, transferEnded: transferEnded, now: now)
    }
}
