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
/// server's waiting requests at once, the other server's requests all finish, and a server back on its port is asked
/// again by the first request after its verdict's quiet second.
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

    /// The hostile-server kit's schedule (issue 86): a server down for its first 5 s, lines at 0, 8, 30 and 66 s. The
    /// lines at 0 s end "host down" (here with no retry, so their window is nothing: the third refused connect in a
    /// row makes the server down, and the fourth ends with it); a line within a second of that verdict ends at once, sending nothing;
    /// the lines at 8, 30 and 66 s are all fetched, the first of those at 8 s being the server's one probe, nothing
    /// sent before it. The queue's clock is driven by hand: no wait.
    @Test(arguments: TransportKind.allCases)
    func aServerDownForItsFirstSecondsIsAskedAgainOnceItIsBack(_ transport: TransportKind) async throws {
        // A port that refuses every connect, held so that no other test's server takes it.
        let gone = try RefusingPort()
        let port = gone.port
        let clock = ManualClock()
        let queue = NetworkQueue.oneAttempt(transport: transport.make(), clock: clock)
        queue.cancelsAllOnFailure = false
        queue.maxConcurrentRequestCount = 1
        let url = { (n: Int) in URL(string: "http://127.0.0.1:\(port)/bytes/5?n=\(n)")! }
        let atZero = (1...4).map { request(url($0), tag: $0) }
        for request in atZero { try queue.add(request) }
        await queue.run()
        let said = atZero.map { String(describing: $0.failure) }
        // Two refused connects are their requests' own; the third makes the server down and ends with it, and the
        // fourth ends at its turn, sending nothing.
        #expect(atZero.prefix(2).allSatisfy { $0.transportErrorCode == .cannotConnectToHost }, "\(said)")
        for down in atZero.suffix(2) {
            guard case .hostDown(let host, 3)? = down.failure else {
                Issue.record("\(said)")
                return
            }
            #expect(host == "http://127.0.0.1:\(port)")
        }
        #expect(atZero[3].attemptCount == 0)
        // Half a second later a probe has failed lately: a line ends at once.
        clock.advance(by: 0.5)
        let soon = request(url(5), tag: 5)
        try queue.add(soon)
        await queue.run()
        guard case .hostDown? = soon.failure else {
            Issue.record("\(String(describing: soon.failure))")
            return
        }
        #expect(soon.attemptCount == 0)
        // The server is up from 5 s on its port.
        gone.release()
        let back = try LoopbackServer(preferredPort: port)
        try #require(back.port == port, "the port was taken meanwhile")
        for (at, tags) in [(8.0, 6...8), (30, 9...11), (66, 12...14)] {
            clock.advance(by: at - (clock.now() - 1_000))
            let batch = tags.map { request(url($0), tag: $0) }
            for request in batch { try queue.add(request) }
            await queue.run()
            let failures = batch.map { String(describing: $0.failure) }
            #expect(
                batch.allSatisfy { $0.state == .finished && $0.response?.body.count == 5 }, "at \(at) s: \(failures)")
        }
        // Nothing was sent but the lines themselves: the first at 8 s was the probe.
        #expect(back.statistics.log == (6...14).map { "GET /bytes/5?n=\($0)" })
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
