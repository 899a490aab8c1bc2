import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The events of a transfer's file: opened, failed, moved into place.
extension QueueStateMachine {
    /// The shell opened the file of a transfer about to start. Returns false when the request ended
    /// meanwhile: the actions then discard the file, and the caller must not start the transfer.
    mutating func fileOpened(slot: Int, token: UInt64, sink: FileSink) -> (isCurrent: Bool, actions: QueueActions) {
        let isCurrent = table.isCurrent(slot, token: token)
        if isCurrent {
            // The new attempt's file takes over the part (continuing or replacing it).
            let record = table[slot]
            record.hasKeptPart = false
            record.state.withAttempt { attempt in
                attempt.sink = sink
                attempt.continuedFrom = sink.continuedFrom
            }
        } else {
            actions.list.append(.discard(sink))
        }
        return (isCurrent, takeActions())
    }

    /// The file of a transfer could not be opened or written: the request fails, if that transfer is
    /// still its current one.
    mutating func fileFailed(slot: Int, token: UInt64, error: NetworkQueueError, now: Double) -> QueueActions {
        if table.isCurrent(slot, token: token), case .running = table[slot].state {
            attemptFailed(slot, error, now: now)
        }
        return finishEvent(now)
    }

    /// The file of a finished transfer was moved into place (or could not be).
    mutating func fileCommitted(slot: Int, token: UInt64, error: NetworkQueueError?, now: Double) -> QueueActions {
        guard table.isCurrent(slot, token: token), case .committing(let attempt) = table[slot].state else {
            preconditionFailure("a commit for a request that is not committing")
        }
        if let error {
            attemptFailed(slot, error, transferEnded: true, now: now)
        } else {
            let record = table[slot]
            let response = NetworkResponse(
                head: attempt.head!, body: Data(), fileURL: record.claim?.url, metrics: record.requestMetrics)
            end(slot, .success(response), transferEnded: true, now: now)
        }
        return finishEvent(now)
    }
}
