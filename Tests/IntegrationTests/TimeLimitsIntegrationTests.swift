import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request's deadline and lowest speed against real trickling servers, over both transports: the request ends
/// with its own error and its figures, a file's retry continues its part, nothing is left behind, and the
/// connections close. (The decisions are the engine's, tested exactly on injected time in `TimeLimitsTests`;
/// these check the shell carries them out.)
@Suite(.testLane, .timeLimit(.minutes(5))) struct TimeLimitsIntegrationTests {
    /// 200 bytes in 40 pieces, 0.5 s apart: 10 B/s for 20 s.
    static let trickle = "/trickle/200/40/500"

    @Test(arguments: TransportKind.allCases) func aTrickleEndsTooSlowItsRetryContinuingThePart(
        _ transport: TransportKind
    ) async throws {
        let server = try LoopbackServer()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("t.bin")
        let queue = NetworkQueue(transport: transport.make())
        queue.retryPolicy = RetryPolicy(maximumAttempts: 2, backoff: .init(initialDelay: 0, jitter: false))
        // A window long enough for the head to arrive first on a loaded machine (an instrumented run under the
        // thread sanitizer missed 2 s and 4 s), so that the part has a validator; the trickle lasts 20 s, past both
        // attempts.
        let limit = LowestSpeed(bytesPerSecond: 100, over: 8)
        queue.timeLimits = TimeLimits(lowestSpeed: limit)
        queue.collectsMetrics = true
        let url = server.url(Self.trickle)
        let request = NetworkRequest(url: url, destination: .file(file))
        try queue.add(request)
        await queue.run()
        guard case .tooSlow(let rate, limit, url)? = request.failure else {
            Issue.record("ended with \(String(describing: request.failure))")
            return
        }
        #expect(rate < 100)
        #expect(request.attemptCount == 2)
        let ranges = server.statistics.headers.map { $0["range"] }
        try #require(ranges.count == 2, "\(ranges)")
        let seen =
            "\(ranges), arrivals \(server.statistics.arrivals), \(server.statistics.bytesWritten) bytes written, "
            + "attempts \(String(describing: request.metrics?.attempts))"
        #expect(ranges[0] == nil && ranges[1]?.hasPrefix("bytes=") == true, "\(seen)")
        #expect(ranges[1] != "bytes=0-", "the retry continues the part: \(ranges)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
        await eventually { server.statistics.inFlight == 0 }
        #expect(server.statistics.inFlight == 0, "a connection stayed open after the request ended")
    }

    @Test(arguments: TransportKind.allCases) func aTricklePastItsDeadlineEndsThereAndIsNotRetried(
        _ transport: TransportKind
    ) async throws {
        let server = try LoopbackServer()
        // The queue retries (3 attempts by default); its deadline is 7 days: this request's own deadline wins, and
        // ends its one attempt (the trickle takes 20 s).
        let queue = NetworkQueue(transport: transport.make())
        let url = server.url(Self.trickle)
        let request = NetworkRequest(url: url, timeLimits: TimeLimits(deadline: 0.8))
        try queue.add(request)
        await queue.run()
        #expect(request.failure == .deadlineExceeded(seconds: 0.8, url: url))
        #expect(request.attemptCount == 1)
        #expect(server.statistics.log.filter { $0.hasPrefix("GET") }.count <= 1)
        await eventually { server.statistics.inFlight == 0 }
        #expect(server.statistics.inFlight == 0, "a connection stayed open after the request ended")
    }
}
