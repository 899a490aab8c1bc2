import Foundation
import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Shows the queue: one overall bar and a status line per request. On a terminal it redraws in place at
/// most ten times a second; otherwise it prints a line per event and a progress line at most every second (for a
/// list, a line per request as it ends, and per retry or pause: not three per file, which a list of small files
/// would spend most of its time printing; with `--verbose`, every event).
///
/// A short batch (the demo set, URLs on the command line) shows a row for every request from the start. A
/// list (`--input`) shows rows only for the requests under way, made when each starts and dropped when it
/// ends: the display costs the window's memory, not the list's.
struct Display {
    enum Status {
        case queued
        case started
        case receiving
        /// Finished; `savedAs` names the file where it went elsewhere than the row's name (`  saved as NAME`).
        case done(savedAs: String)
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
    private var index: [ObjectIdentifier: Int]
    /// True for a list: rows come and go with the requests under way.
    private let showsLiveRowsOnly: Bool
    /// The most rows a list shows at once.
    private static let liveRowLimit = 20
    let isTerminal: Bool
    private var progress = QueueProgress.zero
    private var drawnLines = 0
    private var lastDraw = Date.distantPast
    /// When plain lines were last flushed to standard output.
    private var lastFlush = Date.distantPast
    private let began = Date()
    private let retries: Int

    /// Prints a `metrics` line after each request (with `--verbose`, which also turns the redraw off).
    private let showsMetrics: Bool
    /// Plain mode prints when each request starts and receives its head: a short batch, or `--verbose`.
    private let printsEveryEvent: Bool
    /// Failures the summary names: too slow (`--speed-limit`), past the deadline (`--max-time`), too large
    /// (`--max-filesize`), and those of a server that was down (apart from HTTP failures).
    private var bounded = (tooSlow: 0, pastDeadline: 0, tooLarge: 0, hostDown: 0)
    /// Each server held because it stopped answering (see ``DeadHosts``): how long it was held in all, and whether it
    /// came back, by its `scheme://host:port`, in the order they were first held.
    private var holds: [(server: String, seconds: Double, current: Double, back: Bool)] = []
    /// Where each server is in ``holds``: a list of millions may hold thousands of dead servers.
    private var holdIndex: [String: Int] = [:]
    /// Requests that kept the file there (a 304 to a rerun's conditional GET, or a HEAD that found it unchanged).
    private var unchanged = 0

    /// `rows`: every request of a short batch with its label; nil for a list (live rows only).
    init(rows: [(NetworkRequest, String)]?, isTerminal: Bool, retries: Int, showsMetrics: Bool = false) {
        self.retries = retries
        self.showsMetrics = showsMetrics
        showsLiveRowsOnly = rows == nil
        printsEveryEvent = rows != nil || showsMetrics
        self.rows = (rows ?? []).map { Row(request: $0.0, label: $0.1) }
        self.index = Dictionary(uniqueKeysWithValues: self.rows.enumerated().map { (ObjectIdentifier($1.request), $0) })
        self.isTerminal = isTerminal
        if isTerminal { print("\u{1B}[?25l", terminator: "") }
    }

