import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Per-host pacing and a server's word held by the batch, against two loopback servers (two ports: two servers to
/// the queue), over each transport. The server's own arrival times are the evidence; only lower bounds on the gaps
/// are asserted (the queue guarantees them; a loaded machine only lengthens them).
@Suite(.testLane, .timeLimit(.minutes(10))) struct PoliteBatchTests {
    /// The gaps between consecutive arrivals, in seconds.
    static func gaps(_ arrivals: [Double]) -> [Double] { zip(arrivals.dropFirst(), arrivals).map { $0 - $1 } }

    @Test(arguments: TransportKind.allCases) func startsToAPacedServerAreSpacedAndTheOtherIsNot(
        _ transport: TransportKind
    ) async throws {
        let paced = try LoopbackServer()
        let free = try LoopbackServer()
        let queue = NetworkQueue(transport: transport.make())
        queue.maxConcurrentRequestCount = 8
        queue.hostPacing = HostPacing(interval: 0.3)
        #expect(queue.setHostPacing(.unpaced, for: free.baseURL))
        for tag in 0..<5 { try queue.add(request(paced.url("/bytes/100?n=\(tag)"), tag: tag)) }
        for tag in 5..<10 { try queue.add(request(free.url("/bytes/100?n=\(tag)"), tag: tag)) }
        let progress = await queue.run()
        #expect(progress.finishedRequestCount == 10)
        let pacedArrivals = paced.statistics.arrivals
        let freeArrivals = free.statistics.arrivals
        #expect(pacedArrivals.count == 5 && freeArrivals.count == 5)
        // 0.3 s apart as the queue started them; a connection's setup may shift an arrival by a little.
        #expect(Self.gaps(pacedArrivals).allSatisfy { $0 >= 0.2 }, "\(Self.gaps(pacedArrivals))")
        #expect(pacedArrivals.last! - pacedArrivals.first! >= 4 * 0.3 - 0.1)
        // The unpaced server's five did not wait for the paced one's turns.
        #expect(freeArrivals.last! < pacedArrivals[2], "\(freeArrivals) \(pacedArrivals)")
    }

    @Test(arguments: TransportKind.allCases) func a429WithRetryAfterHoldsItsServerWhileTheOtherRuns(
        _ transport: TransportKind
    ) async throws {
        let held = try LoopbackServer()
        let other = try LoopbackServer()
        let queue = NetworkQueue(transport: transport.make())
        queue.maxConcurrentRequestCount = 1
        let log = Box<[NetworkQueueLogRecord]>([])
        queue.logHandler = { record in log.with { $0.append(record) } }
        // The first answer is a 429 asking for 2 s; the request waits them out and succeeds.
        try queue.add(request(held.url("/flaky/100?key=a&failures=1&status=429&retryAfter=2"), tag: 0))
        for tag in 1..<3 { try queue.add(request(held.url("/bytes/100?n=\(tag)"), tag: tag)) }
        for tag in 3..<6 { try queue.add(request(other.url("/bytes/100?n=\(tag)"), tag: tag)) }
        let progress = await queue.run()
        #expect(progress.finishedRequestCount == 6)
        let arrivals = held.statistics.arrivals
        #expect(held.statistics.log.count == 4)
        // Nothing reached the held server for 2 s after its 429, though its requests were first in line.
        #expect(arrivals[1] - arrivals[0] >= 1.9, "\(arrivals)")
        // The other server's requests took the slot meanwhile.
        #expect(other.statistics.arrivals.allSatisfy { $0 < arrivals[1] })
        let holds = log.with { $0 }.filter { $0.event == .hostHeld }
        #expect(holds.count == 1)
        #expect(holds.first?.message.contains("held for 2 s") == true, "\(holds.map(\.message))")
        #expect(holds.first?.message.contains("429 with Retry-After") == true)
    }

    @Test(arguments: TransportKind.allCases) func aSpentBudgetHoldsTheServerUntilItsReset(_ transport: TransportKind)
        async throws
    {
        let server = try LoopbackServer()
        let queue = NetworkQueue(transport: transport.make())
        queue.maxConcurrentRequestCount = 1
        // Each response says the budget is spent for 1 s: the next start waits for it (without the hold they would
        // follow one another at once).
        for tag in 0..<3 { try queue.add(request(server.url("/bytes/100?spent=1&n=\(tag)"), tag: tag)) }
        let progress = await queue.run()
        #expect(progress.finishedRequestCount == 3)
        let gaps = Self.gaps(server.statistics.arrivals)
        #expect(gaps.count == 2 && gaps.allSatisfy { $0 >= 0.9 }, "\(gaps)")
    }

    @Test(arguments: TransportKind.allCases) func withTheBackoffOffTheServersWordHoldsNothing(
        _ transport: TransportKind
    ) async throws {
        let server = try LoopbackServer()
        let queue = NetworkQueue(transport: transport.make())
        queue.hostBackoff = .off
        queue.maxConcurrentRequestCount = 1
        for tag in 0..<3 { try queue.add(request(server.url("/bytes/100?spent=30&n=\(tag)"), tag: tag)) }
        let progress = await queue.run()
        #expect(progress.finishedRequestCount == 3)
        #expect(server.statistics.requests == 3)
    }
}
