import Foundation
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// ``TransportPass``: the events a transport reports inside a pass reach each queue when the pass ends, together;
/// outside one, each at once.
@Suite(.admitted, .timeLimit(.minutes(10))) struct TransportPassTests {
    /// Two requests started on a transport that lets the test report their events.
    private static func twoStarted() async throws -> (NetworkQueue, StubbornTransport, [NetworkRequest]) {
        let transport = StubbornTransport()
        let queue = NetworkQueue(transport: transport)
        queue.maxConcurrentRequestCount = 2
        let requests = [request(1), request(2)]
        for request in requests { try queue.add(request) }
        queue.go()
        await eventually { transport.pending.current.count == 2 }
        return (queue, transport, requests)
    }

    @Test func aPassHandsItsEventsInWhenItEnds() async throws {
        let (queue, transport, requests) = try await Self.twoStarted()
        var inside: [NetworkRequest.State] = []
        TransportPass.run {
            transport.deliverLateSuccess()
            // Each body was handled, but the queue decides when the pass ends.
            inside = requests.map(\.state)
            // A pass inside a pass is part of it.
            TransportPass.run { inside += requests.map(\.state) }
            inside += requests.map(\.state)
        }
        #expect(inside == Array(repeating: .running, count: 6))
        // The pass ended on this thread: both requests are finished when it returns.
        #expect(requests.map(\.state) == [.finished, .finished])
        #expect(requests.map { $0.response?.body } == [Data("ok".utf8), Data("ok".utf8)])
        await queue.run()
    }

    @Test func withoutAPassEachEventGoesInAtOnce() async throws {
        let (queue, transport, requests) = try await Self.twoStarted()
        transport.deliverLateSuccess()
        #expect(requests.map(\.state) == [.finished, .finished])
        await queue.run()
    }

    @Test func aPassThatThrowsStillHandsItsEventsIn() async throws {
        struct Stop: Error {}
        let (queue, transport, requests) = try await Self.twoStarted()
        #expect(throws: Stop.self) {
            try TransportPass.run { () throws(Stop) in
                transport.deliverLateSuccess()
                throw Stop()
            }
        }
        #expect(requests.map(\.state) == [.finished, .finished])
        await queue.run()
    }
}
