import Foundation
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request for `http://<host>.test/<tag>`.
private func request(host: String, _ tag: Int) -> NetworkRequest {
    NetworkRequest(URLRequest(url: URL(string: "http://\(host).test/\(tag)")!), tag: tag)
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct PerHostLimitTests {
    @Test func aFullHostDoesNotHoldBackAnotherHostBehindIt() async throws {
        let gate = TransferGate()
        let transport = InMemoryTransport.ok(gate: gate)
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.maxConcurrentRequestCount = 8
        queue.maxConcurrentRequestsPerHost = 2
        // Six requests to a, then two to b: b's must not wait behind a's.
        for tag in 1...6 { try queue.add(request(host: "a", tag)) }
        for tag in 7...8 { try queue.add(request(host: "b", tag)) }
        queue.go()
        await transport.waitUntilStarted(4)
        let started = transport.startedRequests.map { $0.url!.absoluteString }
        #expect(started == ["http://a.test/1", "http://a.test/2", "http://b.test/7", "http://b.test/8"])
        #expect(queue.requests.filter { $0.state == .running }.map(\.tag) == [1, 2, 7, 8])
        gate.open()
        await queue.run()
        #expect(transport.statistics.started == 8)
        // Two per host, four in all: never more.
        #expect(transport.statistics.maxInFlight == 4)
    }

    @Test func turningTheLimitOnCountsRunningTransfersAndTurningItOffStartsTheRest() async throws {
        let gate = TransferGate()
        let transport = InMemoryTransport.ok(gate: gate)
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.maxConcurrentRequestCount = 3
        for tag in 1...5 { try queue.add(request(host: "a", tag)) }
        queue.go()
        await transport.waitUntilStarted(3)
        queue.maxConcurrentRequestsPerHost = 1
        queue.maxConcurrentRequestCount = 6
        // Three already run for host a, over the new limit of one: nothing more may start.
        #expect(queue.requests.filter { $0.state == .running }.count == 3)
        queue.maxConcurrentRequestsPerHost = -4
        #expect(queue.maxConcurrentRequestsPerHost == 0)
        await transport.waitUntilStarted(5)
        #expect(transport.statistics.started == 5)
        gate.open()
        await queue.run()
    }

    @Test func defaultIsNoPerHostLimit() {
        #expect(NetworkQueue(transport: InMemoryTransport.ok()).maxConcurrentRequestsPerHost == 0)
    }
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct PredicateTests {
    @Test func cancelWhereCancelsExactlyTheChosenRequests() async throws {
        let gate = TransferGate()
        let transport = InMemoryTransport.ok(gate: gate)
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.cancelsAllOnFailure = false
        queue.maxConcurrentRequestCount = 2
        let recorder = Recorder()
        queue.delegate = recorder
        // Album 7 is tags 1, 3, 5 and 7 (one of them running when cancelled); the rest are album 8.
        let requests = (1...8).map {
            NetworkRequest(
                URLRequest(url: URL(string: "http://x.test/\($0)")!), tag: $0, userInfo: ["album": $0 % 2 == 1 ? 7 : 8])
        }
        for request in requests { try queue.add(request) }
        queue.go()
        await transport.waitUntilStarted(2)
        let cancelled = queue.cancel { $0.userInfo["album"] as? Int == 7 }
        #expect(cancelled.map(\.tag) == [1, 3, 5, 7])
        #expect(queue.requests.filter { _ in true }.map(\.tag) == [2, 4, 6, 8])
        gate.open()
        await queue.run()
        for request in requests {
            #expect(request.state == (request.tag % 2 == 1 ? .cancelled : .finished), "tag \(request.tag)")
        }
        // The cancelled ones that never started never reach the transport.
        let sent = Set(transport.startedRequests.map { Int($0.url!.lastPathComponent)! })
        #expect(sent.isSuperset(of: [2, 4, 6, 8]) && sent.isDisjoint(with: [3, 5, 7]))
        #expect(queue.cancel { _ in true }.isEmpty)
    }
}
