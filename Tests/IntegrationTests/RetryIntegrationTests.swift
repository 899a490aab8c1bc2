import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Retries against the loopback server, over each transport: what reaches the server, and what the
/// caller gets.
@Suite(.admitted, .timeLimit(.minutes(10))) struct RetryIntegrationTests {
    /// A queue retrying at once (a backoff of 0), with a recorder.
    static func retryingQueue(_ transport: TransportKind, clock: any QueueClock = SystemQueueClock()) -> (
        NetworkQueue, Recorder
    ) {
        let queue = NetworkQueue(transport: transport.make(), clock: clock)
        queue.retryPolicy = RetryPolicy(backoff: .init(initialDelay: 0))
        let recorder = queue.recording()
        return (queue, recorder)
    }

    static func retries(_ recorder: Recorder) -> Int {
        recorder.events.filter { if case .retry = $0 { true } else { false } }.count
    }

    @Test(arguments: TransportKind.allCases) func aBodyCutMidwayIsRetriedAndArrivesWholeCountedOnce(
        _ transport: TransportKind
    ) async throws {
        let server = try LoopbackServer()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (queue, recorder) = Self.retryingQueue(transport)
        let size = 400_000
        let file = directory.appendingPathComponent("cut.bin")
        let inMemory = request(server.url("/flaky/\(size)?key=memory&mode=drop"), tag: 1)
        let toFile = NetworkRequest(
            URLRequest(url: server.url("/flaky/\(size)?key=file&mode=drop")), destination: .file(file), tag: 2)
        try queue.add(inMemory)
        try queue.add(toFile)
        let progress = await queue.run()
        #expect(toFile.failure == nil, "\(String(describing: toFile.failure))")
        #expect(try inMemory.result?.get().body == pattern(0..<size))
        #expect(try Data(contentsOf: file) == pattern(0..<size))
        #expect(FileManager.default.fileExists(atPath: file.path + ".part") == false)
        #expect(inMemory.attemptCount == 2)
        #expect(toFile.attemptCount == 2)
        #expect(server.statistics.requests == 4)
        #expect(Self.retries(recorder) == 2)
        // Each body counted once, the fraction never fell, and it ends at 1.
        #expect(progress.bytesReceived == Int64(2 * size))
        #expect(progress.fractionCompleted == 1)
        let fractions = recorder.progresses.current.map(\.fractionCompleted)
        #expect(fractions == fractions.sorted(), "\(fractions)")
    }

    @Test(arguments: TransportKind.allCases) func a503IsRetriedUntilItSucceeds(_ transport: TransportKind) async throws
    {
        let server = try LoopbackServer()
        let (queue, recorder) = Self.retryingQueue(transport)
        let flaky = request(server.url("/flaky/1000?key=a&failures=2&retryAfter=0"), tag: 1)
        try queue.add(flaky)
        await queue.run()
        #expect(try flaky.result?.get().body == pattern(0..<1000))
        #expect(flaky.attemptCount == 3)
        #expect(server.statistics.requests == 3)
        // As the error describes its URL: query values masked.
        let shown = "http://127.0.0.1:\(server.port)/flaky/1000?key=***&failures=***&retryAfter=***"
        #expect(
            recorder.events.filter { if case .progress = $0 { false } else { true } }.map(\.description) == [
                "start(1)", "headers(1, 503)", "retry(1, 0.0, HTTP status 503 from \(shown))", "headers(1, 503)",
                "retry(1, 0.0, HTTP status 503 from \(shown))", "headers(1, 200)", "finish(1)", "queueFinished",
            ])
    }

    @Test(arguments: TransportKind.allCases) func aPostIsRetriedOnlyWhenItOptsIn(_ transport: TransportKind)
        async throws
    {
        let server = try LoopbackServer()
        let (queue, _) = Self.retryingQueue(transport)
        queue.cancelsAllOnFailure = false
        var plain = URLRequest(url: server.url("/flaky/10?key=plain&failures=9"))
        plain.httpMethod = "POST"
        plain.httpBody = Data("order=1".utf8)
        var optedIn = plain
        optedIn.url = server.url("/flaky/10?key=opted&failures=9")
        let once = NetworkRequest(plain, tag: 1)
        let thrice = NetworkRequest(
            optedIn, retryPolicy: RetryPolicy(retriesNonIdempotentMethods: true, backoff: .init(initialDelay: 0)),
            tag: 2)
        try queue.add(once)
        try queue.add(thrice)
        await queue.run()
        #expect(once.attemptCount == 1)
        #expect(thrice.attemptCount == 3)
        #expect(server.statistics.log.filter { $0.contains("key=plain") }.count == 1)
        #expect(server.statistics.log.filter { $0.contains("key=opted") }.count == 3)
        #expect(thrice.failure == .unacceptableStatus(code: 503, url: optedIn.url))
    }

    @Test(arguments: TransportKind.allCases) func aRetryAfterOverTheCapFailsAtOnceWithTheServersAnswer(
        _ transport: TransportKind
    ) async throws {
        let server = try LoopbackServer()
        let (queue, recorder) = Self.retryingQueue(transport)
        let busy = request(server.url("/flaky/10?key=b&failures=1&retryAfter=3600"), tag: 1)
        try queue.add(busy)
        await queue.run()
        #expect(busy.failure == .unacceptableStatus(code: 503, url: busy.url))
        #expect(busy.attemptCount == 1)
        #expect(Self.retries(recorder) == 0)
    }

    /// The clock never moves: the 30 s backoff can only end early, when the sibling succeeds.
    @Test(arguments: TransportKind.allCases)
    func aSuccessOnTheSameHostRetriesAWaitingRequestEarly(_ transport: TransportKind) async throws {
        let server = try LoopbackServer()
        let clock = ManualClock()
        let (queue, recorder) = Self.retryingQueue(transport, clock: clock)
        queue.retryPolicy = RetryPolicy(backoff: .init(initialDelay: 30, jitter: false))
        queue.maxConcurrentRequestCount = 1
        let first = request(server.url("/flaky/100?key=early&failures=1"), tag: 1)
        let sibling = request(server.url("/bytes/100"), tag: 2)
        try queue.add(first)
        try queue.add(sibling)
        await queue.run()
        #expect(first.state == .finished)
        #expect(first.attemptCount == 2)
        #expect(recorder.events.contains(.retry(1, 30, .unacceptableStatus(code: 503, url: first.url))))
        let order = recorder.events.filter { [.finish(1), .finish(2)].contains($0) }
        #expect(order == [.finish(2), .finish(1)])
    }
}
