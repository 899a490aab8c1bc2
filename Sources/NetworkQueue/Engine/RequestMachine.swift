import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One request's life: its phase (``RequestState``), which only the events in this file move, and what lives for
/// the whole request. Each event returns an ``Action``: what the coordinator (``QueueStateMachine``) must do with
/// the shared resources. An event its phase cannot take stops the process, naming both.
struct RequestMachine {
    /// Where the request is. Only the machine's events assign it.
    private(set) var phase = RequestState.pending
    // In this order (flag, count behind the phase's tag; the clock's tag last): 41 bytes per waiting request.
    /// True once didStart was posted: once per request, not per attempt.
    private(set) var hasStarted = false
    /// ``attempts``, kept in 32 bits beside the flag.
    private var attemptCount: Int32 = 0
    /// When the request last moved a byte or changed phase (the coordinator notes its transfer's events here).
    var lastActivity: Double = 0
    /// ``startedAt``, NaN until then (an optional would take a tag and padding).
    private var firstStart = Double.nan
    /// The request's deadline clock (see ``TimeLimits/deadline``): started with its first slot, stopped while
    /// paused, started again for its transfer after a HEAD.
    private(set) var deadline = DeadlineClock.notStarted
    /// How many attempts were begun (an attempt begins when it gets its slot, before any adapt hook).
    var attempts: Int { Int(attemptCount) }
    /// When the request's first transfer started (queue clock), for the log's "finished in".
    var startedAt: Double? { firstStart.isNaN ? nil : firstStart }

    /// The scheduler gave the request a slot in `lane`: its adapt hooks run first (`hooks`), else its HEAD or
    /// its transfer starts, sending `sent` (its own request). Its deadline clock starts (`deadline` seconds long,
    /// nil: none) unless it runs already.
    mutating func granted(
        _ lane: Scheduler.Lane, hooks: Bool, sending sent: URLRequest, expectedBefore: Int64?, deadline limit: Double?,
        nextToken: inout UInt64, now: Double
    ) -> Action {
        switch phase {
        case .awaitingPreflight where lane == .preflight, .pending where lane == .main,
            .awaitingMain where lane == .main:
            if lane == .main { attemptCount += 1 }
            if deadline == .notStarted, let limit { deadline = .running(until: now + limit) }
        case .pending, .awaitingPreflight, .preflighting, .awaitingMain, .adaptingPreflight, .adaptingMain, .running,
            .deciding, .waitingToRetry, .committing, .following, .paused:
            preconditionFailure("a slot in the \(lane) lane in phase \(phase.name)")
        }
        guard hooks else { return start(lane == .preflight, sent, expectedBefore, &nextToken, now: now) }
        nextToken += 1
        lastActivity = now
        phase = lane == .preflight ? .adaptingPreflight(token: nextToken) : .adaptingMain(token: nextToken)
        return .adapt(token: nextToken)
    }

    /// The adapt hooks answered with the request to send (already validated) or a failure.
    mutating func adapted(
        _ outcome: Result<URLRequest, NetworkQueueError>, expectedBefore: Int64?, nextToken: inout UInt64,
        now: Double
    ) -> Action {
        let preflight: Bool
        switch phase {
        case .adaptingPreflight: preflight = true
        case .adaptingMain: preflight = false
        case .pending, .awaitingPreflight, .preflighting, .awaitingMain, .running, .deciding, .waitingToRetry,
            .committing, .following, .paused:
            preconditionFailure("adapt hooks answering in phase \(phase.name)")
        }
        switch outcome {
        case .failure(let error): return .attemptFailed(error)
        case .success(let sent): return start(preflight, sent, expectedBefore, &nextToken, now: now)
        }
    }

