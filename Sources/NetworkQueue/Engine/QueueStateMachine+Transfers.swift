import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The other events of a request's transfers: its HEAD, its body, its file, its checksum, its adapt hooks and
/// its retry closure. Each is handed to the request's ``RequestMachine``; ``perform(_:_:transferEnded:now:)``
/// does what it asks.
extension QueueStateMachine {
    /// `count` bytes of a file-bound body arrived, written and hashed already (lent by the transport: see
    /// ``LendingTransport``). Dropped when the transfer is no longer current, as any transfer event.
    mutating func bodyReceived(_ count: Int, slot: Int, token: UInt64, now: Double) -> QueueActions {
        guard table.isCurrent(slot, token: token), case .running = table[slot].machine.phase else {
            return QueueActions()
        }
        table[slot].machine.lastActivity = now
        receive(count, keeping: nil, slot: slot, now: now)
        return finishEvent(now)
    }

    /// `count` body bytes of a main transfer arrived: `data`, which a body in memory keeps.
    mutating func receive(_ count: Int, keeping data: Data?, slot: Int, now: Double) {
        let record = table[slot]
        let request = record.request
        ledger.receive(&record.progress, bytes: Int64(count), at: now)
        receivedTotal &+= Int64(count)
        let isMemory = if case .memory = request.destination { true } else { false }
        let action = record.machine.bodyPiece(
            keeping: isMemory ? data : nil, received: record.progress.received, of: request)
        if let startedAt = record.machine.phase.attempt?.startedAt {
            record.bytesMoved += Int64(count)
            // Measured from the moment the transfer started, so that the first bytes already give a rate.
            if record.downloadMeter == nil {
                record.downloadMeter = RateMeter(RateWindow(startingAt: min(startedAt, now)))
            }
            record.downloadMeter?.window.record(total: record.bytesMoved, at: now)
        }
        guard case .none = action else { return perform(action, slot, now: now) }
        flush.list(slot, isListed: &record.isListedDirty)
        record.downloadDirty = true
        flush.markChanged(at: now)
    }

    /// The final head of `slot`'s HEAD: its size, and whether the existing file is unchanged.
    mutating func preflightHead(_ head: ResponseHead, slot: Int, now: Double) {
        guard !ResponseRules.isInterim(head) else { return }
        let record = table[slot]
        if (200..<300).contains(head.statusCode) {
            ledger.setExpectedDownload(&record.progress, ResponseRules.knownLength(of: head))
            flush.markChanged(at: now)
        }
        let reading = HeadReading(head, continuedFrom: 0, acceptableStatusCodes: record.request.acceptableStatusCodes)
        _ = record.machine.headRead(
            reading, of: record.request, received: 0, existingFile: record.existingFile, expectedBefore: nil,
            wallClock: outbox.wallClock(at: now), nextToken: &nextToken, now: now)
    }

    /// The current transfer of `slot` ended as `outcome` says (a checksum mismatch is reported by its pipeline):
    /// the request succeeds, commits its file, fails the attempt, or (a continued part that did not verify)
    /// sends it again without a range.
    mutating func transferEnded(_ outcome: RequestMachine.TransferOutcome, slot: Int, token: UInt64, now: Double)
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
    mutating func transferEndedApplied(_ outcome: RequestMachine.TransferOutcome, slot: Int, now: Double) {
        let record = table[slot]
        let before = record.machine.phase
        let action = record.machine.transferEnded(
            outcome, received: record.progress.received, file: record.claim?.url,
            checksExistingFile: record.existingFile != nil, metrics: record.requestMetrics,
            expectedBefore: record.progress.expectedDown, mirrors: record.request.fileOptions.mirrors.count,
            nextToken: &nextToken, now: now)
        // A transfer sent again replaces one the queue stops itself.
        let replaced = if case .startTransfer = action { true } else { false }
        move(slot, from: before, transferEnded: !replaced)
        perform(action, slot, transferEnded: true, now: now)
    }

    /// An event of the file of `slot`'s current transfer: opened by the shell before the transfer starts (when
    /// the request ended meanwhile, the actions discard it and the caller must not start the transfer), failed,
    /// or moved into place.
    mutating func fileEvent(_ event: RequestMachine.FileEvent, slot: Int, token: UInt64, now: Double) -> QueueActions {
        let isCurrent = table.isCurrent(slot, token: token)
        switch event {
        case .opened(let sink):
            guard isCurrent else {
                actions.list.append(.discard(sink))
                return actions.take(deliverAfter: outbox.announce(now: now))
            }
            // The new attempt's file takes over the part (continuing or replacing it).
            table[slot].hasKeptPart = false
            _ = table[slot].machine.file(event, file: nil, metrics: nil)
            return actions.take(deliverAfter: outbox.announce(now: now))
        case .failed:
            if isCurrent { perform(table[slot].machine.file(event, file: nil, metrics: nil), slot, now: now) }
        case .committed(let error):
            guard isCurrent else { preconditionFailure("a commit for a request not committing") }
            let record = table[slot]
            let action = record.machine.file(
                event, file: record.claim?.url, metrics: error == nil ? record.requestMetrics : nil)
            perform(action, slot, transferEnded: true, now: now)
        }
        return finishEvent(now)
    }

