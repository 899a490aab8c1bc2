import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The queue's debug log: one record per decision, posted in lock order with the events, only while a
/// ``NetworkQueue/logHandler`` is set (``QueueStateMachine/isLogging``). Messages are built only then.
extension QueueStateMachine {
    /// Posts a record about `request` when someone logs.
    mutating func log(
        _ level: NetworkQueueLogRecord.Level, _ event: NetworkQueueLogRecord.Event, _ request: NetworkRequest,
        now: Double, _ message: () -> String
    ) {
        guard isLogging else { return }
        post(
            .log(
                NetworkQueueLogRecord(
                    level: level, event: event, message: message(), request: request, timestamp: wallClock(at: now))))
    }

    /// The end of a request: finished (status, bytes, time), cancelled, or failed (attempts, error).
    mutating func logEnd(_ record: RequestRecord, _ result: Result<NetworkResponse, NetworkQueueError>, now: Double) {
        guard isLogging else { return }
        switch result {
        case .success(let response):
            if let checksum = record.request.checksum {
                log(.info, .checksumVerified, record.request, now: now) {
                    "checksum verified (\(checksum.algorithm.rawValue))"
                }
            }
            log(.info, .finished, record.request, now: now) {
                let took = record.machine.startedAt.map { " in " + LogText.duration(now - $0) } ?? ""
                if response.keptExistingFile { return "\(response.statusCode), existing file unchanged\(took)" }
                return "\(response.statusCode), \(record.progress.received) bytes\(took)"
            }
        case .failure(let error) where error.isCancellation:
            log(.warning, .cancelled, record.request, now: now) { error.description }
        case .failure(let error):
            log(.error, .failed, record.request, now: now) {
                "after \(record.machine.attempts) attempt\(record.machine.attempts == 1 ? "" : "s"): \(error)"
            }
        }
    }

    /// A redirect the transport met.
    mutating func logRedirect(_ redirect: TransferRedirect, of request: NetworkRequest, now: Double) {
        // Redacting parses the URL: only when someone logs.
        guard isLogging else { return }
        let target = redirect.to.map(Redaction.describe) ?? "(no URL)"
        if let refusal = redirect.refusal {
            log(.warning, .redirectRefused, request, now: now) {
                "\(redirect.statusCode) redirect to \(target) refused: \(NetworkQueueError.transport(refusal))"
            }
        } else {
            log(.info, .redirectFollowed, request, now: now) { "\(redirect.statusCode) redirect followed to \(target)" }
        }
    }
}

/// How log messages write numbers.
enum LogText {
    /// Seconds as milliseconds below 10 s (`12.3 ms`), else as seconds (`12.3 s`).
    static func duration(_ seconds: Double) -> String {
        seconds < 10 ? String(format: "%.1f ms", seconds * 1000) : String(format: "%.1f s", seconds)
    }

    /// A response head's status and announced length.
    static func head(_ head: ResponseHead) -> String {
        let length = head.expectedContentLength >= 0 ? "\(head.expectedContentLength) bytes" : "length unknown"
        return "\(head.statusCode), \(length)"
    }
}
