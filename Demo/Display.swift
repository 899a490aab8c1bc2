import Foundation
import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Shows the queue: one overall bar and a status line per request. On a terminal it redraws in place at
/// most ten times a second; otherwise it prints a line per event and a progress line at most every second.
struct Display {
    enum Status {
        case queued
        case started
        case receiving
        case done
        case failed(String)
        /// Attempt `retry` of `retries` retries starts at `at` (or sooner).
        case retrying(retry: Int, at: Date)
        /// Paused (its bytes so far kept); waits to be resumed.
        case paused
        /// Finished without a download: the file already there is unchanged on the server.
        case unchanged
    }

    struct Row {
        let request: NetworkRequest
        let label: String
        var status = Status.queued
    }

    private var rows: [Row]
    private let index: [ObjectIdentifier: Int]
    let isTerminal: Bool
    private var progress = QueueProgress.zero
    private var drawnLines = 0
    private var lastDraw = Date.distantPast
    private let began = Date()
    private let retries: Int

    /// Prints a `metrics` line after each request (with `--verbose`, which also turns the redraw off).
    private let showsMetrics: Bool

    init(rows: [(NetworkRequest, String)], isTerminal: Bool, retries: Int, showsMetrics: Bool = false) {
        self.retries = retries
        self.showsMetrics = showsMetrics
        self.rows = rows.map { Row(request: $0.0, label: $0.1) }
        self.index = Dictionary(uniqueKeysWithValues: rows.enumerated().map { (ObjectIdentifier($1.0), $0) })
        self.isTerminal = isTerminal
        if isTerminal { print("\u{1B}[?25l", terminator: "") }
    }

    /// Applies one queue event; in plain mode, prints it.
    mutating func apply(_ event: NetworkQueueEvent) {
        switch event {
        case .didStart(let request):
            update(request, .started, plain: "started   \(label(request))")
        case .didCollectMetrics:
            break
        case .didReceiveHeaders(let request, let response):
            let size = request.downloadProgress.expectedBytes.map(Format.bytes) ?? "size unknown"
            update(request, .receiving, plain: "receiving \(label(request))  HTTP \(response.statusCode), \(size)")
        case .didFinish(let request, let response) where response.keptExistingFile:
            update(request, .unchanged, plain: "unchanged \(label(request))  kept the file already there")
        case .didFinish(let request, let response):
            let size = response.fileURL == nil ? Int64(response.body.count) : request.downloadProgress.completedBytes
            update(request, .done, plain: "done      \(label(request))  \(Format.bytes(size))")
            printMetrics(of: request, size: size)
        case .didFail(let request, let error):
            let reason = error.localizedDescription
            update(request, .failed(reason), plain: "failed    \(label(request))  \(reason)")
            printMetrics(of: request, size: request.downloadProgress.completedBytes)
        case .willRetry(let request, let delay, let error):
            let retry = request.attemptCount
            let status = Status.retrying(retry: retry, at: Date().addingTimeInterval(delay))
            update(request, status, plain: "retry     \(label(request))  \(Self.retryText(retry, of: retries, in: delay)): \(error.localizedDescription)")
        case .didUpdateProgress(let progress):
            self.progress = progress
            if !isTerminal, Date().timeIntervalSince(lastDraw) >= 1 {
                lastDraw = Date()
                print("progress  \(Format.percent(progress.fractionCompleted))  \(Format.summary(of: progress))")
                // A pipe or a CI log: the line goes out now, not when the stdio buffer fills.
                fflush(nil)
            }
        case .didPause(let request):
            update(request, .paused, plain: "paused    \(label(request))  \(Format.bytes(request.downloadProgress.completedBytes)) kept")
        case .didResume(let request):
            update(request, .queued, plain: "resumed   \(label(request))")
        case .sourceDidFail(let error):
            complain("Demo: error: \(error.localizedDescription)")
        case .queueDidFinish:
            break
        }
        if isTerminal, Date().timeIntervalSince(lastDraw) >= 0.1 { draw() }
    }

