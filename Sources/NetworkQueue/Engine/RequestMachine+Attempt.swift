import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The events of a request that read or change its attempt without moving its phase: its body, its file's
/// commit, its checksum, its idle timeout, a cancel.
extension RequestMachine {
    /// Body bytes of the running attempt arrived, `received` in all: `data` is kept for a memory body (nil:
    /// written to its file already). Past the request's size cap the attempt fails.
    func bodyPiece(keeping data: Data?, received: Int64, of request: NetworkRequest) -> Action {
        guard case .running(let attempt) = phase else { illegal("a body piece") }
        if let data {
            // The first piece is kept as it is (its buffer shared, not copied): most bodies are one piece. A
            // slice is copied, so that a body's indices always start at 0.
            if attempt.body.isEmpty, data.startIndex == 0 { attempt.body = data } else { attempt.body.append(data) }
        }
        guard let limit = request.maximumResponseSize, received > limit else { return .none }
        return .attemptFailed(.responseTooLarge(limit: limit, url: request.url))
    }

    /// The HEAD's final head arrived: when `unchanged`, it says the existing file is the resource, and the
    /// request will end with it.
    func preflightHead(_ head: ResponseHead, unchanged: Bool) -> Action {
        guard case .preflighting(let preflight) = phase else { illegal("a preflight head") }
        if unchanged { preflight.unchangedHead = head }
        return .none
    }

    /// The committing attempt's file was moved into place (`error` nil) or could not be.
    mutating func fileCommitted(error: NetworkQueueError?, file: URL?, metrics: RequestMetrics?) -> Action {
        guard case .committing(let attempt) = phase else { illegal("a file committed") }
        if let error { return .attemptFailed(error) }
        return .end(.success(NetworkResponse(head: attempt.head!, body: Data(), fileURL: file, metrics: metrics)))
    }

    /// The queue's timer found the request's deadline due at `now`, `timeout` seconds being its idle bound:
    /// what it waits for (a transfer, hooks, the retry closure) fails when idle that long.
    func timerFired(timeout: Double, now: Double) -> Action {
        guard now - lastActivity >= timeout else { return .waitUntil(lastActivity + timeout, token: phase.token!) }
        let error = URLError(.timedOut)
        switch phase {
        case .preflighting, .adaptingPreflight: return .attemptFailed(.preflightFailed(error))
        case .adaptingMain, .running: return .attemptFailed(.transport(error))
        // The closure deciding on a failed attempt never answered: no more attempts.
        case .deciding: return .end(.failure(.transport(error)))
        case .pending, .awaitingPreflight, .awaitingMain, .waitingToRetry, .committing, .following, .paused:
            illegal("a timeout")
        }
    }

    /// The running attempt's file could not be opened or written.
    func fileFailed(_ error: NetworkQueueError) -> Action {
        guard case .running = phase else { return .none }
        return .attemptFailed(error)
    }

    /// The attempt's body did not hash as `expected`. A download that continued a part is sent once more from
    /// byte 0 (the part may be what was wrong); any other attempt fails.
    mutating func checksumFailed(
        expected: Checksum, actual: Checksum, expectedBefore: Int64?, nextToken: inout UInt64, now: Double
    ) -> Action {
        guard case .running(let attempt) = phase else { illegal("a checksum failure") }
        guard attempt.continuedFrom > 0 else {
            return .attemptFailed(.integrityCheckFailed(expected: expected, actual: actual))
        }
        return sendAgainWithoutRange(expectedBefore: expectedBefore, nextToken: &nextToken, now: now)
    }

    /// The user cancelled the request: it ends, unless its file is being moved into place.
    func cancel() -> Action {
        if case .committing = phase { return .none }
        return .end(.failure(.cancelled))
    }

    /// Stops the process: `event` cannot happen in the current phase.
    func illegal(_ event: String) -> Never {
        preconditionFailure("\(event) in phase \(phase.name)")
    }
}
