import DemoKit
import Foundation
import NetworkQueue

/// `--report FILE`: one JSON line per request, written when it ends, each with one `write` to a file opened
/// for appending, so a run that is killed keeps the line of every request that ended before.
///
/// The URL is redacted as the queue's log redacts it (no user info, query values or fragment); a request of an
/// `--input` list carries its line number, so that the lines that failed can be run again as they were written
/// (checksums included) without any secret in the report.
final class Report: @unchecked Sendable {
    /// One line of the report. Fields without a value are left out.
    struct Entry: Encodable {
        let url: String
        /// The line of the `--input` list (1-based).
        var line: Int?
        var file: String?
        /// `finished`, `unchanged` (the file there was kept), `failed` or `cancelled`.
        let outcome: String
        var status: Int?
        let bytes: Int64
        /// The checksum the body was checked against.
        var checksum: String?
        let attempts: Int
        let seconds: Double
        /// What kind of failure (see ``kind(of:)``), its `URLError` code for a transport failure, and its text.
        var kind: String?
        var code: Int?
        var error: String?
    }

    private let lines: JSONLines
    private let lock = NSLock()
    /// When each running request started, by identity (only the running ones: memory stays flat).
    private var started: [ObjectIdentifier: Double] = [:]

    /// Writes to `fd`, a file opened for appending (``ReportFile/openChecked(path:input:output:)``).
    init(fd: Int32) {
        lines = JSONLines(fd: fd, option: "--report")
    }

    private static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    func started(_ request: NetworkRequest) {
        lock.withLock { started[ObjectIdentifier(request)] = started[ObjectIdentifier(request)] ?? Self.now() }
    }

    /// Writes the line of a request that ended with `result`.
    func ended(_ request: NetworkRequest, _ result: Result<NetworkResponse, NetworkQueueError>, line: Int?) {
        let began = lock.withLock { started.removeValue(forKey: ObjectIdentifier(request)) }
        var file: String?
        if case .file(let url) = request.destination { file = url.path }
        // Where it went: the name its response gave it (--content-disposition), else the one asked for.
        if case .success(let response) = result, let url = response.fileURL { file = url.path }
        var entry = Entry(
            url: NetworkQueueLogRecord.redacted(request.url), line: line, file: file,
            outcome: Self.outcome(of: result), status: request.head?.statusCode,
            bytes: request.downloadProgress.completedBytes, checksum: request.integrity.checksum?.description,
            attempts: request.attemptCount, seconds: began.map { ((Self.now() - $0) * 1000).rounded() / 1000 } ?? 0)
        if case .success(let response) = result { entry.status = response.statusCode }
        if case .failure(let error) = result {
            entry.kind = Self.kind(of: error)
            entry.error = error.localizedDescription
            if case .transport(let urlError) = error { entry.code = urlError.code.rawValue }
            if case .preflightFailed(let urlError) = error { entry.code = urlError.code.rawValue }
        }
        lines.write(entry)
    }

    /// A server's hold changed: a line of its own, `{"server":…,"outcome":"held"|"back"|"down","seconds":…,
    /// "failures":…}`, where `seconds` is how long its requests had been held.
    func serverHold(_ hold: ServerHold) {
        struct ServerEntry: Encodable {
            let server: String
            let outcome: String
            let seconds: Double
            let failures: Int
        }
        lines.write(
            ServerEntry(
                server: hold.server, outcome: hold.change.rawValue, seconds: (hold.heldFor * 1000).rounded() / 1000,
                failures: hold.failures))
    }

    /// An `--on-finish` command ended: a line of its own, `{"command":…,"file":…,"url":…,"line":…,"exit":N}` (or
    /// `"signal":N` when a signal ended it, `"error":…` when it could not start). `command` is the program's path.
    func command(_ program: String, _ outcome: FinishCommands.Outcome) {
        struct CommandEntry: Encodable {
            let command: String
            let file: String
            let url: String
            let line: Int?
            let exit: Int32?
            let signal: Int32?
            let error: String?
        }
        lines.write(
            CommandEntry(
                command: program, file: outcome.path, url: NetworkQueueLogRecord.redacted(URL(string: outcome.url)),
                line: outcome.line, exit: outcome.status, signal: outcome.signal, error: outcome.startError))
    }

    /// `finished`, `unchanged` (the file there was kept), `failed` or `cancelled`: the word for how a request ended,
    /// also `--progress-json`'s.
    static func outcome(of result: Result<NetworkResponse, NetworkQueueError>) -> String {
        switch result {
        case .success(let response): response.keptExistingFile ? "unchanged" : "finished"
        case .failure(let error): error.isCancellation ? "cancelled" : "failed"
        }
    }

    /// A word for what went wrong, stable for scripts: `transport` (with its `URLError` code), `status`,
    /// `content-type`, `preflight`, `invalid`, `too-large`, `too-slow`, `deadline`, `host-down`, `file`, `integrity`,
    /// `decoding`, `adapt`, `source` or `cancelled`.
    static func kind(of error: NetworkQueueError) -> String {
        switch error {
        case .cancelled, .cancelledBecauseSiblingFailed, .cancelledBecauseSourceFailed: "cancelled"
        case .sourceFailed: "source"
        case .transport: "transport"
        case .unacceptableStatus: "status"
        case .unacceptableContentType: "content-type"
        case .preflightFailed: "preflight"
        case .invalidRequest: "invalid"
        case .responseTooLarge: "too-large"
        case .tooSlow: "too-slow"
        case .deadlineExceeded: "deadline"
        case .hostDown: "host-down"
        case .fileError: "file"
        case .adaptationFailed: "adapt"
        case .integrityCheckFailed: "integrity"
        case .decodingFailed: "decoding"
        }
    }
}