    /// Starts the HEAD (`preflight`) or a new attempt sending `sent`; `replacing`: the running attempt, sent
    /// again without a range.
    private mutating func start(
        _ preflight: Bool, _ sent: URLRequest, _ expectedBefore: Int64?, _ nextToken: inout UInt64,
        replacing: Attempt? = nil, now: Double
    ) -> Action {
        nextToken += 1
        lastActivity = now
        switch phase {
        case .awaitingPreflight where preflight, .adaptingPreflight where preflight:
            let started = RequestState.Preflight(token: nextToken, cell: TransferCell(), sent: sent)
            phase = .preflighting(started)
            return .startPreflight(started)
        case .pending where !preflight, .awaitingMain where !preflight, .adaptingMain where !preflight,
            .running where replacing != nil:
            let attempt = Attempt(
                token: nextToken, cell: TransferCell(), sent: sent, startedAt: now, expectedBefore: expectedBefore)
            phase = .running(attempt)
            if firstStart.isNaN { firstStart = now }
            // Once per request: a retry is not a new start to the delegate.
            defer { hasStarted = true }
            return .startTransfer(attempt, first: !hasStarted, replacing: replacing)
        case .pending, .awaitingPreflight, .preflighting, .awaitingMain, .adaptingPreflight, .adaptingMain, .running,
            .deciding, .waitingToRetry, .committing, .following, .paused:
            preconditionFailure("a \(preflight ? "preflight" : "transfer") starting in phase \(phase.name)")
        }
    }

    /// A final head arrived (`received`: the bytes counted so far). A HEAD's is kept when it says the existing
    /// file is unchanged; an attempt's says what becomes of the part, the size and the problem that fails it, and
    /// a part the server refused to continue is sent again at once without a range, in the same slot.
    mutating func headRead(
        _ reading: HeadReading, of request: NetworkRequest, received: Int64, existingFile: ExistingFileRules.FileState?,
        expectedBefore: Int64?, wallClock: Date, nextToken: inout UInt64, now: Double
    ) -> HeadAction {
        switch phase {
        case .preflighting(let preflight):
            if let existingFile, ExistingFileRules.isUnchanged(reading.head, file: existingFile) {
                preflight.unchangedHead = reading.head
            } else if let limit = request.maximumResponseSize, (200..<300).contains(reading.head.statusCode),
                let length = ResponseRules.knownLength(of: reading.head), length > limit
            {
                // The size is known before the GET: a body over the limit is not asked for (issue 50).
                preflight.tooLarge = .responseTooLarge(limit: limit, url: reading.head.url)
            }
            return .interim
        case .running(let attempt):
            let head = reading.head
            guard !ResponseRules.isInterim(head) else { return .interim }
            var continuation = Continuation.fresh
            var total: Int64?
            switch reading.continuation {
            case .append(let whole)?:
                continuation = .appended(offset: attempt.continuedFrom)
                total = whole ?? ResponseRules.knownLength(of: head).map { $0 + attempt.continuedFrom }
            case .restartWithoutRange?:
                let restart = start(false, attempt.sent, expectedBefore, &nextToken, replacing: attempt, now: now)
                return .refusedRange(offset: attempt.continuedFrom, restart: restart)
            case .startOver?: continuation = .startedOver(offset: attempt.continuedFrom)
            case .unrelated?: continuation = .unrelated
            case nil: if attempt.head != nil || received > 0 { continuation = .restarted }
            }
            switch continuation {
            case .startedOver, .unrelated: attempt.continuedFrom = 0
            case .restarted: attempt.body = Data()
            case .fresh, .appended: break
            }
            let encoded = ResponseRules.isEncoded(head)
            let length = total ?? ResponseRules.knownLength(of: head, encoded: encoded)
            let problem = ResponseRules.check(
                head, isAcceptableStatus: reading.isAcceptable, acceptableContentTypes: request.acceptableContentTypes,
                maximumResponseSize: request.maximumResponseSize, expectedLength: length)
            attempt.head = head
            attempt.headAt = now
            attempt.announcedLength = length
            // Read only for a failing status: a retry honours it.
            attempt.retryAfter = nil
            if case .unacceptableStatus? = problem { attempt.retryAfter = RetryRules.retryAfter(head, now: wallClock) }
            return .read(continuation, length: length, encoded: encoded, problem: problem)
        case .pending, .awaitingPreflight, .awaitingMain, .adaptingPreflight, .adaptingMain, .deciding,
            .waitingToRetry, .committing, .following, .paused:
            preconditionFailure("a response head in phase \(phase.name)")
        }
    }

