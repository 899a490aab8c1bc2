import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

/// ``NetworkQueue/adaptiveConcurrency`` at a real batch's scale (`NQ_BIG_BATCH`: 100,000 in the scale tier, 10,000 in
/// the first): every request ends exactly once, and the transfers in flight never pass the caps, over one server or a
/// hundred.
@Suite(.admitted, .timeLimit(.minutes(10))) struct AdaptiveScaleTests {
    @Test func aBigBatchWithAdaptiveConcurrencyEndsEveryRequestOnceWithinItsCaps() async throws {
        try await HeavyTests.exclusively {
            for servers in [1, 100] {
                let count = TestEnvironment.bigBatch / (servers == 1 ? 10 : 1)
                let transport = InMemoryTransport.instant(body: Data("ok".utf8))
                let queue = NetworkQueue.oneAttempt(transport: transport)
                queue.showsAccurateProgress = false
                queue.maxConcurrentRequestCount = 64
                queue.adaptiveConcurrency = AdaptiveConcurrency(maximum: 8)
                let recorder = queue.recording()
                for index in 0..<count {
                    try queue.add(
                        NetworkRequest(url: URL(string: "http://s\(index % servers).example/\(index)")!, tag: index))
                }
                let progress = await queue.run()
                #expect(progress.finishedRequestCount == count)
                let finished = recorder.events.compactMap { entry -> Int? in
                    if case .finish(let tag) = entry { tag } else { nil }
                }
                #expect(Set(finished).count == count)
                // One server: its level (at most 8); a hundred: the queue's 64.
                #expect(transport.statistics.maxInFlight <= (servers == 1 ? 8 : 64), "\(transport.statistics)")
                #expect(progress.concurrencyLevel == 0)
            }
        }
    }
}
