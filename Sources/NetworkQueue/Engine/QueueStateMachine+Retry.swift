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
        guard record.phase == .running || record.phase == .adaptingMain else { return false }
        let policy = policy(of: record)
        let verdict = RetryRules.verdict(
            policy: policy, error: error, method: record.request.urlRequest.httpMethod, attempts: record.attempts,
            retryAfter: record.retryAfter)
        guard verdict != .fail else { return false }
        leaveAttempt(slot, transferEnded: transferEnded, now: now)
        if verdict == .ask, let decide = policy.decide {
            nextToken += 1
            record.token = nextToken
            record.phase = .deciding
            record.failure = error
            record.lastActivity = now
            addTimeout(slot: slot, token: nextToken, record.request.urlRequest.timeoutInterval, now: now)
            actions.list.append(.publish(record.request, record.status()))
            actions.list.append(
                .decide(.init(slot: slot, token: nextToken, request: record.request, error: error, attempts: record.attempts, decide: decide)))
        } else {
            wait(slot, verdict, policy: policy, error: error, now: now)
        }
        return true
    }

    /// The retry policy's closure answered about the attempt that failed in `slot`.
    mutating func retryDecided(slot: Int, token: UInt64, _ decision: RetryPolicy.Decision, now: Double) -> QueueActions {
        guard table.isCurrent(slot, token: token), table[slot].phase == .deciding, let error = table[slot].failure else {
            return finishEvent(now)  // cancelled meanwhile
        }
        let record = table[slot]
        record.failure = nil
        let policy = policy(of: record)
        let verdict = RetryRules.verdict(
            after: decision, policy: policy, error: error, method: record.request.urlRequest.httpMethod, retryAfter: record.retryAfter)
        if verdict == .fail || verdict == .ask {
            failFinally(slot, error, transferEnded: true, now: now)
        } else {
            wait(slot, verdict, policy: policy, error: error, now: now)
        }
        return finishEvent(now)
    }

    /// Ends the current attempt: frees its slot, stops its transfer (unless the transport reported its
    /// end), drops its partial file and body, and takes its bytes out of the progress (which holds still:
    /// the expected total grows back instead).
    private mutating func leaveAttempt(_ slot: Int, transferEnded: Bool, now: Double) {
        if !transferEnded { measureStoppedAttempt(slot, now: now) }
        let record = table[slot]
        scheduler.remove(Job(id: slot, lane: .main))
        if !transferEnded, let transfer = record.transfer { actions.list.append(.cancel(transfer)) }
        record.transfer = nil
        var keepsPart = false
        if let sink = record.sink {
            // The next attempt continues the part when it can (the sink keeps it only with a validator);
            // its bytes stay counted until that attempt's response says whether they still count.
            keepsPart = record.request.resumesDownloads
            record.hasKeptPart = keepsPart
            actions.list.append(keepsPart ? .keep(sink) : .discard(sink))
            record.sink = nil
        }
        record.body = Data()
        if !keepsPart { ledger.restart(&record.progress) }
        if record.progress.expectedDown != record.expectedBeforeAttempt {
            // The size came from this attempt's response (perhaps an error page's): back to what was known.
            ledger.replaceExpectedDownload(&record.progress, record.expectedBeforeAttempt)
        }
        record.downloadDirty = record.request.downloadProgressHandler != nil
        record.uploadDirty = record.request.uploadProgressHandler != nil
        markProgressDirty(at: now)
    }

    /// Makes the request wait for its retry, as `verdict` says, and posts willRetry.
    private mutating func wait(_ slot: Int, _ verdict: RetryVerdict, policy: RetryPolicy, error: NetworkQueueError, now: Double) {
        let record = table[slot]
        let delay: Double
        switch verdict {
        case .backoff:
            delay = policy.backoff.delay(forRetry: record.attempts, using: &jitter)
            record.serverAskedWait = false
        case .wait(let seconds, let serverAsked):
            delay = seconds
            record.serverAskedWait = serverAsked
        case .fail, .ask:
            preconditionFailure("no wait for verdict \(verdict)")
        }
        nextToken += 1
        record.token = nextToken
        record.phase = .waitingToRetry
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
        record.phase = .pending
        record.serverAskedWait = false
        waitingRetries -= 1
        scheduler.enqueue(Job(id: slot, lane: .main))
        actions.list.append(.publish(record.request, record.status()))
    }

    /// Requests whose retry time has come rejoin the pending ones (called by the timer).
    mutating func expireRetryWaits(_ now: Double) {
        for entry in retryDeadlines.popDue(at: now)
        where table.isCurrent(entry.id, token: entry.token) && table[entry.id].phase == .waitingToRetry {
            rejoin(entry.id)
        }
    }

    /// `request` succeeded: requests to its server waiting out a backoff (not a `Retry-After`) are
    /// retried now, when their policy allows it.
    mutating func retryEarly(after request: NetworkRequest, now: Double) {
        guard let host = RequestRules.hostKey(request.url) else { return }
        let early = table.records.filter { _, record in
            record.phase == .waitingToRetry && !record.serverAskedWait
                && policy(of: record).retriesEarlyWhenHostRecovers
                && RequestRules.hostKey(record.request.url) == host
        }
        for (slot, _) in early.sorted(by: { $0.record.sequence < $1.record.sequence }) { rejoin(slot) }
    }

    // MARK: Adapt hooks

    /// The adapt hooks of the attempt `token` returned the request to send, or threw.
    mutating func adapted(
        slot: Int, token: UInt64, _ outcome: Result<URLRequest, NetworkQueueError.UnderlyingError>, now: Double
    ) -> QueueActions {
        guard table.isCurrent(slot, token: token), table[slot].phase.isAdapting else {
            return finishEvent(now)  // ended meanwhile
        }
        let lane: Scheduler.Lane = table[slot].phase == .adaptingPreflight ? .preflight : .main
        switch outcome {
        case .failure(let error):
            fail(slot, .adaptationFailed(error), transferEnded: true, now: now)
        case .success(let urlRequest):
            if let problem = RequestRules.validate(urlRequest, destination: table[slot].request.destination) {
                fail(slot, .invalidRequest(problem), transferEnded: true, now: now)
            } else {
                startTransfer(slot, lane: lane, urlRequest, now: now)
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
