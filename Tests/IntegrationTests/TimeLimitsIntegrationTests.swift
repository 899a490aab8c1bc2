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
@Suite(.admitted, .timeLimit(.minutes(10))) struct TimeLimitsIntegrationTests {
    /// 200 bytes in 40 pieces, 0.5 s apart: 10 B/s for 20 s.
    static let trickle = "/trickle/200/40/500"

    /// The lowest-speed windows run on the queue's clock, which the test moves (issue 72): each attempt's window is
    /// judged only once the engine has counted bytes of it, so the part surely holds bytes under the response's
    /// validator when the first attempt ends, however late a loaded machine hands the trickle over. (On the real
    /// clock, an 8 s window under full-suite load sometimes ended before URLSession had handed over a byte: the part
    /// had nothing to continue, and the retry rightly asked for the whole file.)
    @Test(arguments: TransportKind.allCases) func aTrickleEndsTooSlowItsRetryContinuingThePart(
        _ transport: TransportKind
    ) async throws {
        let server = try LoopbackServer()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("t.bin")
        let clock = ManualClock()
        let queue = NetworkQueue(transport: transport.make(), clock: clock)
        queue.retryPolicy = RetryPolicy(maximumAttempts: 2, backoff: .init(initialDelay: 0, jitter: false))
        let limit = LowestSpeed(bytesPerSecond: 100, over: 8)
        queue.timeLimits = TimeLimits(lowestSpeed: limit)
        queue.collectsMetrics = true
        // 2,000 bytes in 400 pieces, 0.5 s apart: the trickle outlasts both attempts, however slowly the test runs.
        let url = server.url("/trickle/2000/400/500")
        let request = NetworkRequest(url: url, destination: .file(file))
        try queue.add(request)
        let running = Task { await queue.run() }
        // The first attempt's bytes reached the engine (and so its file): its window's end is judged too slow.
        await eventually {
            clock.advance(by: 0)
            return queue.progress.bytesReceived >= 5
        }
        clock.advance(by: limit.seconds)
        // The retry is sent at once (no backoff): its window's end is judged too slow in turn, its budget spent.
        await eventually {
            clock.advance(by: 0)
            return server.statistics.headers.count == 2
        }
        clock.advance(by: limit.seconds)
        _ = await running.value
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
