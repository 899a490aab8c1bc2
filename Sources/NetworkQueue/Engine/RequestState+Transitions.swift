/// The transitions of ``RequestState``: one method each, every phase named, illegal moves loud.
extension RequestState {
    /// The request got a slot and its adapt hooks run first (`preflight`: before its HEAD).
    mutating func startAdapting(preflight: Bool, token: UInt64) {
        switch self {
        case .awaitingPreflight where preflight: self = .adaptingPreflight(token: token)
        case .pending where !preflight, .awaitingMain where !preflight: self = .adaptingMain(token: token)
        case .pending, .awaitingPreflight, .preflighting, .awaitingMain, .adaptingPreflight, .adaptingMain, .running,
            .deciding,
            .waitingToRetry, .committing, .following, .paused:
            preconditionFailure("cannot adapt \(preflight ? "a preflight" : "a transfer") in phase \(name)")
        }
    }

    /// The request's HEAD starts.
    mutating func startPreflight(token: UInt64, cell: TransferCell) {
        switch self {
        case .awaitingPreflight, .adaptingPreflight: self = .preflighting(Preflight(token: token, cell: cell))
        case .pending, .preflighting, .awaitingMain, .adaptingMain, .running, .deciding, .waitingToRetry, .committing,
            .following,
            .paused:
            preconditionFailure("cannot start a preflight in phase \(name)")
        }
    }

    /// A main transfer starts with a new attempt. From `running`: the same attempt is sent again without a
    /// range (the server refused to continue the part).
    mutating func startAttempt(_ attempt: Attempt) {
        switch self {
        case .pending, .awaitingMain, .adaptingMain, .running: self = .running(attempt)
        case .awaitingPreflight, .preflighting, .adaptingPreflight, .deciding, .waitingToRetry, .committing, .following,
            .paused:
            preconditionFailure("cannot start a transfer in phase \(name)")
        }
    }

    /// The HEAD said the existing file is unchanged: the request will end with `head`.
    mutating func keepUnchanged(_ head: ResponseHead) {
        switch self {
        case .preflighting(let preflight):
            preflight.unchangedHead = head
        case .pending, .awaitingPreflight, .awaitingMain, .adaptingPreflight, .adaptingMain, .running, .deciding,
            .waitingToRetry,
            .committing, .following, .paused:
            preconditionFailure("a preflight head in phase \(name)")
        }
    }

    /// The HEAD ended without ending the request: it waits for a slot for its transfer.
    mutating func finishPreflight() {
        switch self {
        case .preflighting: self = .awaitingMain
        case .pending, .awaitingPreflight, .awaitingMain, .adaptingPreflight, .adaptingMain, .running, .deciding,
            .waitingToRetry,
            .committing, .following, .paused:
            preconditionFailure("cannot finish a preflight in phase \(name)")
        }
    }

    /// The transfer succeeded; its file is moved into place. Returns the attempt.
    mutating func startCommit() -> Attempt {
        switch self {
        case .running(let attempt):
            self = .committing(attempt)
            return attempt
        case .pending, .awaitingPreflight, .preflighting, .awaitingMain, .adaptingPreflight, .adaptingMain, .deciding,
            .waitingToRetry,
            .committing, .following, .paused:
            preconditionFailure("cannot commit in phase \(name)")
        }
    }

    /// A failed attempt goes to the retry policy's closure.
    mutating func startDeciding(_ decision: Decision) {
        switch self {
        case .running, .adaptingMain: self = .deciding(decision)
        case .pending, .awaitingPreflight, .preflighting, .awaitingMain, .adaptingPreflight, .deciding, .waitingToRetry,
            .committing,
            .following, .paused:
            preconditionFailure("cannot decide on a retry in phase \(name)")
        }
    }

    /// A failed attempt waits for its retry (straight away, or once the closure answered).
    mutating func startWaiting(_ wait: RetryWait) {
        switch self {
        case .running, .adaptingMain, .deciding: self = .waitingToRetry(wait)
        case .pending, .awaitingPreflight, .preflighting, .awaitingMain, .adaptingPreflight, .waitingToRetry,
            .committing, .following,
            .paused:
            preconditionFailure("cannot wait to retry in phase \(name)")
        }
    }

    /// The retry wait is over: the request waits for a slot again.
    mutating func rejoin() {
        switch self {
        case .waitingToRetry: self = .pending
        case .pending, .awaitingPreflight, .preflighting, .awaitingMain, .adaptingPreflight, .adaptingMain, .running,
            .deciding,
            .committing, .following, .paused:
            preconditionFailure("cannot rejoin in phase \(name)")
        }
    }

    /// go() on a suspended queue with accurate progress: a pending request gets a HEAD first.
    mutating func planPreflight() {
        switch self {
        case .pending: self = .awaitingPreflight
        case .awaitingPreflight, .preflighting, .awaitingMain, .adaptingPreflight, .adaptingMain, .running, .deciding,
            .waitingToRetry,
            .committing, .following, .paused:
            preconditionFailure("cannot plan a preflight in phase \(name)")
        }
    }

    /// Added as a duplicate of the request in slot `leader`.
    mutating func follow(_ leader: Int) {
        switch self {
        case .pending: self = .following(leader: leader)
        case .awaitingPreflight, .preflighting, .awaitingMain, .adaptingPreflight, .adaptingMain, .running, .deciding,
            .waitingToRetry,
            .committing, .following, .paused:
            preconditionFailure("cannot follow in phase \(name)")
        }
    }

    /// Its leader was cancelled and handed it the work: it waits for a slot of its own.
    mutating func inherit() {
        switch self {
        case .following: self = .pending
        case .pending, .awaitingPreflight, .preflighting, .awaitingMain, .adaptingPreflight, .adaptingMain, .running,
            .deciding,
            .waitingToRetry, .committing, .paused:
            preconditionFailure("cannot inherit a leader's work in phase \(name)")
        }
    }

    /// Pauses the request. Returns what the left phase held (to release) and the attempt it stopped, or nil
    /// when the request cannot be paused (committing, following, paused already: a user's call may race).
    mutating func pause() -> (held: Holdings, stopped: Attempt?)? {
        let withPreflight: Bool
        var stopped: Attempt?
        switch self {
        case .committing, .following, .paused: return nil
        case .awaitingPreflight, .adaptingPreflight, .preflighting: withPreflight = true
        case .running(let attempt):
            stopped = attempt
            withPreflight = false
        case .pending, .awaitingMain, .adaptingMain, .deciding, .waitingToRetry: withPreflight = false
        }
        let held = holdings
        self = .paused(withPreflight: withPreflight)
        return (held, stopped)
    }

    /// Resumes a paused request. Returns whether it waits for its HEAD again; nil when it is not paused
    /// (a user's call may race with its end or another resume).
    mutating func resume() -> Bool? {
        switch self {
        case .paused(let withPreflight):
            self = withPreflight ? .awaitingPreflight : .pending
            return withPreflight
        case .pending, .awaitingPreflight, .preflighting, .awaitingMain, .adaptingPreflight, .adaptingMain, .running,
            .deciding,
            .waitingToRetry, .committing, .following:
            return nil
        }
    }

    /// Changes the running attempt (an object: no copy is made) and returns `change`'s result.
    func withAttempt<Result>(_ change: (Attempt) -> Result) -> Result {
        switch self {
        case .running(let attempt): return change(attempt)
        case .pending, .awaitingPreflight, .preflighting, .awaitingMain, .adaptingPreflight, .adaptingMain, .deciding,
            .waitingToRetry,
            .committing, .following, .paused:
            preconditionFailure("no attempt runs in phase \(name)")
        }
    }
}