    /// Draws the final state and prints the summary line. Returns true when every request succeeded.
    mutating func finish() -> Bool {
        if isTerminal {
            draw()
            print("\u{1B}[?25h", terminator: "")
        }
        let failed = progress.failedRequestCount + progress.cancelledRequestCount
        let elapsed = Date().timeIntervalSince(began)
        let rate = elapsed > 0 ? Format.bytes(Int64(Double(progress.bytesReceived) / elapsed)) + "/s" : "?"
        print(
            "Summary: \(progress.finishedRequestCount)/\(progress.totalRequestCount) succeeded, \(failed) failed, "
                + "\(Format.bytes(progress.bytesReceived)) in \(String(format: "%.1f", elapsed)) s (\(rate)), "
                + Format.percent(progress.fractionCompleted))
        return failed == 0 && progress.finishedRequestCount == rows.count
    }

    /// `metrics  movie.mp4  HTTP/1.1  reused  connect=0.2ms  first-byte=1.4ms  total=1702ms  20.0 MB`.
    private func printMetrics(of request: NetworkRequest, size: Int64) {
        guard showsMetrics else { return }
        let line = request.metrics?.final.map { Format.metrics($0, size: size) } ?? "no transfer"
        print("metrics   \(label(request))  \(line)")
        fflush(nil)
    }

    private func label(_ request: NetworkRequest) -> String {
        index[ObjectIdentifier(request)].map { rows[$0].label } ?? request.url?.absoluteString ?? "?"
    }

    private mutating func update(_ request: NetworkRequest, _ status: Status, plain line: String) {
        if let row = index[ObjectIdentifier(request)] { rows[row].status = status }
        if !isTerminal {
            print(line)
            fflush(nil)
        }
    }

    /// Redraws every line in place.
    private mutating func draw() {
        lastDraw = Date()
        var lines = [
            "[\(Format.bar(progress.fractionCompleted, width: 40, fill: "█", empty: "░"))] "
                + "\(Format.percent(progress.fractionCompleted).padding(toLength: 4, withPad: " ", startingAt: 0))  "
                + Format.summary(of: progress)
        ]
        let width = min(32, rows.map(\.label.count).max() ?? 0)
        for row in rows {
            let name = row.label.padding(toLength: width, withPad: " ", startingAt: 0)
            lines.append("  \(Self.describe(row))  \(name)  \(detail(row))")
        }
        if drawnLines > 0 { print("\u{1B}[\(drawnLines)A", terminator: "") }
        for line in lines { print("\u{1B}[2K" + line) }
        drawnLines = lines.count
        fflush(nil)
    }

    private static func describe(_ row: Row) -> String {
        let word: String
        switch row.status {
        case .queued: word = "queued"
        case .started: word = "started"
        case .receiving: word = "receiving"
        case .done: word = "done"
        case .failed: word = "failed"
        case .retrying: word = "waiting"
        case .paused: word = "paused"
        case .unchanged: word = "unchanged"
        }
        return word.padding(toLength: 9, withPad: " ", startingAt: 0)
    }

    private func detail(_ row: Row) -> String {
        let transfer = row.request.downloadProgress
        switch row.status {
        case .queued, .started: return ""
        case .receiving: return Format.transfer(transfer)
        case .done: return Format.bytes(transfer.completedBytes)
        case .unchanged: return "kept"
        case .paused: return "\(Format.bytes(transfer.completedBytes)) / \(transfer.expectedBytes.map(Format.bytes) ?? "?")"
        case .failed(let reason): return reason
        case .retrying(let retry, let at): return Self.retryText(retry, of: retries, in: max(0, at.timeIntervalSinceNow))
        }
    }

    /// "retry 1/2 in 0.8 s".
    static func retryText(_ retry: Int, of retries: Int, in seconds: TimeInterval) -> String {
        "retry \(retry)/\(retries) in \(String(format: "%.1f", seconds)) s"
    }
}
