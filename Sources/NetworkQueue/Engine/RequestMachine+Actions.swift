import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a ``RequestMachine`` event asks of the coordinator.
extension RequestMachine {
    /// What the coordinator must do after an event.
    enum Action {
        /// Nothing beyond what the phase's holdings say.
        case none
        /// Run the adapt hooks; their answer comes back under `token`.
        case adapt(token: UInt64)
        /// Start the HEAD preflight (of the request the preflight carries, to the source it names).
        case startPreflight(RequestState.Preflight)
        /// Start a main transfer of this new attempt; `first`: the request's first (didStart is due).
        /// `replacing`: the attempt sent again without a range, whose file is to be discarded.
        case startTransfer(Attempt, first: Bool, replacing: Attempt?)
        /// The attempt failed: the coordinator asks the machine for the retry verdict (``attemptEnded``).
        case attemptFailed(NetworkQueueError)
        /// Ask the retry policy's closure about `left`'s failure.
        case askRetry(RequestState.Decision, left: Attempt?)
        /// Wait `delay` seconds, then rejoin the pending requests.
        case waitToRetry(RequestState.RetryWait, delay: Double, error: NetworkQueueError, left: Attempt?)
        /// Move the finished attempt's file into place.
        case commit(Attempt, FileSink)
        /// The request ends with this result.
        case end(Result<NetworkResponse, NetworkQueueError>)
        /// The request waits for a slot again (its retry time came).
        case rejoin
        /// Check again at this time (the request was active since its deadline was set).
        case waitUntil(Double, token: UInt64)
        /// Its HEAD ended without ending the request: it waits for a slot for its transfer.
        case preflightDone
        /// Paused (`stopped`: the attempt it stopped, whose part is kept when the request continues parts).
        case paused(stopped: Attempt?)
        /// Resumed: it waits for a slot again (for its HEAD first when `withPreflight`).
        case resumed(withPreflight: Bool)
        /// The continued part did not verify: send the attempt again at once without a range (the machine does).
        case sendAgainWithoutRange
    }

    /// How a transfer ended, as its transport and pipeline report it.
    enum TransferOutcome {
        /// Its transport reported success (and its body verified, when checked).
        case succeeded
        /// Its transport failed.
        case failed(URLError)
        /// Its body did not hash as `expected`.
        case checksumMismatch(expected: Checksum, actual: Checksum)
    }

    /// An event of an attempt's file.
    enum FileEvent {
        /// The shell opened it, before the transfer starts.
        case opened(FileSink)
        /// It could not be opened or written.
        case failed(NetworkQueueError)
        /// It was moved into place (`error` nil), or could not be.
        case committed(NetworkQueueError?)
    }

    /// Body bytes of the running attempt arrived, `received` in all: `data` is kept for a memory body (nil:
    /// written to its file already). Past the request's size cap the attempt fails.
    func bodyPiece(keeping data: Data?, received: Int64, of request: NetworkRequest) -> Action {
        guard case .running(let attempt) = phase else { preconditionFailure("a body piece in phase \(phase.name)") }
        if let data {
            // The first piece is kept as it is (its buffer shared, not copied): most bodies are one piece. A
            // slice is copied, so that a body's indices always start at 0.
            if attempt.body.isEmpty, data.startIndex == 0 { attempt.body = data } else { attempt.body.append(data) }
        }
        guard let limit = request.maximumResponseSize, received > limit else { return .none }
        return .attemptFailed(.responseTooLarge(limit: limit, url: request.url))
    }

    /// What a final head means to the coordinator: the bytes counted so far, the size, the response's problem.
    enum HeadAction {
        /// An interim head (100 Continue, 103 Early Hints): never the final response.
        case interim
        /// The server refused to continue the part from byte `offset`: `restart` sends it again without a range
        /// (``Action/none`` as ``Attempt`` reads it).
        case refusedRange(offset: Int64, restart: Action)
        /// The head was read. `continuation` says what becomes of the bytes counted so far; `length` is the
        /// body's decoded size when known; `problem` fails the attempt.
        case read(Continuation, length: Int64?, encoded: Bool, problem: NetworkQueueError?)
    }

