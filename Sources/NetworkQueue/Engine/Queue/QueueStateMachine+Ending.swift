import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension QueueStateMachine {
    /// Ends a request exactly once: frees its slot, stops its transfer (unless `transferEnded`: the
    /// transport reported its completion), updates progress and posts its settlement, its final progress
    /// and its didFinish / didFail. A failure that `failsSiblings` (not a cancellation) ends every other request
    /// too, with cancel-all-on-failure on.
    mutating func end(
        _ slot: Int, _ result: Result<NetworkResponse, NetworkQueueError>, transferEnded: Bool = false,
        endingHead: ResponseHead? = nil, failsSiblings: Bool = false, now: Double
    ) {
        let record = table.remove(slot)
        if !transferEnded, collectsMetrics, let attempt = record.machine.phase.attempt {
            let metrics = record.collect(TransferMetrics(stopped: attempt, at: now))
            outbox.post(.didCollectMetrics(record.request, metrics: metrics))
        }
        move(slot, from: record.machine.phase, leaving: true, transferEnded: transferEnded, now: now)
        switch result {
        case .success: ledger.finish(&record.progress, .succeeded)
        case .failure(let error): ledger.finish(&record.progress, error.isCancellation ? .cancelled : .failed)
        }
        logEnd(record, result, now: now)
        settle(record, result, endingHead: endingHead)
        if record.duplicateKey != nil { endFollowers(of: record, slot: slot, result, now: now) }
        if case .success = result, waitingRetries > 0 { retryEarly(after: record.request, now: now) }
        if failsSiblings, cancelsAllOnFailure, case .failure(let error) = result, !error.isCancellation {
            endAll(.cancelledBecauseSiblingFailed(sibling: record.request.url), now: now)
        }
    }

    /// Posts what a request's end shows, in order: its final status (with the partial file's removal and
    /// the claim's end), its last progress, then its didFinish / didFail.
    private mutating func settle(
        _ record: RequestRecord, _ result: Result<NetworkResponse, NetworkQueueError>, endingHead: ResponseHead?
    ) {
        let request = record.request
        // One object for the action and the delivery that both publish it.
        let status = NetworkRequest.PublishedStatus(record.status(ending: result, endingHead: endingHead))
        var sink: FileSink?
        if let open = record.machine.phase.attempt?.sink, result.discardsPart {
            sink = open
            actions.append(.discard(open))
        }
        if case .failure = result, record.hasKeptPart, let claim = record.claim {
            // The part an earlier attempt (or a pause) kept for the next: none is coming.
            actions.append(.discardPart(claim))
        }
        if let claim = record.claim { actions.append(.release(claim)) }
        actions.append(.publish(request, status))
        // Not urgent by itself (the events below are, when someone hears them), unless a value waits for it.
        outbox.post(
            .settle(status, request, sink, record.claim, observed: record.isObserved), urgent: record.isObserved)
        if record.uploadDirty, request.uploadProgressHandler != nil {
            outbox.post(.uploadProgress(request, status.status.upload))
        }
        if record.downloadDirty, request.downloadProgressHandler != nil {
            outbox.post(.downloadProgress(request, status.status.download))
        }
        switch result {
        case .success(let response): outbox.post(.didFinish(request, response: response))
        case .failure(let error): outbox.post(.didFail(request, error: error))
        }
    }

    /// Ends every request with `error` but those whose file is being moved into place: transfers (and
    /// requests adapting, deciding or waiting to retry) first, in the order they were added, then
    /// requests waiting in the scheduler (preflight lane first, each lane oldest first). Those leave the
    /// scheduler, the ledger and the table in bulk, so this stays linear.
    /// Every source stops first: nothing read afterwards joins the queue.
    mutating func endAll(_ error: NetworkQueueError, now: Double) {
        // Waiting readers are told to stop, and a reader under way stops before its next `next()` (a request a
        // `next()` under way still returns is not added).
        for (id, unread) in sources.stopAll() {
            ledger.closeSource(unread: unread)
            actions.append(.stopSource(id))
        }
        let alone = table.records.filter { $0.record.machine.phase.endsAlone }
        for (slot, record) in alone.sorted(by: { $0.record.sequence < $1.record.sequence }) {
            // A follower may have ended with its leader already.
            if table.record(at: slot) === record { end(slot, .failure(error), now: now) }
        }
        let waiting = scheduler.removeAllPending()
        guard committingCount == 0 else {
            // Rare (a file being committed): the ledger cannot drop everything unfinished in bulk.
            for job in waiting where table.isOccupied(job.id) { end(job.id, .failure(error), now: now) }
            return
        }
        ledger.cancelUnfinished()
        // A request waiting for its HEAD is listed in both lanes: taken with the preflight lane.
        var requests: [NetworkRequest] = []
        requests.reserveCapacity(waiting.count)
        var claims: [DestinationClaim] = []
        var isObserved = false
        for job in waiting {
            let record = table[job.id]
            if job.lane == .main, record.machine.phase.holdings.preflightLane { continue }
            requests.append(record.request)
            if let claim = record.claim {
                claims.append(claim)
                // A part an earlier attempt or a pause kept for the next attempt (back in the pending list
                // to be resumed or retried early): none is coming.
                if record.hasKeptPart { actions.append(.discardPart(claim)) }
            }
            isObserved = isObserved || record.isObserved
        }
        // Waiting requests have moved no byte in this attempt: their end changes only their state and result.
        actions.append(.publishEnd(requests, error))
        for claim in claims { actions.append(.release(claim)) }
        outbox.post(.settleAll(requests, error, claims, observed: isObserved), urgent: isObserved)
        for request in requests {
            outbox.log(.warning, .cancelled, request, now: now) { error.description }
            outbox.post(.didFail(request, error: error))
        }
        actions.append(.free(table.removeAll()))
        // The table is empty: no request leads a duplicate key any more.
        leaders.removeAll()
    }

    /// `request` succeeded: requests to its server waiting out a backoff (not a `Retry-After`) are
    /// retried now, when their policy allows it.
    private mutating func retryEarly(after request: NetworkRequest, now: Double) {
        guard let host = RequestRules.hostKey(request.url) else { return }
        let early = table.records.filter { _, record in
            guard case .waitingToRetry(let wait) = record.machine.phase, !wait.serverAsked else { return false }
            return (record.request.retryPolicy ?? retryPolicy).retriesEarlyWhenHostRecovers
                && RequestRules.hostKey(record.request.url) == host
        }
        for (slot, _) in early.sorted(by: { $0.record.sequence < $1.record.sequence }) {
            // As if its retry time came.
            apply(slot, .retryTimeCame, now: now)
        }
    }

    /// The end of a request: finished (status, bytes, time), cancelled, or failed (attempts, error).
    private mutating func logEnd(
        _ record: RequestRecord, _ result: Result<NetworkResponse, NetworkQueueError>, now: Double
    ) {
        guard outbox.isLogging else { return }
        switch result {
        case .success(let response):
            if let checksum = record.request.checksum {
                outbox.log(.info, .checksumVerified, record.request, now: now) {
                    "checksum verified (\(checksum.algorithm.rawValue))"
                }
            }
            outbox.log(.info, .finished, record.request, now: now) {
                let took = record.machine.startedAt.map { " in " + LogText.duration(now - $0) } ?? ""
                if response.keptExistingFile { return "\(response.statusCode), existing file unchanged\(took)" }
                // A file named by its response: where it went.
                var saved = ""
                if let file = response.fileURL, case .file(let asked) = record.request.destination,
                    file.standardizedFileURL.path != asked.standardizedFileURL.path
                {
                    saved = ", saved as \(file.path)"
                }
                return "\(response.statusCode), \(record.progress.received) bytes\(took)\(saved)"
            }
        case .failure(let error) where error.isCancellation:
            outbox.log(.warning, .cancelled, record.request, now: now) { error.description }
        case .failure(let error):
            outbox.log(.error, .failed, record.request, now: now) {
                "after \(record.machine.attempts) attempt\(record.machine.attempts == 1 ? "" : "s"): \(error)"
            }
        }
    }

    /// A leader ended: its key is free, and each follower ends with the same result (after a didStart of
    /// its own when the shared transfer ran and did not end by cancellation).
    private mutating func endFollowers(
        of record: RequestRecord, slot: Int, _ result: Result<NetworkResponse, NetworkQueueError>, now: Double
    ) {
        if let key = record.duplicateKey, leaders[key] == slot { leaders[key] = nil }
        guard !record.followers.isEmpty else { return }
        let followers = record.followers
        record.followers = []
        let ran: Bool
        switch result {
        case .success: ran = true
        case .failure(let error): ran = record.machine.hasStarted && !error.isCancellation
        }
        // They show the leader's head as theirs.
        let head = record.machine.phase.shown.head
        for follower in followers {
            let followerRecord = table[follower]
            if ran { outbox.post(.didStart(followerRecord.request)) }
            end(follower, result, endingHead: head, now: now)
        }
    }
}

extension Result<NetworkResponse, NetworkQueueError> {
    /// True when a request that ends so discards its attempt's part: it failed, or a 304 kept the file there.
    fileprivate var discardsPart: Bool {
        switch self {
        case .failure: true
        case .success(let response): response.keptExistingFile
        }
    }
}
