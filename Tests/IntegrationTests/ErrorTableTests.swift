#if os(Linux)
    import Foundation
    import FoundationNetworking
    import Glibc
    import LoopbackServer
    import NetworkQueue
    import TestSupport
    import Testing

    /// Each cause of a failed transfer gives the `URLError` code a program can act on, the same over both
    /// transports (libcurl's code over CurlTransport; libcurl's words over URLSession on Linux, where Foundation
    /// reports most of them as -1). A cause only one transport can be set up for here is tested on that one:
    /// URLSession on Linux trusts only the system's CAs, so a certificate's dates and host name are reached
    /// through CurlTransport's extra CA alone.
    @Suite(.admitted, .timeLimit(.minutes(10))) struct ErrorTableTests {
        /// One request for `url` over `transport`, trusting `ca` (CurlTransport only), with `timeout`.
        static func failure(
            _ url: URL, over transport: TransportKind, trusting ca: URL? = nil, timeout: TimeInterval = 30
        ) async throws -> URLError.Code? {
            var chosen = transport.make()
            if let ca {
                var options = CurlTransport.Options()
                options.additionalTrustedCertificates = ca
                chosen = try CurlTransport(options: options)
            }
            let queue = NetworkQueue.oneAttempt(transport: chosen)
            var urlRequest = URLRequest(url: url)
            urlRequest.timeoutInterval = timeout
            let request = NetworkRequest(urlRequest)
            try queue.add(request)
            await queue.run()
            return request.transportErrorCode
        }

        @Test(arguments: TransportKind.allCases)
        func eachNetworkCauseHasItsCode(_ transport: TransportKind) async throws {
            let server = try LoopbackServer()
            // A port held bound and never listened on: refused, and no other test's server can take it meanwhile.
            let held = try LoopbackPorts.held()
            defer { close(held.fd) }
            let refused = URL(string: "http://127.0.0.1:\(held.port)/")!
            let table: [(URL, TimeInterval, URLError.Code)] = [
                (URL(string: "http://host-not-found.invalid/")!, 30, .cannotFindHost),
                (refused, 30, .cannotConnectToHost),
                // Half the body, then nothing for 10 s: the queue's idle timeout ends it.
                (server.url("/trickle/10/2/10000"), 0.3, .timedOut),
                (server.url("/malformed"), 30, .badServerResponse),
            ]
            for (url, timeout, code) in table {
                let failure = try await Self.failure(url, over: transport, timeout: timeout)
                #expect(failure == code, "\(url)")
            }
        }

        @Test(arguments: TransportKind.allCases)
        func anUntrustedCertificateIsUntrustedOverBoth(_ transport: TransportKind) async throws {
            try await TLSServer.with { server in
                let code = try await Self.failure(server.url, over: transport)
                #expect(code == .serverCertificateUntrusted)
            }
        }

        @Test func aCertificatesDatesAndHostNameHaveTheirCodes() async throws {
            try await TLSServer.with(.expired) { server in
                let code = try await Self.failure(server.url, over: .curl, trusting: server.caFile)
                #expect(code == .serverCertificateHasBadDate)
            }
            try await TLSServer.with(.otherHost) { server in
                let code = try await Self.failure(server.url, over: .curl, trusting: server.caFile)
                #expect(code == .serverCertificateUntrusted)
            }
        }
    }
#endif
