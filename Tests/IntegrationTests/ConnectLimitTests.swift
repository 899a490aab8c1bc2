import Foundation
import LoopbackServer
import TestSupport
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The connect's own time limit (``TimeLimits/connect``, curl's `--connect-timeout`): a host that never answers a
/// connect fails its attempt as a failed connect once the limit passes, while a server that answers the connect and
/// is slow to respond is not judged by it. The unanswered host is a loopback port whose listen queue is full.
@Suite(.admitted, .timeLimit(.minutes(10))) struct ConnectLimitTests {
    #if os(Linux)
        @Test func anUnansweredConnectFailsAtItsLimitAndTheOthersGoOn() async throws {
            let dead = try UnansweredListener()
            let server = try LoopbackServer()
            let queue = NetworkQueue.oneAttempt(transport: try CurlTransport())
            queue.cancelsAllOnFailure = false
            queue.timeLimits = TimeLimits(connect: 0.3)
            let unanswered = request(dead.url("/bytes/10"), tag: 1)
            let good = request(server.url("/bytes/10"), tag: 2)
            try queue.add(unanswered)
            try queue.add(good)
            await queue.run()
            #expect(unanswered.state == .failed)
            #expect(unanswered.transportErrorCode == .cannotConnectToHost)
            #expect(good.state == .finished)
            #expect(good.response?.statusCode == 200)
        }

        @Test func aSlowResponseIsNotASlowConnect() async throws {
            let server = try LoopbackServer()
            let queue = NetworkQueue.oneAttempt(transport: try CurlTransport())
            queue.timeLimits = TimeLimits(connect: 0.2)
            // The connect is answered at once; the head comes a second later, five times the connect's limit.
            let slow = request(server.url("/bytes/10?delay=1000"), tag: 1)
            try queue.add(slow)
            await queue.run()
            #expect(slow.state == .finished, "\(String(describing: slow.failure))")
        }

        @Test func aRequestsOwnLimitReplacesTheQueues() async throws {
            let dead = try UnansweredListener()
            let queue = NetworkQueue.oneAttempt(transport: try CurlTransport())
            // The queue's limit would hold the test for an hour: the request's own ends it.
            queue.timeLimits = TimeLimits(connect: 3_600)
            let unanswered = NetworkRequest(url: dead.url("/bytes/10"), timeLimits: TimeLimits(connect: 0.2))
            try queue.add(unanswered)
            await queue.run()
            #expect(unanswered.transportErrorCode == .cannotConnectToHost)
        }
    #endif

    #if os(Linux)
        /// `--resolve` (``CurlTransport/Options/pinnedAddresses``): a name under `.test` (reserved, resolving nowhere)
        /// pinned to the loopback server is never looked up, over every engine thread; the request still names it.
        @Test func aPinnedHostIsReachedAtItsAddressOverEveryEngine() async throws {
            // Four engines' handles (a receive buffer of 256 KiB each) would weigh in the heap-growth measurement of the
            // whole process: one of the heavy tests (see ``HeavyTests``).
            try await HeavyTests.exclusively { try await pinnedHost() }
        }

        private func pinnedHost() async throws {
            let server = try LoopbackServer()
            var options = CurlTransport.Options()
            options.engineThreads = 4
            let pin = try #require(PinnedAddress("nq-pinned.test:\(server.port):127.0.0.1"))
            options.pinnedAddresses = [pin]
            let queue = NetworkQueue.oneAttempt(transport: try CurlTransport(options: options))
            queue.maxConcurrentRequestCount = 16
            let requests = (1...200).map {
                request(URL(string: "http://nq-pinned.test:\(server.port)/bytes/4000?n=\($0)")!, tag: $0)
            }
            for request in requests { try queue.add(request) }
            await queue.run()
            #expect(requests.allSatisfy { $0.state == .finished }, "\(requests.compactMap(\.failure).prefix(3))")
            #expect(Set(server.statistics.headers.map { $0["host"] ?? "" }) == ["nq-pinned.test:\(server.port)"])
            #expect(server.statistics.requests == 200)
        }

        /// The engines share one DNS cache (libcurl's share interface): a batch over `localhost` on four engine threads,
        /// started and stopped several times (each transport's cache made and freed with its engines), loses nothing.
        @Test func theEnginesShareOneNameCache() async throws {
            // Four engines with 32 transfers at once: one of the heavy tests, as above.
            try await HeavyTests.exclusively { try await sharedNames() }
        }

        private func sharedNames() async throws {
            let server = try LoopbackServer()
            for round in 1...3 {
                var options = CurlTransport.Options()
                options.engineThreads = 4
                let queue = NetworkQueue.oneAttempt(transport: try CurlTransport(options: options))
                queue.maxConcurrentRequestCount = 32
                let requests = (1...300).map {
                    request(URL(string: "http://localhost:\(server.port)/bytes/2000?r=\(round)&n=\($0)")!, tag: $0)
                }
                for request in requests { try queue.add(request) }
                await queue.run()
                #expect(requests.allSatisfy { $0.state == .finished }, "\(requests.compactMap(\.failure).prefix(3))")
            }
            #expect(server.statistics.requests == 900)
        }
    #endif

    @Test func aConnectLimitOfZeroOrLessIsInvalid() {
        for seconds in [0, -1] as [TimeInterval] {
            let request = NetworkRequest(
                url: URL(string: "http://example.test/a")!, timeLimits: TimeLimits(connect: seconds))
            guard case .invalidTimeLimits? = request.invalidReason else {
                Issue.record("connect \(seconds) accepted")
                continue
            }
        }
    }
}
