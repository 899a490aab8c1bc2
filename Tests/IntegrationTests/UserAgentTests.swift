import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Every request carries a User-Agent, as curl's, wget2's and aria2's do: the library's by default, the same on
/// both transports (HEAD, GET, POST and a redirect's next request alike), the transport's where it sets one, the
/// request's own where it has one.
@Suite(.admitted, .timeLimit(.minutes(10))) struct UserAgentTests {
    /// The User-Agent of each request the server saw, in order, after a queue over `transport` ran `requests`.
    func agents(_ transport: any Transport, _ server: LoopbackServer, _ requests: [URLRequest]) async throws
        -> [String?]
    {
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.cancelsAllOnFailure = false
        for request in requests { try queue.add(NetworkRequest(request)) }
        _ = await queue.run()
        return server.statistics.headers.map { $0["user-agent"] }
    }

    @Test(arguments: TransportKind.allCases) func theLibrarysNameAndVersionGoByDefault(_ kind: TransportKind)
        async throws
    {
        let server = try LoopbackServer()
        var head = URLRequest(url: server.url("/bytes/10"))
        head.httpMethod = "HEAD"
        var post = URLRequest(url: server.url("/upload"))
        post.httpMethod = "POST"
        post.httpBody = Data("x".utf8)
        var own = URLRequest(url: server.url("/bytes/3"))
        own.setValue("mine/1", forHTTPHeaderField: "user-agent")
        let sent = try await agents(
            kind.make(), server,
            [URLRequest(url: server.url("/bytes/5")), head, post, URLRequest(url: server.url("/redirect/1")), own])
        #expect(NetworkQueue.defaultUserAgent == "NetworkQueue/\(NetworkQueue.version)")
        let library = NetworkQueue.defaultUserAgent
        // The queue runs one at a time here: the redirect's two requests are the fourth and fifth.
        #expect(sent.count == 6)
        #expect(sent.filter { $0 == library }.count == 5)
        #expect(sent.filter { $0 == "mine/1" }.count == 1)
    }

    @Test func aTransportsOwnSettingReplacesTheDefault() async throws {
        let server = try LoopbackServer()
        let configuration = URLSessionConfiguration.default
        configuration.httpAdditionalHeaders = ["user-agent": "session/2"]
        let viaSession = try await agents(
            URLSessionTransport(configuration: configuration), server, [URLRequest(url: server.url("/bytes/1"))])
        #expect(viaSession == ["session/2"])
        #if os(Linux)
            server.resetStatistics()
            var options = CurlTransport.Options()
            options.userAgent = "curl-side/3"
            let viaCurl = try await agents(
                try CurlTransport(options: options), server, [URLRequest(url: server.url("/bytes/1"))])
            #expect(viaCurl == ["curl-side/3"])
            server.resetStatistics()
            options.userAgent = nil
            let none = try await agents(
                try CurlTransport(options: options), server, [URLRequest(url: server.url("/bytes/1"))])
            #expect(none == [nil])
        #endif
    }
}