    /// What a final head did to the part or the bytes before it.
    enum Continuation: Equatable {
        /// A first head of a fresh transfer.
        case fresh
        /// A 206 continued the part after `offset` bytes.
        case appended(offset: Int64)
        /// A 200 sent the whole body instead of continuing from `offset`.
        case startedOver(offset: Int64)
        /// A part that did not describe this response: its bytes no longer count.
        case unrelated
        /// A second head (the transfer restarted) or an attempt that kept its part and did not continue it.
        case restarted
    }

    /// What a lowest-speed check reads: the limit, the running attempt's bytes moved (received and sent) and the
    /// queue's bytes received now, the queue's cap, the request's URL (for the error).
    struct SpeedCheck {
        let limit: LowestSpeed
        let moved: Int64
        let queueReceived: Int64
        let rateCap: Int?
        let url: URL?
    }

    /// The queue's timer came at `now` for what the request waits for (a transfer, hooks, the retry closure).
    /// Idle for `idle` seconds (nil: no idle timeout), it fails; a running attempt's lowest-speed window ends
    /// and is judged (`speed`, nil: no lowest speed). Otherwise it is checked again when the next of those comes.
    func timedCheck(idle: Double?, speed: SpeedCheck?, now: Double) -> Action {
        let timedOut: Action
        switch phase {
        case .preflighting, .adaptingPreflight: timedOut = .attemptFailed(.preflightFailed(URLError(.timedOut)))
        case .adaptingMain, .running: timedOut = .attemptFailed(.transport(URLError(.timedOut)))
        // The closure deciding on a failed attempt never answered: no more attempts.
        case .deciding: timedOut = .end(.failure(.transport(URLError(.timedOut))))
        case .pending, .awaitingPreflight, .awaitingMain, .waitingToRetry, .committing, .following, .paused:
            preconditionFailure("a timeout in phase \(phase.name)")
        }
        if let idle, now - lastActivity >= idle { return timedOut }
        var next = idle.map { lastActivity + $0 }
        if let speed, let attempt = phase.attempt {
            var window =
                attempt.speedWindow ?? SpeedWindow(start: now, moved: speed.moved, queueReceived: speed.queueReceived)
            switch window.judge(
                speed.limit, moved: speed.moved, queueReceived: speed.queueReceived, rateCap: speed.rateCap, now: now)
            {
            case .tooSlow(let rate):
                return .attemptFailed(.tooSlow(bytesPerSecond: rate, limit: speed.limit, url: speed.url))
            case .due(let due), .kept(let due): next = min(next ?? due, due)
            }
            attempt.speedWindow = window
        }
        return next.map { .waitUntil($0, token: phase.token!) } ?? .none
    }

    /// The deadline timer came at `now`: past its deadline (`seconds` long) the request ends, unless its file is
    /// being moved into place (a local rename, its end near) or it follows a leader (which has its own deadline).
    /// A paused request's clock is stopped; a clock restarted since (resumed) is checked by its own entry.
    func deadlinePassed(seconds: Double, url: URL?, now: Double) -> Action {
        guard case .running(let until) = deadline, now >= until else { return .none }
        switch phase {
        case .committing, .following, .paused: return .none
        case .pending, .awaitingPreflight, .preflighting, .awaitingMain, .adaptingPreflight, .adaptingMain, .running,
            .deciding, .waitingToRetry:
            return .end(.failure(.deadlineExceeded(seconds: seconds, url: url)))
        }
    }

    /// The user cancelled the request: it ends, unless its file is being moved into place.
    func cancel() -> Action {
        if case .committing = phase { return .none }
        return .end(.failure(.cancelled))
    }

    /// An event of the current attempt's file: opened (it takes over the part), failed, or moved into place.
    func file(_ event: FileEvent, file url: URL?, metrics: RequestMetrics?) -> Action {
        switch (event, phase) {
        case (.opened(let sink), .running(let attempt)):
            attempt.sink = sink
            attempt.continuedFrom = sink.continuedFrom
            return .none
        case (.failed(let error), .running): return .attemptFailed(error)
        case (.failed, _): return .none
        case (.committed(let error?), .committing): return .attemptFailed(error)
        case (.committed(nil), .committing(let attempt)):
            return .end(.success(NetworkResponse(head: attempt.head!, body: Data(), fileURL: url, metrics: metrics)))
        case (.opened, _), (.committed, _): preconditionFailure("a file \(event) in phase \(phase.name)")
        }
    }
}
