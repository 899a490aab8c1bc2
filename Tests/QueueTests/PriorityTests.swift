import Foundation
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Request priorities through the public API, with one slot so that the start order is exact.
@Suite(.admitted, .timeLimit(.minutes(10))) struct PriorityTests {
    func prioritized(_ tag: Int, _ priority: NetworkRequest.Priority) -> NetworkRequest {
        NetworkRequest(URLRequest(url: url(tag)), priority: priority, tag: tag)
    }

    @Test(arguments: [SchedulingOrder.fifo, .lifo])
    func theHighestPriorityStartsFirstAndTheOrderDecidesWithinOne(order: SchedulingOrder) async throws {
        let transport = InMemoryTransport.ok()
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.maxConcurrentRequestCount = 1
        queue.order = order
        let levels: [NetworkRequest.Priority] = [.low, .normal, .veryHigh, .normal, .high, .veryLow, .high, 2]
        for (index, priority) in levels.enumerated() { try queue.add(prioritized(index + 1, priority)) }
        await queue.run()
        let expected = order == .fifo ? [3, 5, 7, 8, 2, 4, 1, 6] : [3, 7, 5, 8, 4, 2, 1, 6]
        #expect(transport.startedRequests.map(tag(of:)) == expected)
    }

    @Test func aPendingRequestMovesAheadWhenItsPriorityIsRaised() async throws {
        let gated = try GatedQueue(limit: 1, count: 5)
        let (queue, transport, gate) = (gated.queue, gated.transport, gated.gate)
        queue.go()
        await transport.waitUntilStarted(1)
        #expect(queue.setPriority(.veryHigh, for: gated.requests[4]))
        #expect(queue.setPriority(.high, for: gated.requests[2]))
        #expect(queue.setPriority(.low, for: gated.requests[1]))
        #expect(gated.requests[4].priority == .veryHigh)
        #expect(gated.requests[0].priority == .normal)
        // The running one keeps running; the rest start by their new priorities.
        gate.open()
        await queue.run()
        #expect(transport.startedRequests.map(tag(of:)) == [1, 5, 3, 4, 2])
        // Ended: nothing to change any more.
        #expect(!queue.setPriority(.low, for: gated.requests[0]))
        #expect(gated.requests[0].priority == .normal)
    }

    @Test func aRequestOfAnotherQueueOrNeverAddedIsLeftAlone() throws {
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok())
        let other = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok())
        let added = prioritized(1, .low)
        try other.add(added)
        #expect(!queue.setPriority(.high, for: added))
        #expect(!queue.setPriority(.high, for: prioritized(2, .normal)))
        #expect(added.priority == .low)
        other.cancelAll()
    }

    @Test func thePerHostLimitStillHoldsAcrossPriorities() async throws {
        let transport = InMemoryTransport.ok()
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.maxConcurrentRequestCount = 1
        queue.maxConcurrentRequestsPerHost = 1
        let hosts = ["a", "b", "a", "b"]
        let priorities: [NetworkRequest.Priority] = [.normal, .low, .high, .normal]
        for index in 0..<4 {
            let urlRequest = URLRequest(url: URL(string: "http://\(hosts[index]).test/\(index + 1)")!)
            try queue.add(NetworkRequest(urlRequest, priority: priorities[index], tag: index + 1))
        }
        await queue.run()
        #expect(transport.startedRequests.map(tag(of:)) == [3, 1, 4, 2])
        #expect(transport.statistics.maxInFlight == 1)
    }
}
