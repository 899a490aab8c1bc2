import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The other events of a request's transfers: its HEAD, its body, its file, its checksum, its adapt hooks and
/// its retry closure. Each is handed to the request's ``RequestMachine``; ``perform(_:_:transferEnded:now:)``
/// does what it asks.
extension QueueStateMachine {
    /// `count` bytes of a file-bound body arrived, written and hashed already (lent by the transport: see
    /// ``LendingTransport``). Dropped when the transfer is no longer current, as any transfer event.
    mutating func bodyReceived(_ count: Int, slot: Int, token: UInt64, now: Double) -> QueueActions {
        guard table.isCurrent(slot, token: token), case .running = table[slot].machine.phase else {
            return QueueActions()
        }
        table[slot].machine.lastActivity = now
        receive(count, keeping: nil, slot: slot, now: now)
        return finishEvent(now)
    }

    /// `count` body bytes of a main transfer arrived: `data`, which a body in memory keeps.
    mutating func receive(_ count: Int, keeping data: Data?, slot: Int, now: Double) {
        let record = table[slot]
        let request = record.request
        ledger.receive(&record.progress, bytes: Int64(count), at: now)
        let isMemory = if case .memory = request.destination { true } else { false }
        let action = record.machine.bodyPiece(
            keeping: isMemory ? data : nil, received: record.progress.received, of: request)
        if let startedAt = record.machine.phase.attempt?.startedAt {
            record.meterDownload(Int64(count), startedAt: startedAt, at: now)
        }
        guard case .none = action else { return perform(action, slot, now: now) }
        flush.list(slot, isListed: &record.isListedDirty)
        record.downloadDirty = true
        flush.markChanged(at: now)
    }

    /// A transfer reported success but its body did not hash as expected: see
    /// ``RequestMachine/TransferOutcome/checksumMismatch(expected:actual:)``.
    mutating func integrityFailed(slot: Int, token: UInt64, expected: Checksum, actual: Checksum, now: Double)
        -> QueueActions
    {
        guard table.isCurrent(slot, token: token), case .running = table[slot].machine.phase else {
            return QueueActions()
        }
        outbox.log(.error, .checksumFailed, table[slot].request, now: now) { "expected \(expected), got \(actual)" }
        transferEnded(.checksumMismatch(expected: expected, actual: actual), slot: slot, now: now)
        return finishEvent(now)
    }

    /// The shell opened the file of a transfer about to start. Returns false when the request ended
    /// meanwhile: the actions then discard the file, and the caller must not start the transfer.
    mutating func fileOpened(slot: Int, token: UInt64, sink: FileSink) -> (isCurrent: Bool, actions: QueueActions) {
        let isCurrent = table.isCurrent(slot, token: token)
        if isCurrent {
            // The new attempt's file takes over the part (continuing or replacing it).
            table[slot].hasKeptPart = false
            _ = table[slot].machine.file(.opened(sink), metrics: nil)
        } else {
            actions.list.append(.discard(sink))
        }
        return (isCurrent, takeActions())
    }

    /// The file of a transfer could not be opened or written: the attempt fails, if it is still current.
    mutating func fileFailed(slot: Int, token: UInt64, error: NetworkQueueError, now: Double) -> QueueActions {
        if table.isCurrent(slot, token: token) {
            perform(table[slot].machine.file(.failed(error), metrics: nil), slot, now: now)
        }
        return finishEvent(now)
    }

    /// The file of a finished transfer was moved into place (or could not be).
    mutating func fileCommitted(slot: Int, token: UInt64, error: NetworkQueueError?, now: Double) -> QueueActions {
        guard table.isCurrent(slot, token: token) else { preconditionFailure("a commit for a request not committing") }
        let record = table[slot]
        let action = record.machine.file(
            .committed(error, record.claim?.url), metrics: error == nil ? record.requestMetrics : nil)
        perform(action, slot, transferEnded: true, now: now)
        return finishEvent(now)
    }

    /// The adapt hooks of the attempt `token` returned the request to send, or threw.
    mutating func adapted(
        slot: Int, token: UInt64, _ outcome: Result<URLRequest, NetworkQueueError.UnderlyingError>, now: Double
    ) -> QueueActions {
        // The token is current only while the hooks run: a request ended or paused meanwhile holds another.
        guard table.isCurrent(slot, token: token) else { return finishEvent(now) }
        let record = table[slot]
        let checked = outcome.mapError { NetworkQueueError.adaptationFailed($0) }.flatMap { urlRequest in
            RequestRules.validate(urlRequest, destination: record.request.destination).map {
                .failure(.invalidRequest($0))
            } ?? .success(urlRequest)
        }
        let before = record.machine.phase.holdings
        let action = record.machine.adapted(
            checked, expectedBefore: record.progress.expectedDown, nextToken: &nextToken, now: now)
        move(slot, from: before)
        perform(action, slot, transferEnded: true, now: now)
        return finishEvent(now)
    }

    /// The retry policy's closure answered about the attempt that failed in `slot`.
    mutating func retryDecided(slot: Int, token: UInt64, _ decision: RetryPolicy.Decision, now: Double) -> QueueActions
    {
        // Cancelled or paused meanwhile: the token is stale.
        guard table.isCurrent(slot, token: token), case .deciding = table[slot].machine.phase else {
            return finishEvent(now)
        }
        let record = table[slot]
        let before = record.machine.phase.holdings
        let action = record.machine.retryDecided(
            decision, policy: (record.request.retryPolicy ?? retryPolicy), method: record.request.method,
            nextToken: &nextToken,
            jitter: &jitter)
        move(slot, from: before)
        perform(action, slot, transferEnded: true, now: now)
        return finishEvent(now)
    }
}