    /// Does what the machine of the request in `slot` asked that is not a transfer's or a retry's (see
    /// ``perform(_:_:transferEnded:now:)``): its hooks or its HEAD to start, its file to commit, its slot again.
    mutating func performControl(_ action: RequestMachine.Action, _ slot: Int, now: Double) {
        let record = table[slot]
        let request = record.request
        switch action {
        case .adapt(let token):
            timer.addTimeout(
                request.timeoutInterval, slot: slot, token: token, now: now, live: scheduler.activeCount, table: table)
            actions.publish(record)
            let hooks = [adapter, request.adapt].compactMap { $0 }
            actions.list.append(
                .adapt(.init(slot: slot, token: token, urlRequest: request.urlRequest, hooks: hooks)))
        case .startPreflight(let preflight):
            let sent = preflight.sent
            var head = sent
            if preflight.source > 0 {
                record.sourcesDeadAtHead = preflight.source
                // The sources before it failed: the HEAD asks its mirror, as the GET would (the credentials a
                // redirect to another origin loses stay behind).
                let mirror = request.fileOptions.mirrors[preflight.source - 1]
                head = SplitRules.request(sent, to: mirror, origin: sent.url, policy: redirectPolicy)
                outbox.log(.notice, .sourceDropped, request, now: now) {
                    "the HEAD before failed: asking mirror \(preflight.source) (\(Redaction.describe(mirror)))"
                }
            }
            head.httpMethod = "HEAD"
            head.httpBody = nil
            actions.publish(record)
            timer.addTimeout(
                head.timeoutInterval, slot: slot, token: preflight.token, now: now, live: scheduler.activeCount,
                table: table)
            outbox.log(.debug, .preflightStarted, request, now: now) { "HEAD \(Redaction.describe(head.url))" }
            let start = QueueAction.Start(
                slot: slot, token: preflight.token, urlRequest: head, cell: preflight.cell, body: .preflight,
                collectsMetrics: false)
            actions.list.append(.start(start))
        case .commit(let attempt, let sink):
            actions.list.append(.commit(slot: slot, token: attempt.token, sink: sink))
        case .rejoin, .resumed:
            actions.publish(record)
        case .preflightDone:
            // A HEAD without a size: the request weighs one unit, as any download of unknown size.
            ledger.stopAwaitingSize(&record.progress)
            actions.publish(record)
        case .waitUntil(let deadline, let token):
            timer.idle.insert(.init(deadline: deadline, id: slot, token: token))
        case .none, .startTransfer, .attemptFailed, .askRetry, .waitToRetry, .end, .sendAgainWithoutRange, .paused:
            preconditionFailure("performed where it is asked")
        }
    }

    /// The adapt hooks of the attempt `token` returned the request to send, or threw.
    mutating func adapted(
        slot: Int, token: UInt64, _ outcome: Result<URLRequest, NetworkQueueError.UnderlyingError>, now: Double
    ) -> QueueActions {
        // The token is current only while the hooks run: a request ended or paused meanwhile holds another.
        guard table.isCurrent(slot, token: token) else { return finishEvent(now) }
        let record = table[slot]
        let checked = outcome.mapError { NetworkQueueError.adaptationFailed($0) }.flatMap { urlRequest in
            RequestRules.validate(urlRequest, destination: record.request.destination).map {
                .failure(.invalidRequest($0))
            } ?? .success(urlRequest)
        }
        let before = record.machine.phase
        let action = record.machine.adapted(
            checked, expectedBefore: record.progress.expectedDown, nextToken: &nextToken, now: now)
        move(slot, from: before)
        perform(action, slot, transferEnded: true, now: now)
        return finishEvent(now)
    }

    /// The retry policy's closure answered about the attempt that failed in `slot`.
    mutating func retryDecided(slot: Int, token: UInt64, _ decision: RetryPolicy.Decision, now: Double) -> QueueActions
    {
        // Cancelled or paused meanwhile: the token is stale.
        guard table.isCurrent(slot, token: token), case .deciding = table[slot].machine.phase else {
            return finishEvent(now)
        }
        let record = table[slot]
        let before = record.machine.phase
        let action = record.machine.retryDecided(
            decision, policy: (record.request.retryPolicy ?? retryPolicy), method: record.request.method,
            nextToken: &nextToken, jitter: &jitter, now: now)
        move(slot, from: before)
        perform(action, slot, transferEnded: true, now: now)
        return finishEvent(now)
    }
}
