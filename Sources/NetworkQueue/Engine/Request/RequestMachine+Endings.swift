import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request's ends from outside its transfer: its deadline passed, the user cancelled it, and its attempt's file was
/// opened, failed or moved into place.
extension RequestMachine {
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
    mutating func file(
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