    /// The transport reported the end of the current transfer, as `outcome` says. A HEAD that failed while
    /// checking an existing file (`existingFile`) leaves the decision to the GET; one that failed with `mirrors`
    /// left asks the next mirror, and fails the request only when none is left.
    /// `file` is the claimed destination.
    mutating func transferEnded(
        _ outcome: TransferOutcome, received: Int64, file: URL?, checksExistingFile: Bool, metrics: RequestMetrics?,
        expectedBefore: Int64?, mirrors: Int = 0, nextToken: inout UInt64, now: Double
    ) -> Action {
        switch phase {
        case .preflighting(let preflight):
            if case .failed(let error) = outcome, !checksExistingFile {
                if FailoverRules.verdict(afterHeadOf: preflight.source, count: mirrors + 1) == .nextSource {
                    nextToken += 1
                    lastActivity = now
                    let next = RequestState.Preflight(
                        token: nextToken, cell: TransferCell(), source: preflight.source + 1, sent: preflight.sent)
                    phase = .preflighting(next)
                    return .startPreflight(next)
                }
                return .attemptFailed(.preflightFailed(Redaction.redacted(error)))
            }
            if case .succeeded = outcome, let head = preflight.unchangedHead {
                // The file on disk is the resource: kept as it is, no GET.
                return .end(.success(.init(head: head, body: Data(), fileURL: file, keptExistingFile: true)))
            }
            if case .succeeded = outcome, let tooLarge = preflight.tooLarge { return .attemptFailed(tooLarge) }
            phase = .awaitingMain
            // The HEAD's deadline ends with it: the transfer's starts with its slot.
            deadline = .notStarted
            return .preflightDone
        case .running(let attempt):
            let action = attempt.ended(outcome, received: received, file: file, metrics: metrics)
            if case .sendAgainWithoutRange = action {
                return start(false, attempt.sent, expectedBefore, &nextToken, replacing: attempt, now: now)
            }
            if case .commit = action { phase = .committing(attempt) }
            return action
        case .pending, .awaitingPreflight, .awaitingMain, .adaptingPreflight, .adaptingMain, .deciding,
            .waitingToRetry, .committing, .following, .paused:
            preconditionFailure("a transfer ending in phase \(phase.name)")
        }
    }

    /// The current attempt failed with `error`. When the retry `policy` allows another attempt the request
    /// leaves it (`left` in the action) and asks the policy's closure
    /// or waits; otherwise it ends with the failure. Only main attempts are retried: a preflight's failure
    /// is final, as is a failure while committing or deciding.
    mutating func attemptEnded(
        _ error: NetworkQueueError, policy: RetryPolicy, method: String, nextToken: inout UInt64,
        jitter: inout JitterSource, now: Double
    ) -> Action {
        let attempt: Attempt?
        switch phase {
        case .running(let running): attempt = running
        case .adaptingMain: attempt = nil
        case .pending, .awaitingPreflight, .preflighting, .awaitingMain, .adaptingPreflight, .deciding,
            .waitingToRetry, .committing, .following, .paused:
            return .end(.failure(error))
        }
        let verdict = RetryRules.verdict(
            policy: policy, error: error, method: method, attempts: attempts, retryAfter: attempt?.retryAfter)
        guard verdict != .fail else { return .end(.failure(error)) }
        nextToken += 1
        if verdict == .ask, policy.decide != nil {
            lastActivity = now
            let decision = RequestState.Decision(
                token: nextToken, failure: error, retryAfter: attempt?.retryAfter, lastHead: attempt?.head)
            phase = .deciding(decision)
            return .askRetry(decision, left: attempt)
        }
        return wait(verdict, error, policy, attempt?.head, nextToken, &jitter, left: attempt, now: now)
    }

