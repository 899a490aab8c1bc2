import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A batch persists through a server's bad minute (issue 71), over both transports, against loopback servers that fail
/// the way real ones do: restarted mid-batch, resetting each request's first connections after its head, dropping every
/// HEAD, resetting every other connection as it accepts it. Each fault comes from the batch's own events (a count of
/// finished files, the queue's word that the server is held), never from a clock; the verdict is what was saved.
@Suite(.admitted, .timeLimit(.minutes(10))) struct TransientFaultTests {
    /// Hears the queue's hold changes and counts finished requests, running `onFinished` with each count and `onHold`
    /// with each change.
    final class Watcher: NetworkQueueDelegate, @unchecked Sendable {
        private let lock = NSLock()
        private var finished = 0
        private var heard: [ServerHold.Change] = []
        let onFinished: @Sendable (Int) -> Void
        let onHold: @Sendable (ServerHold) -> Void

        init(onFinished: @escaping @Sendable (Int) -> Void = { _ in }, onHold: @escaping @Sendable (ServerHold) -> Void)
        {
            self.onFinished = onFinished
            self.onHold = onHold
        }

        var changes: [ServerHold.Change] { lock.withLock { heard } }
        private var retried: [String] = []
        /// The errors of the attempts that were retried, as their `URLError` codes or descriptions.
        var retriedErrors: [String] { lock.withLock { retried } }

        func networkQueue(
            _ queue: NetworkQueue, willRetry request: NetworkRequest, after delay: TimeInterval,
            error: NetworkQueueError
        ) {
            let word = if case .transport(let failure) = error { "\(failure.code.rawValue)" } else { "\(error)" }
            lock.withLock { retried.append(word) }
        }

        func networkQueue(_ queue: NetworkQueue, didFinish request: NetworkRequest, response: NetworkResponse) {
            onFinished(
                lock.withLock {
                    finished += 1
                    return finished
                })
        }

        func networkQueue(_ queue: NetworkQueue, serverHoldChanged hold: ServerHold) {
            lock.withLock { heard.append(hold.change) }
            onHold(hold)
        }
    }

    /// The server in use on a reserved port, replaced by a new one when restarted.
    final class Restartable: @unchecked Sendable {
        let reservation: RefusingPort
        private let lock = NSLock()
        private var server: LoopbackServer?
        private(set) var restarts = 0
        /// How many times it was stopped.
        private(set) var stops = 0

        init() throws {
            reservation = try RefusingPort(sharedWithServers: true)
            server = try LoopbackServer(on: reservation)
        }

        private var isStopped = false

        func stop() {
            let stopped = lock.withLock {
                isStopped = true
                stops += 1
                return server
            }
            stopped?.stop()
        }

        /// Starts a new server on the port, once the one before was stopped (a second call while it runs does nothing).
        func start() {
            lock.withLock {
                guard isStopped else { return }
                server = try? LoopbackServer(on: reservation)
                isStopped = false
                restarts += 1
            }
        }

        deinit { server?.stop() }
    }

    /// Five attempts, a 0.25 s first backoff: a hold window of 0.25 + 0.5 + 1 + 2 s of probes.
    static let policy = RetryPolicy(maximumAttempts: 5, backoff: .init(initialDelay: 0.25))

    @Test(arguments: TransportKind.allCases)
    func aServerRestartedMidBatchLosesNoFile(_ transport: TransportKind) async throws {
        let count = 1_000
        let site = try Restartable()
        let queue = NetworkQueue(transport: transport.make())
        queue.retryPolicy = Self.policy
        queue.cancelsAllOnFailure = false
        queue.showsAccurateProgress = true
        // Down once 300 files are in; up again when the queue says it holds the server (its connects failed three
        // rounds in a row): the requests in flight at the stop fail on their own, the rest wait for the probe.
        let watcher = Watcher(
            onFinished: { if $0 == 300 { site.stop() } },
            onHold: { if $0.change == .held { site.start() } })
        queue.delegate = watcher
        let requests = (1...count).map { request(site.reservation.url("/bytes/64?n=\($0)"), tag: $0) }
        for request in requests { try queue.add(request) }
        await queue.run()
        let failed = requests.filter { $0.state != .finished }.map { "\($0.tag) \(String(describing: $0.failure))" }
        #expect(failed.isEmpty, "\(failed.prefix(5))")
        #expect(requests.allSatisfy { $0.response?.body.count == 64 })
        #expect(site.restarts == 1)
        #expect(watcher.changes == [.held, .back], "\(watcher.changes)")
    }

    /// Runs requests `1...count` to `path(n)` on a new server with accurate progress and `attempts` attempts (a
    /// 0.05 s first backoff), no failure cancelling another.
    static func accurateBatch(
        _ transport: TransportKind, attempts: Int, count: Int, path: (Int) -> String
    ) async throws -> (LoopbackServer, NetworkQueue, [NetworkRequest]) {
        let server = try LoopbackServer()
        let queue = NetworkQueue(transport: transport.make())
        queue.retryPolicy = RetryPolicy(maximumAttempts: attempts, backoff: .init(initialDelay: 0.05))
        queue.cancelsAllOnFailure = false
        queue.showsAccurateProgress = true
        let requests = (1...count).map { request(server.url(path($0)), tag: $0) }
        for request in requests { try queue.add(request) }
        await queue.run()
        return (server, queue, requests)
    }

    @Test(arguments: TransportKind.allCases)
    func headsResetTwiceAreRetriedAsAttemptsAndEveryFileArrivesWithItsSize(_ transport: TransportKind) async throws {
        // Each file's first two connections are reset once its head is read: its two first HEADs.
        let (server, queue, requests) = try await Self.accurateBatch(transport, attempts: 3, count: 40) {
            "/bytes/100?resets=2&key=k\($0)"
        }
        #expect(requests.allSatisfy { $0.state == .finished && $0.response?.body.count == 100 })
        // Each file: two HEADs reset, a third answered, its GET: the HEADs spent none of the GET's attempts.
        let log = server.statistics.log
        #expect(log.filter { $0.hasPrefix("HEAD ") }.count == 120 && log.filter { $0.hasPrefix("GET ") }.count == 40)
        #expect(requests.allSatisfy { $0.attemptCount == 1 })
        #expect(queue.progress.fractionCompleted == 1)
    }

    @Test(arguments: TransportKind.allCases)
    func aServerThatDropsEveryHeadButServesGetsLosesNothing(_ transport: TransportKind) async throws {
        let (server, _, requests) = try await Self.accurateBatch(transport, attempts: 2, count: 12) {
            "/bytes/50?headDrop=1&n=\($0)"
        }
        #expect(requests.allSatisfy { $0.state == .finished && $0.response?.body.count == 50 })
        let log = server.statistics.log
        // Each GET once; each request's HEAD dropped as often as its policy allows (libcurl may send one again by
        // itself on a reused connection that closed unanswered), its size then unknown.
        #expect(log.filter { $0.hasPrefix("GET ") }.count == 12)
        for n in 1...12 {
            #expect(log.filter { $0 == "HEAD /bytes/50?headDrop=1&n=\(n)" }.count >= 2, "request \(n): \(log)")
        }
    }

    @Test(arguments: TransportKind.allCases)
    func everyOtherConnectionResetAtAcceptIsRetriedAndSaysTheSameFault(_ transport: TransportKind) async throws {
        let server = try LoopbackServer()
        server.resetConnections(every: 2)
        let queue = NetworkQueue(transport: transport.make())
        queue.retryPolicy = RetryPolicy(maximumAttempts: 20, backoff: .init(initialDelay: 0.05, maximumDelay: 0.2))
        queue.cancelsAllOnFailure = false
        // Every request asks its connection closed, so that each is a new connect.
        let requests = (1...60).map { tag in
            var asked = URLRequest(url: server.url("/bytes/200?n=\(tag)"))
            asked.setValue("close", forHTTPHeaderField: "Connection")
            return NetworkRequest(asked, tag: tag)
        }
        let watcher = Watcher(onHold: { _ in })
        queue.delegate = watcher
        for request in requests { try queue.add(request) }
        await queue.run()
        let lost = requests.filter { $0.state != .finished }.map { String(describing: $0.failure) }
        #expect(lost.isEmpty, "\(lost)")
        #expect(requests.allSatisfy { $0.response?.body.count == 200 })
        // Half the connects were reset at accept: both transports say it as libcurl does (a failed connect, or a lost
        // connection when the reset comes after the request was sent), never as an unknown -1, and retry it.
        #expect(server.statistics.connections >= 60)
        let said: Set = [
            "\(URLError.Code.cannotConnectToHost.rawValue)", "\(URLError.Code.networkConnectionLost.rawValue)",
        ]
        let retried = watcher.retriedErrors
        #expect(!retried.isEmpty && retried.allSatisfy { said.contains($0) }, "\(retried)")
    }

    /// The hostile-server kit's row (issue 86): every second connection reset as it is accepted, 60 files, six attempts
    /// each (the Demo's `--retries 5`), ten runs. A reset before any response while the server answers other
    /// connections is sent again without spending an attempt, so that no file is lost (one of six paid attempts in a
    /// row would fail a file once in 64: 59 of 60 was the kit's count); the first reset of a run, before the queue has
    /// seen the server answer, is spent as before.
    @Test(arguments: TransportKind.allCases)
    func everySecondConnectionResetAtAcceptLosesNoFileInTenRuns(_ transport: TransportKind) async throws {
        let server = try LoopbackServer()
        server.resetConnections(every: 2)
        var spent = 0
        for run in 1...10 {
            let queue = NetworkQueue(transport: transport.make())
            queue.retryPolicy = RetryPolicy(maximumAttempts: 6, backoff: .init(initialDelay: 0.01, maximumDelay: 0.05))
            queue.cancelsAllOnFailure = false
            let requests = (1...60).map { tag in
                var asked = URLRequest(url: server.url("/bytes/200?run=\(run)&n=\(tag)"))
                asked.setValue("close", forHTTPHeaderField: "Connection")
                return NetworkRequest(asked, tag: tag)
            }
            for request in requests { try queue.add(request) }
            await queue.run()
            let lost = requests.filter { $0.state != .finished }.map { "\($0.tag) \(String(describing: $0.failure))" }
            #expect(lost.isEmpty, "run \(run): \(lost)")
            spent += requests.map { $0.attemptCount - 1 }.reduce(0, +)
        }
        // Most resets cost no attempt: every file meets about one reset (600 in ten runs, each paid without the rule);
        // paid are those before the server's first answer in a run, and those whose attempt began after its last
        // answer (25 in ten quiet runs, 88 on one core, 185 in a full run under the thread sanitizer): at most half.
        #expect(spent <= 300, "\(spent) attempts spent on resets in ten runs")
    }

    /// A queue of one request at a time over `transport`, retrying once, whose servers are held after
    /// `failuresInARow` failed connects.
    static func mirroredQueue(_ transport: TransportKind, failuresInARow: Int) -> NetworkQueue {
        let queue = NetworkQueue(transport: transport.make())
        queue.retryPolicy = RetryPolicy(maximumAttempts: 2, backoff: .init(initialDelay: 0.05, jitter: false))
        queue.deadHosts = DeadHosts(failuresInARow: failuresInARow, coolDown: 60)
        queue.cancelsAllOnFailure = false
        queue.maxConcurrentRequestCount = 1
        return queue
    }

    /// Mirrors count (issue 71): a split file whose own URL refuses every connect takes its bytes from its mirror, and
    /// the refusing server's book hears the failed connect (before, a split file's connections never reached it): the
    /// request asked of that server alone, behind it, is held and probed rather than sent, and ends once the window is
    /// spent, never ending the file with a source left.
    @Test(arguments: TransportKind.allCases)
    func aMirroredFilesFailedConnectsReachTheDeadServerBook(_ transport: TransportKind) async throws {
        let server = try LoopbackServer()
        let refusing = try RefusingPort()
        let queue = Self.mirroredQueue(transport, failuresInARow: 1)
        let watcher = Watcher(onHold: { _ in })
        queue.delegate = watcher
        let folder = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("f.bin")
        let mirrored = NetworkRequest(
            URLRequest(url: refusing.url("/bytes/300000")), destination: .file(file),
            fileOptions: .init(maximumConnections: 2, mirrors: [server.url("/bytes/300000")]), tag: 1)
        let alone = request(refusing.url("/bytes/10"), tag: 2)
        try queue.add(mirrored)
        try queue.add(alone)
        await queue.run()
        #expect(mirrored.state == .finished, "\(String(describing: mirrored.failure))")
        #expect(try Data(contentsOf: file) == pattern(0..<300_000))
        // The file's failed connect held the server: the lone request waited for its probe, which failed (its one
        // retry), and it ended with the server, never sending more than its probe.
        #expect(watcher.changes == [.held, .down], "\(watcher.changes)")
        guard case .hostDown(let host, _)? = alone.failure else {
            Issue.record("ended with \(String(describing: alone.failure))")
            return
        }
        #expect(host == "http://127.0.0.1:\(refusing.port)")
    }

    /// A batch of mirrored files whose origin refuses every connect (issue 73): each file's failed connect to the
    /// origin reaches the dead-server book by the one path every connect failure takes, so the origin is held after
    /// three in a row, and every file is fetched from its mirror.
    @Test(arguments: TransportKind.allCases)
    func aBatchOfMirroredFilesMarksARefusingOriginDownAndFinishesFromTheMirror(_ transport: TransportKind)
        async throws
    {
        let server = try LoopbackServer()
        let refusing = try RefusingPort()
        let queue = Self.mirroredQueue(transport, failuresInARow: 3)
        let origin = "http://127.0.0.1:\(refusing.port)"
        let holds = Box<[String]>([])
        let watcher = Watcher(onHold: { hold in holds.with { $0.append("\(hold.server) \(hold.change)") } })
        queue.delegate = watcher
        let folder = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let files = (1...10).map { folder.appendingPathComponent("f\($0).bin") }
        let requests = files.enumerated().map { index, file in
            NetworkRequest(
                URLRequest(url: refusing.url("/bytes/2000?n=\(index)")), destination: .file(file),
                fileOptions: .init(mirrors: [server.url("/bytes/2000?n=\(index)")]), tag: index)
        }
        for request in requests { try queue.add(request) }
        await queue.run()
        for (request, file) in zip(requests, files) {
            #expect(request.state == .finished, "\(String(describing: request.failure))")
            #expect(try Data(contentsOf: file) == pattern(0..<2000))
        }
        let heard = holds.current
        #expect(heard.first == "\(origin) held", "\(heard)")
        #expect(!heard.contains { $0.hasPrefix(server.baseURL.absoluteString) }, "\(heard)")
    }
}
