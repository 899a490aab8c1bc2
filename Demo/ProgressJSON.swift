import DemoKit
import Foundation
import NetworkQueue

/// `--progress-json FILE|-`: the run as JSON lines a program can read while it goes, one object a line, each
/// written with one `write` (a reader never sees half a line). A stable format, documented in `--help`:
///
/// - `{"type":"progress", …}` at least once a second and at the end (`"final":true`): `fraction` (0–1, never
///   decreasing), `finished`, `failed`, `cancelled`, `total` (known so far) and `total_final`, `bytes`,
///   `bytes_expected` (when exact), `estimated` (true while the fraction rests on an estimate) with `bytes_estimate`, `rate` (bytes a second) and `eta` (seconds) when known, `held` (requests waiting
///   for a server that asked the batch to wait, or that stopped answering), `held_servers` (servers held because they
///   stopped answering connects).
/// - a `server` line when such a server is held, back, or down for good: `server`, `change` (`held`, `back`,
///   `down`), `held_for` (seconds) and `failures`.
/// - a line per request event: `start`, `headers` (`status`, `length`), `retry` (`attempt`: the next one, `delay`,
///   `error`), `pause`, `resume`, `end` (`outcome`: `finished`, `unchanged`, `failed` or `cancelled`; `status`,
///   `bytes`, and for a failure `kind` and `error`). Each carries `url` (redacted as the log is), and `line` (of
///   `--input`) and `file` when there are.
///
/// Every line has `type` and `time` (seconds since the run began, to the millisecond).
final class ProgressJSON: @unchecked Sendable {
    /// One line; fields without a value are left out.
    struct Line: Encodable {
        let type: String
        var time: Double = 0
        var final: Bool?
        var fraction: Double?
        var finished: Int?
        var failed: Int?
        var cancelled: Int?
        var total: Int?
        var totalFinal: Bool?
        var bytes: Int64?
        var bytesExpected: Int64?
        var estimated: Bool?
        var bytesEstimate: Int64?
        var rate: Double?
        var eta: Double?
        var held: Int?
        var heldServers: Int?
        var concurrency: Int?
        var server: String?
        var change: String?
        var heldFor: Double?
        var failures: Int?
        var url: String?
        var line: Int?
        var file: String?
        var status: Int?
        var length: Int64?
        var attempt: Int?
        var delay: Double?
        var outcome: String?
        var kind: String?
        var error: String?
        var command: String?
        var exit: Int32?
        var signal: Int32?
    }

    private let lines: JSONLines
    private let lock = NSLock()
    private let began = DispatchTime.now().uptimeNanoseconds
    /// The highest fraction written: a line never shows less.
    private var fraction = 0.0
    private var timer: DispatchSourceTimer?
    /// Whether requests' tags are their `--input` line numbers.
    private let tagsAreLines: Bool
    /// The retries announced so far of each request that retried and has not ended (the request's own attempt count
    /// may have moved on by the time an event is delivered).
    private var retries: [ObjectIdentifier: Int] = [:]
    /// True once the final progress line is written: a timer's line that comes later is dropped.
    private var isFinished = false

    /// Writes to `fd` (a file opened by ``ReportFile/openChecked(path:input:output:)``, or standard output's).
    /// `readerGone`: called once when a write finds no reader (a pipe whose reader went away).
    init(fd: Int32, tagsAreLines: Bool, readerGone: (@Sendable () -> Void)? = nil) {
        lines = JSONLines(fd: fd, option: "--progress-json", snakeCase: true, readerGone: readerGone)
        self.tagsAreLines = tagsAreLines
    }

