import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One request's life: its phase (``RequestState``), which only the events in this file move, and what lives for
/// the whole request. Each event returns an ``Action``: what the coordinator (``QueueStateMachine``) must do with
/// the shared resources. An event that fails an attempt returns the final action itself (its retry verdict, through
/// ``RetryRules``): nothing is handed back for a second decision. An event its phase cannot take stops the process,
/// naming both.
struct RequestMachine {
    /// What every request's machine draws on, held once by the coordinator: the next token to hand out, the backoff's
    /// jitter, and the retry policy of requests that have none of their own.
    struct Shared {
        var nextToken: UInt64 = 0
        var jitter: JitterSource
        var retryPolicy = RetryPolicy()
    }

    /// Where the request is. Only the machine's events assign it.
    private(set) var phase = RequestState.pending
    // In this order (flag, count behind the phase's tag; the clock's tag last): 41 bytes per waiting request.
    /// True once didStart was posted: once per request, not per attempt.
    private(set) var hasStarted = false
    /// The HEADs of this request that failed: a HEAD is an attempt of its request (DESIGN semantics 8), retried under
    /// its retry policy as its GET is, and counted apart, so that its GET still has the whole budget (a failed HEAD
    /// never leaves a request worse off than no HEAD). Kept in the padding beside the flag.
    private(set) var failedHeads: UInt16 = 0
    /// ``attempts``, kept in 32 bits beside the flag.
    private var attemptCount: Int32 = 0
    /// When the request last moved a byte or changed phase (``touched(at:sent:)`` notes its transfer's events).
    private(set) var lastActivity: Double = 0
    /// ``startedAt``, NaN until then (an optional would take a tag and padding).
    private var firstStart = Double.nan
    /// The request's deadline clock (see ``TimeLimits/deadline``): started with its first slot, stopped while
    /// paused, started again for its transfer after a HEAD.
    private(set) var deadline = DeadlineClock.notStarted
    /// How many attempts were begun (an attempt begins when it gets its slot, before any adapt hook).
    var attempts: Int { Int(attemptCount) }
    /// When the request's first transfer started (queue clock), for the log's "finished in".
    var startedAt: Double? { firstStart.isNaN ? nil : firstStart }

    /// Decides `event` of `request` at `now` (with what every request's machine draws on): the one door of the
    /// request's events but a head, its transfer's signs of life and its split file's events. An event its phase
    /// cannot take stops the process, naming both.
    mutating func handle(_ event: Event, of request: NetworkRequest, _ shared: inout Shared, now: Double) -> Action {
        switch event {
        case .granted(let lane, let hooks, let sent, let expectedBefore, let limit):
            return granted(
                lane, hooks: hooks, sending: sent, expectedBefore: expectedBefore, deadline: limit, &shared, now: now)
        case .adapted(let outcome, let expectedBefore):
            return adapted(outcome, of: request, expectedBefore: expectedBefore, &shared, now: now)
        case .transferEnded(let outcome, let received, let file, let checksExistingFile, let metrics, let expected):
            return transferEnded(
                outcome, of: request, received: received, file: file, checksExistingFile: checksExistingFile,
                metrics: metrics, expectedBefore: expected, &shared, now: now)
        case .bodyPiece(let data, let received):
            return bodyPiece(keeping: data, received: received, of: request, &shared, now: now)
        case .heldByServer: return heldByServer(&shared, now: now)
        case .attemptEnded(let error): return attemptEnded(error, of: request, &shared, now: now)
        case .retryDecided(let decision): return retryDecided(decision, of: request, &shared, now: now)
        case .retryTimeCame: return retryTimeCame()
        case .planPreflight: return planPreflight()
        case .skipPreflight: return skipPreflight()
        case .pause: return pause(now: now)
        case .resume: return resume(now: now)
        case .follow(let leader): return follow(leader)
        case .timedCheck(let idle, let speed):
            return timedCheck(idle: idle, speed: speed, of: request, &shared, now: now)
        case .deadlinePassed(let seconds, let url): return deadlinePassed(seconds: seconds, url: url, now: now)
        case .cancel: return cancel()
        case .file(let fileEvent, let url, let metrics):
            return file(fileEvent, of: request, file: url, metrics: metrics, &shared, now: now)
        }
    }

