import DemoKit
import Foundation
import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The Demo's delegate: shows each event on the queue's delivery thread, where it is delivered.
///
/// A delegate, not an `events()` stream: a stream hands each batch of events to the reading task, one more thread
/// woken per batch, and its subscriber has every transfer's metrics collected. The methods of one queue are
/// called serially; the lock only hands the display over to the code that waits for the end.
final class Listener: NetworkQueueDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var display: Display
    private var problem: InputList.Problem?
    private var ended: CheckedContinuation<Void, Never>?
    private var isFinished = false
    /// What standard error calls the list when it cannot be read on.
    private let listName: String
    /// `--report`: a line per ended request (nil: none).
    private let report: Report?
    /// Whether requests' tags are their `--input` line numbers.
    private let tagsAreLines: Bool
    /// `--dry-run`: each probe's answer is printed there, not shown as a download.
    private let dryRun: DryRunPrinter?
    /// `--progress-json`: each event as a JSON line.
    private let json: ProgressJSON?
    /// `--save-session`: the list's unfinished lines.
    private let session: SessionFile?
    /// `--on-finish`: a command per saved file.
    private let commands: FinishCommands?

    init(
        display: Display, listName: String, report: Report? = nil, tagsAreLines: Bool = false,
        dryRun: DryRunPrinter? = nil, json: ProgressJSON? = nil, session: SessionFile? = nil,
        commands: FinishCommands? = nil
    ) {
        self.session = session
        self.commands = commands
        self.dryRun = dryRun
        self.json = json
        self.display = display
        self.listName = listName
        self.report = report
        self.tagsAreLines = tagsAreLines
    }

    /// Waits for `queueDidFinish`, then returns the display and the problem of a malformed list line, if one
    /// stopped the run.
    func finished() async -> (Display, InputList.Problem?) {
        await withCheckedContinuation { continuation in
            lock.withLock {
                if isFinished { continuation.resume() } else { ended = continuation }
            }
        }
        return lock.withLock { (display, problem) }
    }

    private func show(_ event: NetworkQueueEvent) {
        // A dry run prints a line per probe and a total: no rows, no progress lines.
        guard dryRun == nil else { return }
        lock.withLock { display.apply(event) }
    }

    func networkQueue(_ queue: NetworkQueue, didStart request: NetworkRequest) {
        report?.started(request)
        json?.event("start", request)
        show(.didStart(request))
    }

    func networkQueue(_ queue: NetworkQueue, didReceiveHeaders request: NetworkRequest, head: ResponseHead) {
        json?.event("headers", request) { line in
            line.status = head.statusCode
            line.length = head.expectedContentLength >= 0 ? head.expectedContentLength : nil
        }
        show(.didReceiveHeaders(request, head: head))
    }

    func networkQueue(_ queue: NetworkQueue, didCollectMetrics request: NetworkRequest, metrics: TransferMetrics) {
        show(.didCollectMetrics(request, metrics: metrics))
    }

    func networkQueue(_ queue: NetworkQueue, didFinish request: NetworkRequest, response: NetworkResponse) {
        report?.ended(request, .success(response), line: tagsAreLines ? request.tag : nil)
        dryRun?.ended(request, .success(response))
        if tagsAreLines { session?.finished(line: request.tag) }
        json?.ended(request, .success(response))
        show(.didFinish(request, response: response))
        // A file saved by this run (not one kept unchanged), where it went.
        if let commands, !response.keptExistingFile, let file = response.fileURL ?? Self.file(of: request) {
            commands.run(
                path: file.path, url: request.url?.absoluteString ?? "", line: tagsAreLines ? request.tag : nil)
        }
    }

    private static func file(of request: NetworkRequest) -> URL? {
        if case .file(let url) = request.destination { return url }
        return nil
    }

    /// True once the way out of an untrusted certificate was said.
    private var saidHowToTrust = false

    func networkQueue(_ queue: NetworkQueue, didFail request: NetworkRequest, error: NetworkQueueError) {
        if case .transport(let failure) = error, failure.code == .serverCertificateUntrusted,
            lock.withLock({
                defer { saidHowToTrust = true }
                return !saidHowToTrust
            })
        {
            complain(
                "Demo: note: a server's certificate is not trusted: if it comes from your own certificate authority, "
                    + "trust it with --cacert FILE (or CURL_CA_BUNDLE)")
        }
        report?.ended(request, .failure(error), line: tagsAreLines ? request.tag : nil)
        dryRun?.ended(request, .failure(error))
        if tagsAreLines { session?.keep(line: request.tag) }
        json?.ended(request, .failure(error))
        show(.didFail(request, error: error))
    }

    func networkQueue(
        _ queue: NetworkQueue, willRetry request: NetworkRequest, after delay: TimeInterval, error: NetworkQueueError
    ) {
        json?.retry(request, after: delay, error: error)
        show(.willRetry(request, after: delay, error: error))
    }

    func networkQueue(_ queue: NetworkQueue, didPause request: NetworkRequest) {
        json?.event("pause", request)
        show(.didPause(request))
    }

    func networkQueue(_ queue: NetworkQueue, didResume request: NetworkRequest) {
        json?.event("resume", request)
        show(.didResume(request))
    }

    func networkQueue(_ queue: NetworkQueue, didUpdateProgress progress: QueueProgress) {
        show(.didUpdateProgress(progress))
    }

    func networkQueue(_ queue: NetworkQueue, sourceDidFail error: NetworkQueueError) {
        guard case .sourceFailed(let underlying) = error else {
            show(.sourceDidFail(error: error))
            return
        }
        // The list could not be read on (a malformed line, a read error): nothing more starts.
        if let listProblem = underlying.error as? InputList.Problem { lock.withLock { problem = listProblem } }
        complain("Demo: error: \(listName), \(underlying)")
        queue.cancelAll()
    }

    func networkQueue(_ queue: NetworkQueue, serverHoldChanged hold: ServerHold) {
        report?.serverHold(hold)
        json?.serverHold(hold)
        show(.serverHoldChanged(hold))
    }

    func networkQueueDidFinish(_ queue: NetworkQueue) {
        let waiter = lock.withLock {
            display.apply(.queueDidFinish)
            isFinished = true
            defer { ended = nil }
            return ended
        }
        waiter?.resume()
    }
}
