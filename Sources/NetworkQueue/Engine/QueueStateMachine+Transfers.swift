import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The other events of a request's transfers: its HEAD, its body, its file, its checksum, its adapt hooks and
/// its retry closure. Each is handed to the request's ``RequestMachine``; ``perform(_:_:transferEnded:now:)``
/// does what it asks.
extension QueueStateMachine {
    /// Starts the HEAD `preflight` of the request in `slot`, for `sent` (adapted, or the request's own).
    mutating func startPreflight(_ preflight: RequestState.Preflight, sending sent: URLRequest, slot: Int, now: Double)
    {
        let record = table[slot]
        var head = sent
        head.httpMethod = "HEAD"
        head.httpBody = nil
        publish(record)
        addTimeout(slot: slot, token: preflight.token, head.timeoutInterval, now: now)
        log(.debug, .preflightStarted, record.request, now: now) { "HEAD \(Redaction.describe(head.url))" }
        actions.list.append(
            .start(
                .init(
                    slot: slot, token: preflight.token, urlRequest: head, cell: preflight.cell, body: .preflight,
                    collectsMetrics: false)))
    }

    /// An event of a request's HEAD.
    mutating func preflightEvent(_ event: TransferEvent, slot: Int, now: Double) {
        let record = table[slot]
        switch event {
        case .head(let head):
            guard !ResponseRules.isInterim(head) else { return }
            if (200..<300).contains(head.statusCode) {
                ledger.setExpectedDownload(&record.progress, ResponseRules.knownLength(of: head))
                markProgressDirty(at: now)
            }
            let unchanged = record.existingFile.map { ExistingFileRules.isUnchanged(head, file: $0) } ?? false
            _ = record.machine.preflightHead(head, unchanged: unchanged)
        case .data, .sent, .redirect, .metrics:
            break
        case .completed(let error):
            let before = record.machine.phase.holdings
            let action = record.machine.preflightEnded(
                error: error, checksExistingFile: record.existingFile != nil, file: record.claim?.url)
            move(slot, from: before, transferEnded: true)
            perform(action, slot, transferEnded: true, now: now)
        }
    }

    /// `count` bytes of a file-bound body arrived, written and hashed already (lent by the transport: see
    /// ``LendingTransport``). Dropped when the transfer is no longer current, as any transfer event.
    mutating func bodyReceived(_ count: Int, slot: Int, token: UInt64, now: Double) -> QueueActions {
        guard table.isCurrent(slot, token: token), case .running = table[slot].machine.phase else {
            return QueueActions()
        }
        _ = table[slot].machine.heard(at: now)
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
        noteProgress(slot, download: true, at: now)
    }

    /// A transfer reported success but its body did not hash as expected (see
    /// ``RequestMachine/checksumFailed(expected:actual:expectedBefore:nextToken:now:)``).
    mutating func integrityFailed(slot: Int, token: UInt64, expected: Checksum, actual: Checksum, now: Double)
        -> QueueActions
    {
        guard table.isCurrent(slot, token: token), case .running = table[slot].machine.phase else {
            return QueueActions()
        }
        let record = table[slot]
        log(.error, .checksumFailed, record.request, now: now) { "expected \(expected), got \(actual)" }
        let before = record.machine.phase.holdings
        let action = record.machine.checksumFailed(
            expected: expected, actual: actual, expectedBefore: record.progress.expectedDown, nextToken: &nextToken,
            now: now)
        move(slot, from: before)
        perform(action, slot, transferEnded: true, now: now)
        return finishEvent(now)
    }

    /// The server refused to continue the part: the attempt is sent again at once without a range.
    mutating func restartWithoutRange(_ slot: Int, now: Double) {
        let record = table[slot]
        let before = record.machine.phase.holdings
        let action = record.machine.sendAgainWithoutRange(
            expectedBefore: record.progress.expectedDown, nextToken: &nextToken, now: now)
        move(slot, from: before)
        perform(action, slot, now: now)
    }

    /// The shell opened the file of a transfer about to start. Returns false when the request ended
    /// meanwhile: the actions then discard the file, and the caller must not start the transfer.
    mutating func fileOpened(slot: Int, token: UInt64, sink: FileSink) -> (isCurrent: Bool, actions: QueueActions) {
        let isCurrent = table.isCurrent(slot, token: token)
        if isCurrent {
            _ = table[slot].machine.fileOpened(sink)
        } else {
            actions.list.append(.discard(sink))
        }
        return (isCurrent, takeActions())
    }

    /// The file of a transfer could not be opened or written: the attempt fails, if it is still current.
    mutating func fileFailed(slot: Int, token: UInt64, error: NetworkQueueError, now: Double) -> QueueActions {
        if table.isCurrent(slot, token: token) { perform(table[slot].machine.fileFailed(error), slot, now: now) }
        return finishEvent(now)
    }

    /// The file of a finished transfer was moved into place (or could not be).
    mutating func fileCommitted(slot: Int, token: UInt64, error: NetworkQueueError?, now: Double) -> QueueActions {
        guard table.isCurrent(slot, token: token) else { preconditionFailure("a commit for a request not committing") }
        let record = table[slot]
        let action = record.machine.fileCommitted(
            error: error, file: record.claim?.url, metrics: error == nil ? record.requestMetrics : nil)
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
            decision, policy: policy(of: record), method: record.request.method, nextToken: &nextToken,
            jitter: &jitter)
        move(slot, from: before)
        perform(action, slot, transferEnded: true, now: now)
        return finishEvent(now)
    }

    /// The request's own retry policy, else the queue's (read when it is needed, so a change applies).
    func policy(of record: RequestRecord) -> RetryPolicy { record.request.retryPolicy ?? retryPolicy }
}