    /// Applies one queue event; in plain mode, prints it.
    mutating func apply(_ event: NetworkQueueEvent) {
        switch event {
        case .didStart(let request):
            if showsLiveRowsOnly, index[ObjectIdentifier(request)] == nil {
                index[ObjectIdentifier(request)] = rows.count
                rows.append(Row(request: request, label: Self.label(of: request)))
            }
            update(request, .started, plain: { $0.printsEveryEvent ? "started   \($0.label(request))" : nil })
        case .didCollectMetrics:
            break
        case .didReceiveHeaders(let request, let response):
            update(
                request, .receiving,
                plain: {
                    guard $0.printsEveryEvent else { return nil }
                    return "receiving \($0.label(request))  HTTP \(response.statusCode), "
                        + (request.downloadProgress.expectedBytes.map(Format.bytes) ?? "size unknown")
                })
        case .didFinish(let request, let response) where response.keptExistingFile:
            unchanged += 1
            update(request, .unchanged, plain: { "unchanged \($0.label(request))  kept the file already there" })
        case .didFinish(let request, let response):
            let size = response.fileURL == nil ? Int64(response.body.count) : request.downloadProgress.completedBytes
            // A file saved under another name than its line's (its response named it, or another URL's file held
            // the name) says where it went.
            var saved = ""
            if case .file(let asked) = request.destination, let url = response.fileURL, asked.path != url.path {
                saved = "  saved as \(Self.shownName(of: url, beside: asked))"
            }
            update(
                request, .done(savedAs: saved),
                plain: { "done      \($0.label(request))  \(Format.bytes(size))\(saved)" })
            printMetrics(of: request, size: size)
        case .didFail(let request, let error):
            switch error {
            case .tooSlow: bounded.tooSlow += 1
            case .deadlineExceeded: bounded.pastDeadline += 1
            case .responseTooLarge: bounded.tooLarge += 1
            case .hostDown: bounded.hostDown += 1
            default: break
            }
            let reason = error.localizedDescription
            update(request, .failed(reason), plain: { "failed    \($0.label(request))  \(reason)" })
            printMetrics(of: request, size: request.downloadProgress.completedBytes)
        case .willRetry(let request, let delay, let error):
            let retry = request.attemptCount
            let status = Status.retrying(retry: retry, at: Date().addingTimeInterval(delay))
            update(
                request, status,
                plain: {
                    "retry     \($0.label(request))  \(Self.retryText(retry, of: $0.retries, in: delay)): "
                        + error.localizedDescription
                })
        case .didUpdateProgress(let progress):
            self.progress = progress
            if !isTerminal, Date().timeIntervalSince(lastDraw) >= 1 {
                lastDraw = Date()
                print("progress  \(Format.percent(of: progress))  \(Format.summary(of: progress))")
                // A pipe or a CI log: the line goes out now, not when the stdio buffer fills.
                fflush(nil)
            }
        case .didPause(let request):
            update(
                request, .paused,
                plain: {
                    "paused    \($0.label(request))  \(Format.bytes(request.downloadProgress.completedBytes)) kept"
                })
        case .didResume(let request):
            update(request, .queued, plain: { "resumed   \($0.label(request))" })
        case .sourceDidFail(let error):
            complain("Demo: error: \(error.localizedDescription)")
        case .serverHoldChanged(let hold):
            noteHold(hold)
        case .queueDidFinish:
            break
        }
        if isTerminal, Date().timeIntervalSince(lastDraw) >= 0.1 { draw() }
    }

    /// Draws the final state and prints the summary line (`kept`: files `--no-clobber` kept without a
    /// request; `listStopped`: a bad line of the list stopped the run, and what it cancelled is counted apart from
    /// what failed). Returns true when every request succeeded.
    mutating func finish(kept: Int = 0, listStopped: Bool = false) -> Bool {
        if isTerminal {
            draw()
            print("\u{1B}[?25h", terminator: "")
        }
        let stopped = listStopped ? progress.cancelledRequestCount : 0
        let failed = progress.failedRequestCount + progress.cancelledRequestCount - stopped
        let elapsed = Date().timeIntervalSince(began)
        let rate = elapsed > 0 ? Format.bytes(Int64(Double(progress.bytesReceived) / elapsed)) + "/s" : "?"
        let named = [
            (bounded.tooSlow, "too slow"), (bounded.pastDeadline, "past the deadline"), (bounded.tooLarge, "too large"),
            (bounded.hostDown, "host down"),
        ].filter { $0.0 > 0 }.map { "\($0.0) \($0.1)" }
        print(
            "Summary: \(progress.finishedRequestCount)/\(progress.totalRequestCount) succeeded"
                + (unchanged > 0 ? " (\(unchanged) unchanged)" : "") + ", \(failed) failed"
                + (named.isEmpty ? "" : " (\(named.joined(separator: ", ")))") + ", "
                + (stopped > 0 ? "\(stopped) cancelled (the list stopped at a bad line), " : "")
                + (kept > 0 ? "\(kept) kept (already there), " : "")
                + (holdWords.map { "\($0), " } ?? "")
                + "\(Format.bytes(progress.bytesReceived)) in \(String(format: "%.1f", elapsed)) s (\(rate)), "
                // Nothing to run (every file kept) is complete.
                + Format.percent(progress.totalRequestCount == 0 && failed == 0 ? 1 : progress.fractionCompleted))
        return failed == 0 && stopped == 0 && progress.finishedRequestCount == progress.totalRequestCount
            && progress.isTotalFinal
    }