    /// ``Event/granted(_:hooks:sending:expectedBefore:deadline:)``: the hooks run, or the HEAD or the transfer starts.
    private mutating func granted(
        _ lane: Scheduler.Lane, hooks: Bool, sending sent: OutgoingRequest, expectedBefore: Int64?,
        deadline limit: Double?,
        _ shared: inout Shared, now: Double
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
        guard hooks else { return start(lane == .preflight, sent, expectedBefore, &shared, now: now) }
        shared.nextToken += 1
        lastActivity = now
        phase =
            lane == .preflight ? .adaptingPreflight(token: shared.nextToken) : .adaptingMain(token: shared.nextToken)
        return .adapt(token: shared.nextToken)
    }

    /// The adapt hooks of `request` answered with the request to send (already validated) or a failure.
    private mutating func adapted(
        _ outcome: Result<URLRequest, NetworkQueueError>, of request: NetworkRequest, expectedBefore: Int64?,
        _ shared: inout Shared, now: Double
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
        case .failure(let error): return attemptEnded(error, of: request, &shared, now: now)
        case .success(let sent): return start(preflight, .request(sent), expectedBefore, &shared, now: now)
        }
    }

    /// Starts the HEAD (`preflight`) or a new attempt sending `sent`; `replacing`: the running attempt, sent
    /// again without a range.
    private mutating func start(
        _ preflight: Bool, _ sent: OutgoingRequest, _ expectedBefore: Int64?, _ shared: inout Shared,
        replacing: Attempt? = nil, now: Double
    ) -> Action {
        shared.nextToken += 1
        let nextToken = shared.nextToken
        lastActivity = now
        switch phase {
        case .awaitingPreflight where preflight, .adaptingPreflight where preflight:
            let started = RequestState.Preflight(
                token: nextToken, cell: TransferCell.makeCell(), sent: sent, startedAt: now)
            phase = .preflighting(started)
            return .startPreflight(started)
        case .pending where !preflight, .awaitingMain where !preflight, .adaptingMain where !preflight,
            .running where replacing != nil:
            let attempt = Attempt(
                token: nextToken, cell: TransferCell.makeCell(), sent: sent, startedAt: now,
                expectedBefore: expectedBefore)
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
        file: URL? = nil, expectedBefore: Int64?, wallClock: Date, _ shared: inout Shared, now: Double
    ) -> HeadAction {
        switch phase {
        case .preflighting(let preflight):
            if let existingFile, ExistingFileRules.isUnchanged(reading.head, file: existingFile) {
                preflight.unchangedHead = reading.head
            } else if let limit = request.maximumResponseSize, (200..<300).contains(reading.head.statusCode),
                let length = ResponseRules.knownLength(of: reading.head), length > limit
            {
                // The size is known before the GET: a body over the limit is not asked for.
                preflight.tooLarge = .responseTooLarge(limit: limit, url: reading.head.url)
            } else if !ResponseRules.isInterim(reading.head),
                (request.retryPolicy ?? shared.retryPolicy).retryableStatusCodes.contains(reading.head.statusCode)
            {
                // A 5xx (or 408, 429) to the HEAD is a failed attempt of the request: retried as its GET's would be.
                preflight.failure = .unacceptableStatus(code: reading.head.statusCode, url: reading.head.url)
                preflight.retryAfter = RetryRules.retryAfter(reading.head, now: wallClock)
            }
            return .interim
        case .running(let attempt):
            let head = reading.head
            guard !ResponseRules.isInterim(head) else { return .interim }
            if reading.isNotModified {
                // The file there is the resource (a revalidated file): the request finishes with it as it is.
                attempt.head = head
                attempt.headAt = now
                attempt.announcedLength = 0
                attempt.keptFile = existingFile?.path.map { URL(fileURLWithPath: $0, isDirectory: false) } ?? file
                // Bytes an earlier attempt counted (its part not kept) no longer count: the file is whole already.
                return .read(received > 0 ? .restarted : .fresh, length: 0, encoded: false, problem: nil)
            }
            var continuation = Continuation.fresh
            var total: Int64?
            switch reading.continuation {
            case .append(let whole)?:
                continuation = .appended(offset: attempt.continuedFrom)
                total = whole ?? ResponseRules.knownLength(of: head).map { $0 + attempt.continuedFrom }
            case .restartWithoutRange?:
                let restart = start(false, attempt.sent, expectedBefore, &shared, replacing: attempt, now: now)
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
            // A response without a body (to a HEAD; a 204, a 304) announces a length it does not send: no size cap
            // applies to it.
            let problem = ResponseRules.check(
                head, isAcceptableStatus: reading.isAcceptable, acceptableContentTypes: request.acceptableContentTypes,
                maximumResponseSize: request.maximumResponseSize,
                expectedLength: ResponseRules.hasBody(statusCode: head.statusCode, method: request.method)
                    ? length : nil)
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

    /// The transport reported the end of the current transfer of `request`, as `outcome` says. A HEAD that failed
    /// while checking an existing file (`checksExistingFile`) leaves the decision to the GET; one that failed with a
    /// location left asks the next (``FailoverRules``), and fails the request only when none is left. `file` is the
    /// claimed destination.
    private mutating func transferEnded(
        _ outcome: TransferOutcome, of request: NetworkRequest, received: Int64, file: URL?, checksExistingFile: Bool,
        metrics: RequestMetrics?, expectedBefore: Int64?, _ shared: inout Shared, now: Double
    ) -> Action {
        switch phase {
        case .preflighting(let preflight):
            if case .failed(let error) = outcome, !checksExistingFile {
                return preflightFailed(
                    preflight, .transport(Redaction.redacted(error)), retryAfter: nil, of: request, &shared, now: now)
            }
            if case .succeeded = outcome, let failure = preflight.failure, !checksExistingFile {
                return preflightFailed(
                    preflight, failure, retryAfter: preflight.retryAfter, of: request, &shared, now: now)
            }
            if case .succeeded = outcome, let head = preflight.unchangedHead {
                // The file on disk is the resource: kept as it is, no GET.
                return .end(.success(.init(head: head, body: Data(), fileURL: file, keptExistingFile: true)))
            }
            if case .succeeded = outcome, let tooLarge = preflight.tooLarge {
                return attemptEnded(tooLarge, of: request, &shared, now: now)
            }
            return goOnWithoutSize(failure: nil)
        case .running(let attempt):
            switch attempt.ending(
                outcome, received: received, file: file, metrics: metrics, endsAtHead: request.validation.endsAtHead)
            {
            case .failed(let error): return attemptEnded(error, of: request, &shared, now: now)
            case .sendAgainWithoutRange:
                return start(false, attempt.sent, expectedBefore, &shared, replacing: attempt, now: now)
            case .sendAgainFrom(let source, let untrusted, let then):
                return sendAgain(
                    attempt, from: source, untrusted: untrusted, then: then, expectedBefore: expectedBefore, &shared,
                    now: now)
            case .succeeded(let response): return .end(.success(response))
            case .commit(let sink):
                phase = .committing(attempt)
                return .commit(attempt, sink)
            }
        case .pending, .awaitingPreflight, .awaitingMain, .adaptingPreflight, .adaptingMain, .deciding,
            .waitingToRetry, .committing, .following, .paused:
            preconditionFailure("a transfer ending in phase \(phase.name)")
        }
    }

    /// Starts `attempt`'s file again from byte 0, from location `source` alone (``Attempt/Ending/sendAgainFrom(_:untrusted:then:)``).
    mutating func sendAgain(
        _ attempt: Attempt, from source: Int, untrusted: [Int], then: [Int], expectedBefore: Int64?,
        _ shared: inout Shared, now: Double
    ) -> Action {
        let restart = start(false, attempt.sent, expectedBefore, &shared, replacing: attempt, now: now)
        phase.attempt?.onlySource = source
        phase.attempt?.untrusted = untrusted
        phase.attempt?.thenAlone = then
        return restart
    }

    /// `preflight` failed with `error` (a transport failure, a timeout, or a status its retry policy retries;
    /// `retryAfter`: that response's `Retry-After`): the next location of `request`'s file is asked while one is left
    /// (``FailoverRules``), as a new HEAD of the same request in the same slot. Otherwise the HEAD was an attempt of its
    /// request: retried under its retry policy, with the backoff and budget its GET has, counted apart from the GET's
    /// (the policy's closure, when set, is asked about the GET's attempts alone); when the policy allows no more, or
    /// the wait would pass the request's deadline, the request goes on to its GET with its size unknown. A HEAD never
    /// fails a request its GET would have fetched (semantics 8).
    private mutating func preflightFailed(
        _ preflight: RequestState.Preflight, _ error: NetworkQueueError, retryAfter: Double?,
        of request: NetworkRequest, _ shared: inout Shared, now: Double
    ) -> Action {
        let count = request.fileOptions.mirrors.count + 1
        if FailoverRules.verdict(afterHeadOf: preflight.location, count: count) == .nextLocation {
            shared.nextToken += 1
            lastActivity = now
            let next = RequestState.Preflight(
                token: shared.nextToken, cell: TransferCell.makeCell(), location: preflight.location + 1,
                sent: preflight.sent, startedAt: now)
            phase = .preflighting(next)
            return .startPreflight(next)
        }
        // Saturating: a count that wrapped would let a policy of more attempts than it holds retry for ever.
        if failedHeads < .max { failedHeads += 1 }
        let policy = request.retryPolicy ?? shared.retryPolicy
        let verdict =
            policy.decide == nil
            ? RetryRules.verdict(
                policy: policy, error: error, method: "HEAD", attempts: Int(failedHeads), retryAfter: retryAfter)
            : .fail
        if verdict == .fail || verdict == .ask { return goOnWithoutSize(failure: error) }
        shared.nextToken += 1
        return wait(verdict, error, policy, nil, &shared, left: nil, preflight: true, now: now)
    }

    /// The HEAD is done without a size (`failure`: it failed, and is not retried): the request waits for its
    /// transfer's slot, its size learned from its own response.
    private mutating func goOnWithoutSize(failure: NetworkQueueError?) -> Action {
        phase = .awaitingMain
        // The HEAD's deadline ends with it: the transfer's starts with its slot.
        deadline = .notStarted
        return .preflightDone(failed: failure)
    }

    /// The server of the request is held (down: see ``DeadHosts``), and its HEAD or attempt failed to connect: that
    /// try is not counted (the budget is spent once for the server, by its probes), and the request waits with the
    /// server's others, holding no slot. It rejoins the pending requests at once; the scheduler holds it.
    private mutating func heldByServer(_ shared: inout Shared, now: Double) -> Action {
        let left: Attempt?
        let preflight: Bool
        switch phase {
        case .running(let attempt):
            (left, preflight) = (attempt, false)
            attemptCount -= 1
        case .preflighting: (left, preflight) = (nil, true)
        case .pending, .awaitingPreflight, .awaitingMain, .adaptingPreflight, .adaptingMain, .deciding,
            .waitingToRetry, .committing, .following, .paused:
            preconditionFailure("a server's hold in phase \(phase.name)")
        }
        shared.nextToken += 1
        lastActivity = now
        let wait = RequestState.RetryWait(
            token: shared.nextToken, serverAsked: true, lastHead: nil, preflight: preflight)
        phase = .waitingToRetry(wait)
        return .held(wait, left: left)
    }

    /// The current transfer reported something at `now` (its idle timeout counts from here): `sent`, the bytes of
    /// the running attempt's body sent so far.
    mutating func touched(at now: Double, sent: Int64? = nil) {
        lastActivity = now
        if let sent { phase.attempt?.sentBytes = sent }
    }

    /// The current attempt of `request` failed with `error` (an event of this machine, or the coordinator's: an
    /// invalid request, a response's problem). When its retry policy (the request's, else the queue's) allows another
    /// attempt the request leaves it (`left` in the action) and asks the policy's closure or waits; otherwise it ends
    /// with the failure. Only main attempts are retried: a preflight's failure is final, as is a failure while
    /// committing or deciding.
    private mutating func attemptEnded(
        _ error: NetworkQueueError, of request: NetworkRequest, _ shared: inout Shared, now: Double
    ) -> Action {
        let policy = request.retryPolicy ?? shared.retryPolicy
        let attempt: Attempt?
        switch phase {
        case .running(let running): attempt = running
        case .adaptingMain: attempt = nil
        case .pending, .awaitingPreflight, .preflighting, .awaitingMain, .adaptingPreflight, .deciding,
            .waitingToRetry, .committing, .following, .paused:
            return .end(.failure(error))
        }
        let verdict = RetryRules.verdict(
            policy: policy, error: error, method: request.method, attempts: attempts, retryAfter: attempt?.retryAfter)
        guard verdict != .fail else { return .end(.failure(error)) }
        shared.nextToken += 1
        if verdict == .ask, policy.decide != nil {
            lastActivity = now
            let decision = RequestState.Decision(
                token: shared.nextToken, failure: error, retryAfter: attempt?.retryAfter, lastHead: attempt?.head)
            phase = .deciding(decision)
            return .askRetry(decision, left: attempt)
        }
        return wait(verdict, error, policy, attempt?.head, &shared, left: attempt, now: now)
    }

    /// The retry policy's closure answered `decision` about `request`'s failed attempt.
    private mutating func retryDecided(
        _ decision: RetryPolicy.Decision, of request: NetworkRequest, _ shared: inout Shared, now: Double
    ) -> Action {
        guard case .deciding(let deciding) = phase else { preconditionFailure("a decision in phase \(phase.name)") }
        let error = deciding.failure
        let policy = request.retryPolicy ?? shared.retryPolicy
        let verdict = RetryRules.verdict(
            after: decision, policy: policy, error: error, method: request.method, retryAfter: deciding.retryAfter)
        if verdict == .fail || verdict == .ask { return .end(.failure(error)) }
        shared.nextToken += 1
        return wait(verdict, error, policy, deciding.lastHead, &shared, left: nil, now: now)
    }

    /// Waits for the retry as `verdict` says, unless the wait would end at or past the deadline: no attempt could
    /// follow, so the request ends with the attempt's failure now, or, for a HEAD (`preflight`), goes on to its GET
    /// with its size unknown. A HEAD's backoff is numbered by its own failures, an attempt's by the attempts.
    private mutating func wait(
        _ verdict: RetryVerdict, _ error: NetworkQueueError, _ policy: RetryPolicy, _ lastHead: ResponseHead?,
        _ shared: inout Shared, left: Attempt?, preflight: Bool = false, now: Double
    ) -> Action {
        let token = shared.nextToken
        let (delay, serverAsked): (Double, Bool)
        switch verdict {
        case .backoff:
            let retry = preflight ? Int(failedHeads) : attempts
            (delay, serverAsked) = (policy.backoff.delay(forRetry: retry, using: &shared.jitter), false)
        case .wait(let seconds, let asked): (delay, serverAsked) = (seconds, asked)
        case .fail, .ask: preconditionFailure("no wait for verdict \(verdict)")
        }
        if case .running(let until) = deadline, now + delay >= until {
            return preflight ? goOnWithoutSize(failure: error) : .end(.failure(error))
        }
        // Its callers checked the phase: running or adapting (an attempt failed), deciding, or preflighting.
        let wait = RequestState.RetryWait(
            token: token, serverAsked: serverAsked, lastHead: lastHead, preflight: preflight)
        phase = .waitingToRetry(wait)
        return .waitToRetry(wait, delay: delay, error: error, left: left)
    }

    /// The request's retry time came (or its server recovered): it waits for a slot again.
    private mutating func retryTimeCame() -> Action {
        guard case .waitingToRetry(let wait) = phase else {
            preconditionFailure("a retry time in phase \(phase.name)")
        }
        // A retried HEAD is a HEAD again: it waits in the preflight lane.
        phase = wait.preflight ? .awaitingPreflight : .pending
        return .rejoin
    }

    /// A HEAD is planned first (go() with accurate progress, or an existing file to check).
    private mutating func planPreflight() -> Action {
        guard case .pending = phase else { preconditionFailure("a preflight planned in phase \(phase.name)") }
        phase = .awaitingPreflight
        return .none
    }

    /// Its planned HEAD will not be sent (its server's sizes are not worth one): it waits for its transfer's slot.
    private mutating func skipPreflight() -> Action {
        guard case .awaitingPreflight = phase else { preconditionFailure("a preflight skipped in phase \(phase.name)") }
        phase = .awaitingMain
        return .none
    }

    /// Pauses the request at `now`, unless committing, following or paused (a user's call may race), and stops its
    /// deadline clock. A stopped attempt does not count: it was interrupted, not failed.
    private mutating func pause(now: Double) -> Action {
        var withPreflight = false
        var stopped: Attempt?
        switch phase {
        case .committing, .following, .paused: return .none
        case .awaitingPreflight, .adaptingPreflight, .preflighting: withPreflight = true
        case .running(let attempt):
            stopped = attempt
            attemptCount -= 1
        case .adaptingMain: attemptCount -= 1  // never sent
        case .waitingToRetry(let wait): withPreflight = wait.preflight
        case .pending, .awaitingMain, .deciding: break
        }
        if case .running(let until) = deadline { deadline = .stopped(left: max(0, until - now)) }
        phase = .paused(withPreflight: withPreflight)
        return .paused(stopped: stopped)
    }

    /// Resumes a paused request at `now`, its deadline clock running again (nothing happens otherwise: a user's
    /// call may race with its end).
    private mutating func resume(now: Double) -> Action {
        guard case .paused(let withPreflight) = phase else { return .none }
        if case .stopped(let left) = deadline { deadline = .running(until: now + left) }
        phase = withPreflight ? .awaitingPreflight : .pending
        return .resumed(withPreflight: withPreflight)
    }

    /// Follows the request in slot `leader` (added as its duplicate, or handed to a new leader), or (nil) takes
    /// over its cancelled leader's work and waits for a slot of its own.
    private mutating func follow(_ leader: Int?) -> Action {
        switch phase {
        case .pending where leader != nil, .following: phase = leader.map { .following(leader: $0) } ?? .pending
        case .pending, .awaitingPreflight, .preflighting, .awaitingMain, .adaptingPreflight, .adaptingMain, .running,
            .deciding, .waitingToRetry, .committing, .paused:
            preconditionFailure("\(leader == nil ? "a leader's work inherited" : "a leader") in phase \(phase.name)")
        }
        return .none
    }
}

// MARK: - The events of the body, the timer, the deadline, a cancel and the file

extension RequestMachine {
    /// ``Event/bodyPiece(keeping:received:)``: kept for a memory body; past the request's size cap the attempt fails.
    private mutating func bodyPiece(
        keeping data: Data?, received: Int64, of request: NetworkRequest, _ shared: inout Shared, now: Double
    ) -> Action {
        lastActivity = now
        guard case .running(let attempt) = phase else { preconditionFailure("a body piece in phase \(phase.name)") }
        if let data {
            // The first piece is kept as it is (its buffer shared, not copied): most bodies are one piece. A
            // slice is copied, so that a body's indices always start at 0.
            if attempt.body.isEmpty, data.startIndex == 0 {
                attempt.body = data
            } else {
                // The second piece: room for the whole body its head announced (within the size cap), so that a
                // body of many pieces is held once, not in storage grown by doubling (up to twice its size).
                if attempt.body.count == attempt.firstPieceCount, let length = attempt.head?.expectedContentLength,
                    length > Int64(attempt.body.count), length <= (request.maximumResponseSize ?? length)
                {
                    var whole = Data(capacity: Int(length))
                    whole.append(attempt.body)
                    attempt.body = whole
                }
                attempt.body.append(data)
            }
            if attempt.firstPieceCount < 0 { attempt.firstPieceCount = data.count }
        }
        guard let limit = request.maximumResponseSize, received > limit else { return .none }
        return attemptEnded(.responseTooLarge(limit: limit, url: request.url), of: request, &shared, now: now)
    }

    /// The queue's timer came at `now` for what `request` waits for (a transfer, hooks, the retry closure).
    /// Idle for `idle` seconds (nil: no idle timeout), it fails (a HEAD that timed out as one that failed: the next
    /// source is asked); a running attempt's lowest-speed window ends and is judged (`speed`, nil: no lowest speed).
    /// Otherwise it is checked again when the next of those comes.
    private mutating func timedCheck(
        idle: Double?, speed: SpeedCheck?, of request: NetworkRequest, _ shared: inout Shared, now: Double
    ) -> Action {
        if let idle, now - lastActivity >= idle {
            switch phase {
            case .preflighting(let preflight):
                return preflightFailed(
                    preflight, .transport(URLError(.timedOut)), retryAfter: nil, of: request, &shared, now: now)
            case .adaptingPreflight:
                return attemptEnded(.preflightFailed(URLError(.timedOut)), of: request, &shared, now: now)
            case .adaptingMain, .running:
                return attemptEnded(.transport(URLError(.timedOut)), of: request, &shared, now: now)
            // The closure deciding on a failed attempt never answered: no more attempts.
            case .deciding: return .end(.failure(.transport(URLError(.timedOut))))
            case .pending, .awaitingPreflight, .awaitingMain, .waitingToRetry, .committing, .following, .paused:
                preconditionFailure("a timeout in phase \(phase.name)")
            }
        }
        switch phase {
        case .preflighting, .adaptingPreflight, .adaptingMain, .running, .deciding: break
        case .pending, .awaitingPreflight, .awaitingMain, .waitingToRetry, .committing, .following, .paused:
            preconditionFailure("a timeout in phase \(phase.name)")
        }
        var next = idle.map { lastActivity + $0 }
        if let speed, let attempt = phase.attempt {
            var window =
                attempt.speedWindow ?? SpeedWindow(start: now, moved: speed.moved, queueReceived: speed.queueReceived)
            switch window.judge(
                speed.limit, moved: speed.moved, queueReceived: speed.queueReceived, rateCap: speed.rateCap, now: now)
            {
            case .tooSlow(let rate):
                let error = NetworkQueueError.tooSlow(bytesPerSecond: rate, limit: speed.limit, url: speed.url)
                return attemptEnded(error, of: request, &shared, now: now)
            case .due(let due), .kept(let due): next = min(next ?? due, due)
            }
            attempt.speedWindow = window
        }
        return next.map { .waitUntil($0, token: phase.token!) } ?? .none
    }

    /// The deadline timer came at `now`: past its deadline (`seconds` long) the request ends, unless its file is
    /// being moved into place (a local rename, its end near) or it follows a leader (which has its own deadline).
    /// A paused request's clock is stopped; a clock restarted since (resumed) is checked by its own entry.
    private func deadlinePassed(seconds: Double, url: URL?, now: Double) -> Action {
        guard case .running(let until) = deadline, now >= until else { return .none }
        switch phase {
        case .committing, .following, .paused: return .none
        case .pending, .awaitingPreflight, .preflighting, .awaitingMain, .adaptingPreflight, .adaptingMain, .running,
            .deciding, .waitingToRetry:
            return .end(.failure(.deadlineExceeded(seconds: seconds, url: url)))
        }
    }

    /// The user cancelled the request: it ends, unless its file is being moved into place.
    private func cancel() -> Action {
        phase.endsWhenCancelled ? .end(.failure(.cancelled)) : .none
    }

    /// An event of the current attempt's file: opened (it takes over the part), failed, or moved into place.
    private mutating func file(
        _ event: FileEvent, of request: NetworkRequest, file url: URL?, metrics: RequestMetrics?,
        _ shared: inout Shared, now: Double
    ) -> Action {
        switch (event, phase) {
        case (.opened(let sink), .running(let attempt)):
            attempt.sink = sink
            attempt.continuedFrom = sink.continuedFrom
            return .none
        case (.failed(let error), .running): return attemptEnded(error, of: request, &shared, now: now)
        case (.failed, _): return .none
        case (.committed(let error?, _), .committing): return attemptEnded(error, of: request, &shared, now: now)
        case (.committed(nil, _), .committing(let attempt)):
            return .end(.success(NetworkResponse(head: attempt.head!, body: Data(), fileURL: url, metrics: metrics)))
        case (.opened, _), (.committed, _): preconditionFailure("a file \(event) in phase \(phase.name)")
        }
    }
}
