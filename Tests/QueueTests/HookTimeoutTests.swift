import Foundation
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A hook that never answers holds its request only for the request's `timeoutInterval`: the queue
/// still drains. Time is the test's clock.
@Suite(.admitted, .timeLimit(.minutes(10))) struct HookTimeoutTests {
    /// Suspends until the test lets it go (at its end), then answers late: the answer must be ignored.
    final class Stall: Sendable {
        private let waiting = Box<[CheckedContinuation<Void, Never>]>([])
        private let arrivals = Box(0)
        var count: Int { arrivals.with { $0 } }

        func wait() async {
            await withCheckedContinuation { continuation in
                waiting.with { $0.append(continuation) }
                arrivals.with { $0 += 1 }
            }
        }

        func release() {
            for continuation in waiting.with({ list in
                defer { list = [] }
                return list
            }) { continuation.resume() }
        }
    }

    @Test func anAdaptHookThatNeverReturnsFailsTheRequestWithTimedOut() async throws {
        let clock = ManualClock()
        let stall = Stall()
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok(), clock: clock)
        queue.adapter = { urlRequest in
            await stall.wait()
            return urlRequest
        }
        let request = request(1, timeout: 1)
        try queue.add(request)
        queue.go()
        await eventually(within: 60) { stall.count == 1 }
        #expect(stall.count == 1)
        clock.advance(by: 0.999)
        #expect(request.state == .running)
        clock.advance(by: 0.001)
        await queue.run()
        #expect(request.failure == .transport(URLError(.timedOut)))
        stall.release()
    }

    @Test func aRetryClosureThatNeverAnswersFailsTheRequestWithTimedOut() async throws {
        let clock = ManualClock()
        let stall = Stall()
        let transport = InMemoryTransport { _ in [.respond(status: 503)] }
        let queue = NetworkQueue(transport: transport, clock: clock)
        queue.retryPolicy = RetryPolicy(decide: { _, _, _ in
            await stall.wait()
            return .retry
        })
        let request = request(1, timeout: 2)
        try queue.add(request)
        queue.go()
        await eventually(within: 60) { stall.count == 1 }
        #expect(stall.count == 1)
        #expect(request.state == .waitingToRetry)
        clock.advance(by: 1.999)
        #expect(request.state == .waitingToRetry)
        clock.advance(by: 0.001)
        await queue.run()
        #expect(request.failure == .transport(URLError(.timedOut)))
        #expect(transport.statistics.started == 1)
        stall.release()
    }

    @Test func aHookWithinItsTimeoutIsUnaffected() async throws {
        let clock = ManualClock()
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok(), clock: clock)
        queue.adapter = { $0 }
        let request = request(1, timeout: 1)
        try queue.add(request)
        await queue.run()
        #expect(request.state == .finished)
    }
}