    /// The retry policy's closure answered `decision` about the failed attempt.
    mutating func retryDecided(
        _ decision: RetryPolicy.Decision, policy: RetryPolicy, method: String, nextToken: inout UInt64,
        jitter: inout JitterSource, now: Double
    ) -> Action {
        guard case .deciding(let deciding) = phase else { preconditionFailure("a decision in phase \(phase.name)") }
        let error = deciding.failure
        let verdict = RetryRules.verdict(
            after: decision, policy: policy, error: error, method: method, retryAfter: deciding.retryAfter)
        if verdict == .fail || verdict == .ask { return .end(.failure(error)) }
        nextToken += 1
        return wait(verdict, error, policy, deciding.lastHead, nextToken, &jitter, left: nil, now: now)
    }

    /// Waits for the retry as `verdict` says, unless the wait would end at or past the deadline: no attempt could
    /// follow, so the request ends with the attempt's failure now.
    private mutating func wait(
        _ verdict: RetryVerdict, _ error: NetworkQueueError, _ policy: RetryPolicy, _ lastHead: ResponseHead?,
        _ token: UInt64, _ jitter: inout JitterSource, left: Attempt?, now: Double
    ) -> Action {
        let (delay, serverAsked): (Double, Bool)
        switch verdict {
        case .backoff: (delay, serverAsked) = (policy.backoff.delay(forRetry: attempts, using: &jitter), false)
        case .wait(let seconds, let asked): (delay, serverAsked) = (seconds, asked)
        case .fail, .ask: preconditionFailure("no wait for verdict \(verdict)")
        }
        if case .running(let until) = deadline, now + delay >= until { return .end(.failure(error)) }
        // Its callers checked the phase: running or adapting (an attempt failed), or deciding.
        let wait = RequestState.RetryWait(token: token, serverAsked: serverAsked, lastHead: lastHead)
        phase = .waitingToRetry(wait)
        return .waitToRetry(wait, delay: delay, error: error, left: left)
    }

    /// The request's retry time came (or its server recovered): it waits for a slot again.
    mutating func retryTimeCame() -> Action {
        guard case .waitingToRetry = phase else { preconditionFailure("a retry time in phase \(phase.name)") }
        phase = .pending
        return .rejoin
    }

    /// A HEAD is planned first (go() with accurate progress, or an existing file to check).
    mutating func planPreflight() -> Action {
        guard case .pending = phase else { preconditionFailure("a preflight planned in phase \(phase.name)") }
        phase = .awaitingPreflight
        return .none
    }

    /// Pauses the request at `now`, unless committing, following or paused (a user's call may race), and stops its
    /// deadline clock. A stopped attempt does not count: it was interrupted, not failed.
    mutating func pause(now: Double) -> Action {
        var withPreflight = false
        var stopped: Attempt?
        switch phase {
        case .committing, .following, .paused: return .none
        case .awaitingPreflight, .adaptingPreflight, .preflighting: withPreflight = true
        case .running(let attempt):
            stopped = attempt
            attemptCount -= 1
        case .adaptingMain: attemptCount -= 1  // never sent
        case .pending, .awaitingMain, .deciding, .waitingToRetry: break
        }
        if case .running(let until) = deadline { deadline = .stopped(left: max(0, until - now)) }
        phase = .paused(withPreflight: withPreflight)
        return .paused(stopped: stopped)
    }

    /// Resumes a paused request at `now`, its deadline clock running again (nothing happens otherwise: a user's
    /// call may race with its end).
    mutating func resume(now: Double) -> Action {
        guard case .paused(let withPreflight) = phase else { return .none }
        if case .stopped(let left) = deadline { deadline = .running(until: now + left) }
        phase = withPreflight ? .awaitingPreflight : .pending
        return .resumed(withPreflight: withPreflight)
    }

    /// Follows the request in slot `leader` (added as its duplicate, or handed to a new leader), or (nil) takes
    /// over its cancelled leader's work and waits for a slot of its own.
    mutating func follow(_ leader: Int?) -> Action {
        switch phase {
        case .pending where leader != nil, .following: phase = leader.map { .following(leader: $0) } ?? .pending
        case .pending, .awaitingPreflight, .preflighting, .awaitingMain, .adaptingPreflight, .adaptingMain, .running,
            .deciding, .waitingToRetry, .committing, .paused:
            preconditionFailure("\(leader == nil ? "a leader's work inherited" : "a leader") in phase \(phase.name)")
        }
        return .none
    }
}
