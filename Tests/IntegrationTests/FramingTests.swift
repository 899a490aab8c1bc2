import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Nothing of a rejected head takes effect: no cookie stored, no connection reused after a response framed
/// two ways.
@Suite(.admitted, .timeLimit(.minutes(10))) struct FramingTests {
    /// Runs `first`, then `/bytes/1` on the same queue (one at a time); returns the first request's
    /// result, the cookie header the second carried, and the connections the server accepted.
    func twoRequests(_ first: String, over transport: TransportKind) async throws -> (NetworkRequest, String?, Int) {
        let server = try LoopbackServer()
        let queue = NetworkQueue.oneAttempt(transport: transport.make())
        queue.maxConcurrentRequestCount = 1
        let hostile = request(server.url(first), tag: 1)
        try queue.add(hostile)
        await queue.run()
        try queue.add(request(server.url("/bytes/1"), tag: 2))
        await queue.run()
        return (hostile, server.statistics.headers.last?["cookie"], server.statistics.connections)
    }

    @Test(arguments: TransportKind.allCases) func aWellFramedHeadStoresItsCookieAndKeepsItsConnection(
        _ transport: TransportKind
    ) async throws {
        let (first, cookie, connections) = try await twoRequests("/raw/cookie-ok", over: transport)
        #expect(first.state == .finished)
        #expect(cookie == "good=1")
        #expect(connections == 1)
    }

    @Test(arguments: ["bare-cr", "nul", "cookie-then-bad"])
    func aBrokenHeadStoresNoCookieAndClosesItsConnection(_ name: String) async throws {
        // Over curl, whose head parser sees every line (URLSession's Foundation hides them: see the README).
        let (first, cookie, connections) = try await twoRequests("/raw/\(name)", over: .curl)
        #expect(first.transportErrorCode == .badServerResponse)
        #expect(cookie == nil)
        #expect(connections == 2)
    }

    @Test func aHeadWithLFLineEndsIsReadAsCurlReadsIt() async throws {
        // Every part of the library sees the fields libcurl framed the body by: the cookie after a bare LF
        // is a field like any other, and the connection is kept.
        let (first, cookie, connections) = try await twoRequests("/raw/bare-lf", over: .curl)
        #expect(first.state == .finished)
        #expect(cookie == "injected=lf")
        #expect(connections == 1)
    }

    @Test(arguments: TransportKind.allCases) func differingLengthsFailAndTheConnectionIsNotReused(
        _ transport: TransportKind
    ) async throws {
        let (first, _, connections) = try await twoRequests("/raw/cl-conflict", over: transport)
        #expect(first.transportErrorCode == .badServerResponse)
        // URLSession's connection cache is Foundation's: it cannot be told to close one (see the README).
        if transport == .curl { #expect(connections == 2) }
    }

    @Test(arguments: TransportKind.allCases) func aLengthBesideChunkedIsIgnoredAndTheConnectionClosed(
        _ transport: TransportKind
    ) async throws {
        let (first, _, connections) = try await twoRequests("/raw/cl-chunked", over: transport)
        #expect((try? first.result?.get())?.body == Data("hello".utf8))
        if transport == .curl { #expect(connections == 2) }
    }

    @Test(arguments: TransportKind.allCases) func aRejectedOversizedHeadStoresNoCookie(_ transport: TransportKind)
        async throws
    {
        // 50 cookies (5 KB), then a field past every client's limit.
        let (first, cookie, _) = try await twoRequests("/bighead?cookies=50&size=2000000", over: transport)
        #expect(first.state == .failed)
        #expect(cookie == nil)
    }

    @Test(arguments: TransportKind.allCases) func anOversizedHeadIsFetchedOnceUnderTheDefaultPolicy(
        _ transport: TransportKind
    ) async throws {
        // A deterministic failure, not a lost connection: the default retry policy does not send it again.
        let server = try LoopbackServer()
        let queue = NetworkQueue(transport: transport.make())
        let hostile = request(server.url("/bighead?cookies=0&size=300000"), tag: 1)
        try queue.add(hostile)
        await queue.run()
        #expect(hostile.transportErrorCode == .badServerResponse)
        #expect(hostile.attemptCount == 1)
        #expect(server.statistics.log.count == 1)
    }

    @Test(arguments: TransportKind.allCases) func aHeadWithManyCookiesWithinLimitsStoresThem(_ transport: TransportKind)
        async throws
    {
        let (first, cookie, _) = try await twoRequests("/bighead?cookies=3&size=10", over: transport)
        #expect(first.state == .finished)
        #expect(cookie?.split(separator: ";").count == 3)
    }
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct DefaultTransportTests {
    @Test func linuxNeedsNoFallbackWhereLibcurlLoads() {
        #if os(Linux)
            #expect(CurlTransport.isAvailable)
            #expect(NetworkQueue.defaultTransportFallbackReason == nil)
            #expect(NetworkQueue.makeDefaultTransport() is CurlTransport)
        #else
            #expect(NetworkQueue.defaultTransportFallbackReason == nil)
        #endif
    }
}
