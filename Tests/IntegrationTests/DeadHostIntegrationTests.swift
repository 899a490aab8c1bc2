import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A dead server costs seconds, not the batch (DESIGN semantics 24), over both transports: nobody listens on port 1
/// of 127.0.0.1 (each connect is refused at once), or a stopped server's port. Three refused connects in a row end the
/// server's waiting requests at once, the other server's requests all finish, and a server back on its port after the
/// cool-down is used again.
@Suite(.admitted, .timeLimit(.minutes(10))) struct DeadHostIntegrationTests {
    @Test(arguments: TransportKind.allCases)
    func aRefusingServersRequestsEndAsDownAndTheOthersFinish(_ transport: TransportKind) async throws {
        let server = try LoopbackServer()
        let queue = NetworkQueue.oneAttempt(transport: transport.make())
        queue.cancelsAllOnFailure = false
        queue.maxConcurrentRequestCount = 4
        let dead = (1...20).map { request(URL(string: "http://127.0.0.1:1/\($0)")!, tag: $0) }
        let good = (21...25).map { request(server.url("/bytes/10?g=\($0)"), tag: $0) }
        for request in dead + good { try queue.add(request) }
        await queue.run()
        #expect(good.allSatisfy { $0.state == .finished })
        // The failures of three rounds of connects (each at most the four slots, counted once) are the requests' own;
        // the third makes the server down, and every other request to it ends with it, whether it waited or was
        // connecting: at most four rounds' worth of connects were sent.
        let own = dead.filter { $0.transportErrorCode == .cannotConnectToHost }
        let down = dead.filter {
            guard case .hostDown(let host, let failures)? = $0.failure else { return false }
            return host == "http://127.0.0.1:1" && failures >= 3
        }
        let failures = dead.map { String(describing: $0.failure) }
        #expect(own.count + down.count == 20, "\(failures)")
        #expect(own.count >= 3 && own.count <= 12, "\(failures)")
        #expect(dead.filter { $0.attemptCount > 0 }.count <= 16, "\(failures)")
    }

    @Test(arguments: TransportKind.allCases)
    func aServerBackAfterItsCoolDownIsUsedAgain(_ transport: TransportKind) async throws {
        // A port that refuses every connect, held so that no other test's server takes it.
        let gone = try RefusingPort()
        let port = gone.port
        // The queue's clock is driven by hand: the cool-down passes without a wait.
        let clock = ManualClock()
        let queue = NetworkQueue.oneAttempt(transport: transport.make(), clock: clock)
        queue.cancelsAllOnFailure = false
        queue.deadHosts = DeadHosts(failuresInARow: 2, coolDown: 30)
        let url = { (path: String) in URL(string: "http://127.0.0.1:\(port)\(path)")! }
        let first = (1...3).map { request(url("/bytes/5?n=\($0)"), tag: $0) }
        for request in first { try queue.add(request) }
        await queue.run()
        #expect(first.allSatisfy { $0.state == .failed })
        #expect(first.contains { if case .hostDown? = $0.failure { true } else { false } })
        // During the cool-down, a request's turn ends it at once, sending nothing.
        let during = request(url("/bytes/5?n=4"), tag: 4)
        try queue.add(during)
        await queue.run()
        guard case .hostDown(let host, _)? = during.failure else {
            Issue.record("\(String(describing: during.failure))")
            return
        }
        #expect(host == "http://127.0.0.1:\(port)")
        // The server comes back on its port and the cool-down passes: the next request probes it, and is answered.
        gone.release()
        let back = try LoopbackServer(preferredPort: port)
        try #require(back.port == port, "the port was taken meanwhile")
        clock.advance(by: 31)
        let later = request(url("/bytes/5?n=5"), tag: 5)
        try queue.add(later)
        await queue.run()
        #expect(later.state == .finished, "\(String(describing: later.failure))")
        #expect(later.response?.body.count == 5)
        #expect(back.statistics.log == ["GET /bytes/5?n=5"])
    }

    @Test func offLetsEachRequestFailAlone() async throws {
        let queue = NetworkQueue.oneAttempt(transport: TransportKind.curl.make())
        queue.cancelsAllOnFailure = false
        queue.deadHosts = .off
        let dead = (1...6).map { request(URL(string: "http://127.0.0.1:1/\($0)")!, tag: $0) }
        for request in dead { try queue.add(request) }
        await queue.run()
        #expect(dead.allSatisfy { $0.transportErrorCode == .cannotConnectToHost })
    }

    /// A name under `.invalid` (RFC 6761: it resolves nowhere, and a resolver answers so without asking another) fails
    /// its lookups, which count as failed connects: its requests end as host down after three, the others finish.
    @Test(arguments: TransportKind.allCases)
    func aNameThatDoesNotResolveGoesDownAfterThreeLookups(_ transport: TransportKind) async throws {
        let server = try LoopbackServer()
        let queue = NetworkQueue.oneAttempt(transport: transport.make())
        queue.cancelsAllOnFailure = false
        queue.maxConcurrentRequestCount = 1
        let dead = (1...10).map { request(URL(string: "http://nq-gone.invalid/\($0)")!, tag: $0) }
        let good = request(server.url("/bytes/10"), tag: 11)
        for request in dead + [good] { try queue.add(request) }
        await queue.run()
        #expect(good.state == .finished)
        // One at a time: two lookups fail on their own, the third makes the server down and ends with it, and the seven
        // after it end at their turn, sending nothing.
        let own = dead.filter { $0.transportErrorCode == .cannotFindHost || $0.transportErrorCode == .dnsLookupFailed }
        let down = dead.filter {
            guard case .hostDown(let host, 3)? = $0.failure else { return false }
            return host == "http://nq-gone.invalid:80"
        }
        let failures = dead.map { String(describing: $0.failure) }
        #expect(own.count == 2 && down.count == 8, "\(failures)")
        #expect(dead.filter { $0.attemptCount > 0 }.count == 3, "\(failures)")
    }
}
