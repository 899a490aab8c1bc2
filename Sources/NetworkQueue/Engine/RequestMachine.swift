import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One request's life: its phase (``RequestState``), which only its events in this file move, and what lives for
/// the whole request. Each event switches over the phase and returns an ``Action`` saying what the coordinator
/// (``QueueStateMachine``) must do with the shared resources; an event its phase cannot take stops the process,
/// naming both. Events that leave the phase as it is are in `RequestMachine+Attempt.swift`.
struct RequestMachine {
    /// Where the request is. Only the machine's events assign it.
    private(set) var phase = RequestState.pending
    /// How many attempts were begun (an attempt begins when it gets its slot, before any adapt hook).
    private(set) var attempts = 0
    /// True once didStart was posted: once per request, not per attempt.
    private(set) var hasStarted = false
    /// True when an attempt ended (a pause, a retry) keeping its part for the next one, which takes it over.
    private(set) var hasKeptPart = false
    /// When the request's first transfer started (queue clock), for the log's "finished in".
    private(set) var startedAt: Double?
    /// When the request last moved a byte or changed phase: its idle timeout counts from here.
    private(set) var lastActivity: Double = 0

    /// The scheduler gave the request a slot in `lane`: its adapt hooks run first (`hooks`), else its HEAD or
    /// its transfer starts, sending `sent` (its own request).
    mutating func granted(
        _ lane: Scheduler.Lane, hooks: Bool, sending sent: URLRequest, expectedBefore: Int64?,
        nextToken: inout UInt64, now: Double
    ) -> Action {
        if lane == .main { attempts += 1 }
        guard hooks else { return start(lane == .preflight, sent, expectedBefore, &nextToken, now: now) }
        nextToken += 1
        switch phase {
        case .awaitingPreflight where lane == .preflight: phase = .adaptingPreflight(token: nextToken)
        case .pending where lane == .main, .awaitingMain where lane == .main: phase = .adaptingMain(token: nextToken)
        case .pending, .awaitingPreflight, .preflighting, .awaitingMain, .adaptingPreflight, .adaptingMain, .running,
            .deciding, .waitingToRetry, .committing, .following, .paused:
            illegal("a slot in the \(lane) lane")
        }
        lastActivity = now
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
            illegal("adapt hooks answering")
        }
        switch outcome {
        case .failure(let error): return .attemptFailed(error)
        case .success(let sent): return start(preflight, sent, expectedBefore, &nextToken, now: now)
        }
    }

    /// Starts the HEAD (`preflight`) or a new attempt sending `sent`.
    private mutating func start(
        _ preflight: Bool, _ sent: URLRequest, _ expectedBefore: Int64?, _ nextToken: inout UInt64, now: Double
    ) -> Action {
        nextToken += 1
        lastActivity = now
        switch phase {
        case .awaitingPreflight where preflight, .adaptingPreflight where preflight:
            let started = RequestState.Preflight(token: nextToken, cell: TransferCell())
            phase = .preflighting(started)
            return .startPreflight(started, sending: sent)
        case .pending where !preflight, .awaitingMain where !preflight, .adaptingMain where !preflight:
            phase = .running(
                Attempt(
                    token: nextToken, cell: TransferCell(), sent: sent, startedAt: now, expectedBefore: expectedBefore))
        case .pending, .awaitingPreflight, .preflighting, .awaitingMain, .adaptingPreflight, .adaptingMain, .running,
            .deciding, .waitingToRetry, .committing, .following, .paused:
            illegal(preflight ? "a preflight starting" : "a transfer starting")
        }
        if startedAt == nil { startedAt = now }
        // Once per request: a retry is not a new start to the delegate.
        defer { hasStarted = true }
        return .startTransfer(phase.attempt!, first: !hasStarted, replacing: nil)
    }

    /// The server refused to continue the part (416, or a 206 for other bytes), or the continued file did not
    /// verify: the same attempt's request is sent again at once without a range, in the same slot.
    mutating func sendAgainWithoutRange(expectedBefore: Int64?, nextToken: inout UInt64, now: Double) -> Action {
        guard case .running(let refused) = phase else { illegal("sending again without a range") }
        nextToken += 1
        lastActivity = now
        let attempt = Attempt(
            token: nextToken, cell: TransferCell(), sent: refused.sent, startedAt: now, expectedBefore: expectedBefore)
        phase = .running(attempt)
        return .startTransfer(attempt, first: false, replacing: refused)
    }

    /// The shell opened the attempt's file: it takes over the part (continuing or replacing it).
    mutating func fileOpened(_ sink: FileSink) -> Action {
        guard case .running(let attempt) = phase else { illegal("a file opening") }
        hasKeptPart = false
        attempt.sink = sink
        attempt.continuedFrom = sink.continuedFrom
        return .none
    }

    /// The final head of the running attempt arrived (`received`: its bytes counted so far).
    mutating func headRead(
        _ reading: HeadReading, of request: NetworkRequest, received: Int64, wallClock: Date, now: Double
    ) -> HeadAction {
        guard case .running(let attempt) = phase else { illegal("a response head") }
        let head = reading.head
        guard !ResponseRules.isInterim(head) else { return .interim }
        var continuation = Continuation.fresh
        var continuedTotal: Int64?
        switch reading.continuation {
        case .append(let total)?:
            continuation = .appended(offset: attempt.continuedFrom)
            continuedTotal = total ?? ResponseRules.knownLength(of: head).map { $0 + attempt.continuedFrom }
        case .restartWithoutRange?:
            return .refusedRange(offset: attempt.continuedFrom)
        case .startOver?:
            continuation = .startedOver(offset: attempt.continuedFrom)
            attempt.continuedFrom = 0
        case .unrelated?:
            continuation = .unrelated
            attempt.continuedFrom = 0
        case nil:
            if attempt.head != nil || received > 0 {
                continuation = .restarted
                attempt.body = Data()
            }
        }
        let encoded = ResponseRules.isEncoded(head)
        let length = continuedTotal ?? ResponseRules.knownLength(of: head, encoded: encoded)
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
    }

    /// The running attempt ended well (`received` body bytes): it succeeds, or first moves its `file` into place.
    mutating func transferSucceeded(received: Int64, file: URL?, metrics: RequestMetrics?) -> Action {
        guard case .running(let attempt) = phase else { illegal("a transfer completing") }
        guard let head = attempt.head else { return .attemptFailed(.transport(URLError(.badServerResponse))) }
        let method = attempt.sent.httpMethod
        if ResponseRules.isShort(head, method: method, received: received, knownLength: attempt.announcedLength) {
            return .attemptFailed(.transport(URLError(.networkConnectionLost)))
        }
        guard let file else { return .end(.success(NetworkResponse(head: head, body: attempt.body, metrics: metrics))) }
        guard let sink = attempt.sink else {
            return .attemptFailed(.fileError(path: file.path, reason: "no file open"))
        }
        phase = .committing(attempt)
        return .commit(attempt, sink)
    }

    /// The current attempt failed with `error`. When the retry `policy` allows another attempt the request
    /// leaves it (`left` in the action: its part is kept when `continuesParts`) and asks the policy's closure
    /// or waits; otherwise it ends with the failure. Only main attempts are retried: a preflight's failure
    /// is final, as is a failure while committing or deciding.
    mutating func attemptEnded(
        _ error: NetworkQueueError, policy: RetryPolicy, method: String, continuesParts: Bool,
        nextToken: inout UInt64, jitter: inout JitterSource, now: Double
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
        if attempt?.sink != nil { hasKeptPart = continuesParts }
        nextToken += 1
        if verdict == .ask, policy.decide != nil {
            lastActivity = now
            let decision = RequestState.Decision(
                token: nextToken, failure: error, retryAfter: attempt?.retryAfter, lastHead: attempt?.head)
            phase = .deciding(decision)
            return .askRetry(decision, left: attempt)
        }
        return wait(
            verdict, error, policy: policy, lastHead: attempt?.head, token: nextToken, jitter: &jitter, left: attempt)
    }

    /// The retry policy's closure answered `decision` about the failed attempt.
    mutating func retryDecided(
        _ decision: RetryPolicy.Decision, policy: RetryPolicy, method: String, nextToken: inout UInt64,
        jitter: inout JitterSource
    ) -> Action {
        guard case .deciding(let deciding) = phase else { illegal("a retry decision") }
        let verdict = RetryRules.verdict(
            after: decision, policy: policy, error: deciding.failure, method: method, retryAfter: deciding.retryAfter)
        if verdict == .fail || verdict == .ask { return .end(.failure(deciding.failure)) }
        nextToken += 1
        return wait(
            verdict, deciding.failure, policy: policy, lastHead: deciding.lastHead, token: nextToken, jitter: &jitter,
            left: nil)
    }

    /// Waits for the retry as `verdict` says.
    private mutating func wait(
        _ verdict: RetryVerdict, _ error: NetworkQueueError, policy: RetryPolicy, lastHead: ResponseHead?,
        token: UInt64,
        jitter: inout JitterSource, left: Attempt?
    ) -> Action {
        let (delay, serverAsked): (Double, Bool)
        switch verdict {
        case .backoff: (delay, serverAsked) = (policy.backoff.delay(forRetry: attempts, using: &jitter), false)
        case .wait(let seconds, let asked): (delay, serverAsked) = (seconds, asked)
        case .fail, .ask: preconditionFailure("no wait for verdict \(verdict)")
        }
        // Its callers checked the phase: running or adapting (an attempt failed), or deciding.
        let wait = RequestState.RetryWait(token: token, serverAsked: serverAsked, lastHead: lastHead)
        phase = .waitingToRetry(wait)
        return .waitToRetry(wait, delay: delay, error: error, left: left)
    }

    /// Its retry time came (or its server recovered: an early retry): it waits for a slot again.
    mutating func retryTimeCame() -> Action {
        guard case .waitingToRetry = phase else { illegal("a retry time") }
        phase = .pending
        return .rejoin
    }

    /// A HEAD is planned first (go() with accurate progress, or an existing file to check).
    mutating func planPreflight() -> Action {
        guard case .pending = phase else { illegal("a preflight planned") }
        phase = .awaitingPreflight
        return .none
    }

    /// The HEAD ended (`error` nil: well). A failed HEAD that checked an existing file leaves it to the GET.
    mutating func preflightEnded(error: URLError?, checksExistingFile: Bool, file: URL?) -> Action {
        guard case .preflighting(let preflight) = phase else { illegal("a preflight ending") }
        if let error, !checksExistingFile { return .attemptFailed(.preflightFailed(Redaction.redacted(error))) }
        if error == nil, let head = preflight.unchangedHead {
            // The file on disk is the resource: kept as it is, no GET.
            return .end(.success(NetworkResponse(head: head, body: Data(), fileURL: file, keptExistingFile: true)))
        }
        phase = .awaitingMain
        return .preflightDone
    }

    /// Pauses the request, unless committing, following or paused (a user's call may race). A stopped attempt's
    /// part is kept when `continuesParts`; an interrupted attempt does not count.
    mutating func pause(continuesParts: Bool) -> Action {
        var withPreflight = false
        var stopped: Attempt?
        switch phase {
        case .committing, .following, .paused: return .none
        case .awaitingPreflight, .adaptingPreflight, .preflighting: withPreflight = true
        case .running(let attempt):
            stopped = attempt
            attempts -= 1
            if attempt.sink != nil { hasKeptPart = continuesParts }
        case .adaptingMain: attempts -= 1  // never sent
        case .pending, .awaitingMain, .deciding, .waitingToRetry: break
        }
        phase = .paused(withPreflight: withPreflight)
        return .paused(stopped: stopped)
    }

    /// Resumes a paused request (nothing happens otherwise: a user's call may race with its end).
    mutating func resume() -> Action {
        guard case .paused(let withPreflight) = phase else { return .none }
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
            illegal(leader == nil ? "a leader's work inherited" : "following a leader")
        }
        return .none
    }

    /// The current transfer was heard from at `now`: its idle timeout counts from here.
    mutating func heard(at now: Double) -> Action {
        lastActivity = now
        return .none
    }
}