    /// Writes a progress line of `queue` now and every half second until ``finish(_:)``.
    func start(_ queue: NetworkQueue) {
        let timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now(), repeating: .milliseconds(500))
        timer.setEventHandler { [weak self, weak queue] in
            guard let self, let queue else { return }
            self.progress(queue.progress, final: false)
        }
        lock.withLock { self.timer = timer }
        timer.resume()
    }

    /// Stops the timer and writes the last progress line.
    func finish(_ progress: QueueProgress) {
        lock.withLock { timer }?.cancel()
        self.progress(progress, final: true)
    }

    private var now: Double { (Double(DispatchTime.now().uptimeNanoseconds - began) / 1e6).rounded() / 1000 }

    func progress(_ progress: QueueProgress, final: Bool) {
        let shown = lock.withLock {
            fraction = max(fraction, progress.fractionCompleted)
            return fraction
        }
        var line = Line(type: "progress")
        line.final = final ? true : nil
        line.fraction = (shown * 10_000).rounded(.down) / 10_000
        line.finished = progress.finishedRequestCount
        line.failed = progress.failedRequestCount
        line.cancelled = progress.cancelledRequestCount
        line.total = progress.totalRequestCount
        line.totalFinal = progress.isTotalFinal
        line.bytes = progress.bytesReceived
        line.bytesExpected = progress.bytesExpectedToReceive
        // The fraction rests on an estimate while any size is unknown (HEADs sampled, a list still read), or while an
        // earlier estimate holds it above the share of the bytes: said, with the estimated total.
        line.estimated = Format.restsOnEstimate(progress, fraction: shown)
        line.bytesEstimate = progress.isEstimated ? progress.estimatedBytesExpectedToReceive : nil
        line.rate = progress.throughput.map { $0.rounded() }
        line.eta = progress.estimatedTimeRemaining.map { ($0 * 10).rounded() / 10 }
        line.held = progress.heldRequestCount
        line.heldServers = progress.heldServerCount
        line.concurrency = progress.concurrencyLevel
        write(line)
    }

    /// A line of `type` about `request`, filled in by `fill`.
    func event(_ type: String, _ request: NetworkRequest, _ fill: (inout Line) -> Void = { _ in }) {
        var line = Line(type: type)
        line.url = NetworkQueueLogRecord.redacted(request.url)
        line.line = tagsAreLines ? request.tag : nil
        if case .file(let url) = request.destination { line.file = url.path }
        fill(&line)
        write(line)
    }

    /// The `retry` line of `request`, whose next attempt comes after `delay` seconds, the last one having failed with
    /// `error`: `attempt` is the number of the next attempt (2 for the first retry).
    func retry(_ request: NetworkRequest, after delay: Double, error: NetworkQueueError) {
        let count = lock.withLock {
            retries[ObjectIdentifier(request), default: 0] += 1
            return retries[ObjectIdentifier(request)] ?? 1
        }
        event("retry", request) { line in
            line.attempt = count + 1
            line.delay = (delay * 1000).rounded() / 1000
            line.error = error.localizedDescription
        }
    }

    /// The `server` line of a server whose hold changed: `change` (`held`, `back` or `down`), `held_for` (seconds
    /// its requests had been held) and `failures` (its failed connects in a row).
    func serverHold(_ hold: ServerHold) {
        var line = Line(type: "server")
        line.server = hold.server
        line.change = hold.change.rawValue
        line.heldFor = (hold.heldFor * 1000).rounded() / 1000
        line.failures = hold.failures
        write(line)
    }

    /// The `command` line of an `--on-finish` command that ended: `command` (the program's path), `file`, `url`, `line`,
    /// and `exit`, `signal` or `error` (it could not start).
    func command(_ program: String, _ outcome: FinishCommands.Outcome) {
        var line = Line(type: "command")
        line.command = program
        line.file = outcome.path
        line.url = NetworkQueueLogRecord.redacted(URL(string: outcome.url))
        line.line = outcome.line
        line.exit = outcome.status
        line.signal = outcome.signal
        line.error = outcome.startError
        write(line)
    }

    /// The `end` line of `request`, which ended with `result`.
    func ended(_ request: NetworkRequest, _ result: Result<NetworkResponse, NetworkQueueError>) {
        _ = lock.withLock { retries.removeValue(forKey: ObjectIdentifier(request)) }
        event("end", request) { line in
            line.status = request.head?.statusCode
            line.bytes = request.downloadProgress.completedBytes
            line.outcome = Report.outcome(of: result)
            switch result {
            case .success(let response):
                line.status = response.statusCode
                if let url = response.fileURL { line.file = url.path }
            case .failure(let error):
                line.kind = Report.kind(of: error)
                line.error = error.localizedDescription
            }
        }
    }

    /// Writes `line`, timed as it is written, under the lock: lines come in the order of their times, and nothing comes
    /// after the final progress line but the run's own end.
    private func write(_ line: Line) {
        lock.withLock {
            guard !isFinished else { return }
            var timed = line
            timed.time = now
            lines.write(timed)
            if line.final == true { isFinished = true }
        }
    }
}