    /// Counts a server's hold for the summary and says it: in plain mode a line, on a terminal above the rows.
    private mutating func noteHold(_ hold: ServerHold) {
        let index =
            holdIndex[hold.server]
            ?? {
                holds.append((hold.server, 0, 0, false))
                holdIndex[hold.server] = holds.count - 1
                return holds.count - 1
            }()
        let line: String
        switch hold.change {
        case .held:
            // A new episode: the one before (if any) is counted whole.
            holds[index].seconds += holds[index].current
            holds[index].current = 0
            holds[index].back = false
            line =
                "held      \(hold.server)  down (\(hold.failures) connects failed in a row): its requests wait, "
                + "the first probe in \(Format.tenths(hold.firstProbeIn ?? 0)) s"
        case .back:
            // Its held time counts from the episode's start, through a down verdict and its later probes.
            holds[index].current = hold.heldFor
            holds[index].back = true
            line = "back      \(hold.server)  answers again after \(Format.tenths(hold.heldFor)) s held"
        case .down:
            holds[index].current = hold.heldFor
            line =
                "down      \(hold.server)  still down after \(Format.tenths(hold.heldFor)) s held (every probe "
                + "--retries allows failed): its requests end"
        }
        // On a terminal the bar's line says it (`held: N waiting`); the summary says it at the end.
        guard !isTerminal else { return }
        print(line)
        fflush(nil)
    }

    /// The summary's words on held servers: `1 server held 1.6 s (back)`.
    private var holdWords: String? {
        guard !holds.isEmpty else { return nil }
        let back = holds.filter(\.back).count
        let longest = holds.map { $0.seconds + $0.current }.max() ?? 0
        let servers = holds.count == 1 ? "1 server" : "\(holds.count) servers"
        let outcome =
            back == holds.count ? "back" : back == 0 ? "not back" : "\(back) back, \(holds.count - back) not"
        return "\(servers) held \(holds.count == 1 ? "" : "up to ")\(Format.tenths(longest)) s (\(outcome))"
    }

    /// A list entry's label: the name of the file it is saved to; for a body kept in memory, its URL's last path
    /// component, or its host.
    static func label(of request: NetworkRequest) -> String {
        // The file's name is the one a reader looks for (a name taken twice gets a suffix), and reading it costs
        // less than parsing the URL again: one label per line, 20,000 lines for a list of small files.
        if case .file(let file) = request.destination { return file.lastPathComponent }
        guard let url = request.url else { return "?" }
        return url.lastPathComponent.isEmpty || url.lastPathComponent == "/"
            ? (url.host ?? url.absoluteString) : url.lastPathComponent
    }

    /// `metrics  movie.mp4  HTTP/1.1  reused  connect=0.2ms  first-byte=1.4ms  total=1702ms  20.0 MB`.
    private func printMetrics(of request: NetworkRequest, size: Int64) {
        guard showsMetrics else { return }
        let line = request.metrics?.final.map { Format.metrics($0, size: size) } ?? "no transfer"
        print("metrics   \(label(request))  \(line)")
        fflush(nil)
    }

