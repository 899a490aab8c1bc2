import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Per-host limits and groups against two loopback servers (two ports: two hosts to the queue).
@Suite(.admitted, .timeLimit(.minutes(10))) struct BatchIntegrationTests {
    @Test(arguments: TransportKind.allCases) func twoHostsWithTwoEachNeverMoreOnEitherWire(_ transport: TransportKind)
        async throws
    {
        let first = try LoopbackServer()
        let second = try LoopbackServer()
        let (queue, recorder) = makeQueue(transport, limit: 8)
        queue.maxConcurrentRequestsPerHost = 2
        // Each server holds its requests until two have arrived: a third in flight would show in its maximum.
        for tag in 1...8 { try queue.add(request(first.url("/barrier/100?n=2&i=\(tag)"), tag: tag)) }
        for tag in 9...16 { try queue.add(request(second.url("/barrier/100?n=2&i=\(tag)"), tag: tag)) }
        let progress = await queue.run()
        #expect(progress.finishedRequestCount == 16)
        #expect(first.statistics.maxInFlight == 2)
        #expect(second.statistics.maxInFlight == 2)
        #expect(first.statistics.requests == 8 && second.statistics.requests == 8)
        #expect(recorder.queueFinishedCount == 1)
    }

    @Test(arguments: TransportKind.allCases) func fiveIdenticalCoalescedRequestsAreOneGetOnTheWire(
        _ transport: TransportKind
    ) async throws {
        let server = try LoopbackServer()
        let (queue, recorder) = makeQueue(transport)
        queue.duplicatePolicy = .coalesce
        let requests = (1...5).map { request(server.url("/bytes/5000"), tag: $0) }
        for request in requests { try queue.add(request) }
        let progress = await queue.run()
        #expect(server.statistics.requests == 1)
        #expect(server.statistics.log == ["GET /bytes/5000"])
        for request in requests { #expect(try request.result?.get().body == pattern(0..<5000)) }
        #expect(recorder.events.filter { if case .finish = $0 { true } else { false } }.count == 5)
        #expect(progress.finishedRequestCount == 5)
        #expect(progress.bytesReceived == 5000)
    }
}
