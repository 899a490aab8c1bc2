import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension QueueStateMachine {
    // MARK: Retries

    /// The request's own retry policy, else the queue's (read when it is needed, so a change applies).
    func policy(of record: RequestRecord) -> RetryPolicy { record.request.retryPolicy ?? retryPolicy }

    /// If the request's retry policy allows another attempt after `error`, ends the current attempt and
    /// makes the request wait (or ask the policy's closure) and returns true; else returns false and
    /// changes nothing. Only main attempts are retried: a preflight's failure is final.
    mutating func retryIfAllowed(_ slot: Int, _ error: NetworkQueueError, transferEnded: Bool, now: Double) -> Bool {
        let record = table[slot]
        let attempt: Attempt?
        switch record.state {
        case .running(let running): attempt = running
        case .adaptingMain: attempt = nil
        case .pending, .awaitingPreflight, .preflighting, .awaitingMain, .adaptingPreflight, .deciding, .waitingToRetry,
            .committing,
            .following, .paused:
            return false
        }
        let policy = policy(of: record)
        let verdict = RetryRules.verdict(
            policy: policy, error: error, method: record.request.method, attempts: record.attempts,
            retryAfter: attempt?.retryAfter)
        guard verdict != .fail else { return false }
        leaveAttempt(slot, attempt, transferEnded: transferEnded, now: now)
        if verdict == .ask, let decide = policy.decide {
            nextToken += 1
            record.state.startDeciding(
                .init(token: nextToken, failure: error, retryAfter: attempt?.retryAfter, lastHead: attempt?.head))
            record.lastActivity = now
            addTimeout(slot: slot, token: nextToken, record.request.timeoutInterval, now: now)
            actions.list.append(.publish(record.request, record.status()))
            actions.list.append(
                .decide(
                    .init(
                        slot: slot, token: nextToken, request: record.request, error: error, attempts: record.attempts,
                        decide: decide)))
        } else {
            wait(slot, verdict, policy: policy, error: error, lastHead: attempt?.head, now: now)
        }
        return true
    }

    /// The retry policy's closure answered about the attempt that failed in `slot`.
    mutating func retryDecided(slot: Int, token: UInt64, _ decision: RetryPolicy.Decision, now: Double) -> QueueActions
    {
        guard table.isCurrent(slot, token: token), case .deciding(let deciding) = table[slot].state else {
            return finishEvent(now)  // cancelled or paused meanwhile
        }
        let record = table[slot]
        let policy = policy(of: record)
        let error = deciding.failure
        let verdict = RetryRules.verdict(
            after: decision, policy: policy, error: error, method: record.request.method,
            retryAfter: deciding.retryAfter)
        if verdict == .fail || verdict == .ask {
            fail(slot, error, transferEnded: true, now: now)
        } else {
            wait(slot, verdict, policy: policy, error: error, lastHead: deciding.lastHead, now: now)
        }
        return finishEvent(now)
    }

    /// Ends the current attempt (`attempt`; nil while adapting): frees its slot, stops its transfer (unless the
    /// transport reported its end), drops or keeps its partial file, and takes its bytes out of the progress
    /// (which holds still: the expected total grows back instead).
    private mutating func leaveAttempt(_ slot: Int, _ attempt: Attempt?, transferEnded: Bool, now: Double) {
        if !transferEnded { measureStoppedAttempt(slot, now: now) }
        let record = table[slot]
        scheduler.remove(Job(id: slot, lane: .main))
        if !transferEnded, let attempt { actions.list.append(.cancel(attempt.cell)) }
        // A kept part's bytes stay counted until the next attempt's response says whether they still count.
        if !closePart(of: attempt, slot: slot) { ledger.restart(&record.progress) }
        if let attempt, record.progress.expectedDown != attempt.expectedBefore {
            // The size came from this attempt's response (perhaps an error page's): back to what was known.
            ledger.replaceExpectedDownload(&record.progress, attempt.expectedBefore)
        }
        record.downloadDirty = record.request.downloadProgressHandler != nil
        record.uploadDirty = record.request.uploadProgressHandler != nil
        markProgressDirty(at: now)
    }

    /// Closes the part file of an attempt that was interrupted (a retry, a pause): kept for the next attempt to
    /// continue when the request continues parts (the sink keeps it only with a validator), else deleted.
    /// Returns whether it was kept.
    mutating func closePart(of attempt: Attempt?, slot: Int) -> Bool {
        guard let sink = attempt?.sink else { return false }
        let record = table[slot]
        record.hasKeptPart = record.request.continuesPartialDownloads
        actions.list.append(record.hasKeptPart ? .keep(sink) : .discard(sink))
        return record.hasKeptPart
    }

    /// Makes the request wait for its retry, as `verdict` says, and posts willRetry.
    private mutating func wait(
        _ slot: Int, _ verdict: RetryVerdict, policy: RetryPolicy, error: NetworkQueueError, lastHead: ResponseHead?,
        now: Double
    ) {
        let record = table[slot]
        let delay: Double
        let serverAsked: Bool
        switch verdict {
        case .backoff:
            delay = policy.backoff.delay(forRetry: record.attempts, using: &jitter)
            serverAsked = false
        case .wait(let seconds, let asked):
            delay = seconds
            serverAsked = asked
        case .fail, .ask:
            preconditionFailure("no wait for verdict \(verdict)")
        }
        nextToken += 1
        record.state.startWaiting(.init(token: nextToken, serverAsked: serverAsked, lastHead: lastHead))
        waitingRetries += 1
        retryDeadlines.insert(.init(deadline: now + delay, id: slot, token: nextToken))
        actions.list.append(.publish(record.request, record.status()))
        postEvent(.willRetry(record.request, after: delay, error: error))
        log(.notice, .retryScheduled, record.request, now: now) {
            "retry \(record.attempts + 1)/\(policy.maximumAttempts) in \(String(format: "%.2f", delay)) s: \(error)"
        }
    }

    /// A request's wait is over: it rejoins the pending requests, as if just added.
    private mutating func rejoin(_ slot: Int) {
        let record = table[slot]
        record.state.rejoin()
        waitingRetries -= 1
        scheduler.enqueue(Job(id: slot, lane: .main))
        actions.list.append(.publish(record.request, record.status()))
    }

    /// Requests whose retry time has come rejoin the pending ones (called by the timer).
    mutating func expireRetryWaits(_ now: Double) {
        // Only a waiting request holds a retry deadline's token.
        for entry in retryDeadlines.popDue(at: now) where table.isCurrent(entry.id, token: entry.token) {
            rejoin(entry.id)
        }
    }

    /// `request` succeeded: requests to its server waiting out a backoff (not a `Retry-After`) are
    /// retried now, when their policy allows it.
    mutating func retryEarly(after request: NetworkRequest, now: Double) {
        guard let host = RequestRules.hostKey(request.url) else { return }
        let early = table.records.filter { _, record in
            guard case .waitingToRetry(let wait) = record.state, !wait.serverAsked else { return false }
            return policy(of: record).retriesEarlyWhenHostRecovers
                && RequestRules.hostKey(record.request.url) == host
        }
        for (slot, _) in early.sorted(by: { $0.record.sequence < $1.record.sequence }) { rejoin(slot) }
    }

    // MARK: Adapt hooks

    /// The adapt hooks of the attempt `token` returned the request to send, or threw.
    mutating func adapted(
        slot: Int, token: UInt64, _ outcome: Result<URLRequest, NetworkQueueError.UnderlyingError>, now: Double
    ) -> QueueActions {
        // The token is current only while the hooks run: a request ended or paused meanwhile holds another.
        guard table.isCurrent(slot, token: token) else { return finishEvent(now) }
        let preflight: Bool
        switch table[slot].state {
        case .adaptingPreflight: preflight = true
        case .adaptingMain: preflight = false
        case .pending, .awaitingPreflight, .preflighting, .awaitingMain, .running, .deciding, .waitingToRetry,
            .committing, .following,
            .paused:
            preconditionFailure("adapt hooks answered for a request in phase \(table[slot].state.name)")
        }
        switch outcome {
        case .failure(let error):
            attemptFailed(slot, .adaptationFailed(error), transferEnded: true, now: now)
        case .success(let urlRequest):
            if let problem = RequestRules.validate(urlRequest, destination: table[slot].request.destination) {
                attemptFailed(slot, .invalidRequest(problem), transferEnded: true, now: now)
            } else if preflight {
                startPreflight(slot, urlRequest, now: now)
            } else {
                startTransfer(slot, urlRequest, now: now)
            }
        }
        return finishEvent(now)
    }
}

/// The backoff's jitter: xorshift64*, seeded by the queue, so that the machine stays a pure function
/// of its inputs (tests seed it).
struct JitterSource: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed == 0 ? 0x9E37_79B9_7F4A_7C15 : seed }

    mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 0x2545_F491_4F6C_DD1D
    }
}