    /// The name a reader finds `file` under: its path from the folder of `asked` (the line's destination), which is
    /// its name alone when it went beside it; its whole path otherwise. Cut at the paths' last `/`, with no Foundation
    /// path helper (a response's name is outside text).
    static func shownName(of file: URL, beside asked: URL) -> String {
        let (path, askedPath) = (file.path, asked.path)
        guard let slash = askedPath.utf8.lastIndex(of: UInt8(ascii: "/")) else { return path }
        let folder = String(askedPath[...slash])
        return path.hasPrefix(folder) ? String(path.dropFirst(folder.count)) : path
    }

    private func label(_ request: NetworkRequest) -> String {
        index[ObjectIdentifier(request)].map { rows[$0].label } ?? Self.label(of: request)
    }

    /// Sets the request's row; in plain mode prints `line` (built only then; nil prints nothing). Lines go out at
    /// least every 0.2 s and at the end, not each alone: a list of small files would spend a write per line.
    private mutating func update(_ request: NetworkRequest, _ status: Status, plain line: (Display) -> String?) {
        let text = isTerminal ? nil : line(self)
        if let row = index[ObjectIdentifier(request)] {
            rows[row].status = status
            if showsLiveRowsOnly, case .done = status { dropRow(row) }
            if showsLiveRowsOnly, case .failed = status { dropRow(row) }
            if showsLiveRowsOnly, case .unchanged = status { dropRow(row) }
        }
        if let text {
            print(text)
            let now = Date()
            if now.timeIntervalSince(lastFlush) >= 0.2 {
                lastFlush = now
                fflush(nil)
            }
        }
    }

    /// Drops a list's row once its request ended (the last row takes its place).
    private mutating func dropRow(_ row: Int) {
        index[ObjectIdentifier(rows[row].request)] = nil
        let last = rows.removeLast()
        if row < rows.count {
            rows[row] = last
            index[ObjectIdentifier(last.request)] = row
        }
    }

    /// Redraws every line in place.
    private mutating func draw() {
        lastDraw = Date()
        var lines = [
            "[\(Format.bar(Format.shownFraction(of: progress), width: 40, fill: "█", empty: "░"))] "
                + "\(Format.percent(of: progress).padding(toLength: 5, withPad: " ", startingAt: 0))  "
                + Format.summary(of: progress)
        ]
        let shown = showsLiveRowsOnly ? Array(rows.prefix(Self.liveRowLimit)) : rows
        let width = min(32, shown.map(\.label.count).max() ?? 0)
        for row in shown {
            let name = row.label.padding(toLength: width, withPad: " ", startingAt: 0)
            lines.append("  \(Self.describe(row))  \(name)  \(detail(row))")
        }
        if showsLiveRowsOnly, rows.count > shown.count {
            lines.append("  … and \(rows.count - shown.count) more under way")
        }
        if drawnLines > 0 { print("\u{1B}[\(drawnLines)A", terminator: "") }
        for line in lines { print("\u{1B}[2K" + line) }
        // A list's rows come and go: clear what the last drawing had below.
        for _ in lines.count..<max(lines.count, drawnLines) { print("\u{1B}[2K") }
        drawnLines = max(lines.count, drawnLines)
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
        case .done(let saved): return Format.bytes(transfer.completedBytes) + saved
        case .unchanged: return "kept"
        case .paused:
            return "\(Format.bytes(transfer.completedBytes)) / \(transfer.expectedBytes.map(Format.bytes) ?? "?")"
        case .failed(let reason): return reason
        case .retrying(let retry, let at):
            return Self.retryText(retry, of: retries, in: max(0, at.timeIntervalSinceNow))
        }
    }

    /// "retry 1/2 in 0.8 s".
    static func retryText(_ retry: Int, of retries: Int, in seconds: TimeInterval) -> String {
        "retry \(retry)/\(retries) in \(String(format: "%.1f", seconds)) s"
    }
}
