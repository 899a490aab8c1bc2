#if os(Linux)
    import Foundation
    import FoundationNetworking
    import Glibc
    import LoopbackServer
    import NetworkQueue
    import TestSupport
    import Testing

    /// Proxies set in code (``CurlTransport/Options/proxy``) against real proxies: tinyproxy for HTTP
    /// forwarding, `CONNECT` tunnels and Basic authentication, microsocks for SOCKS5 with and without remote
    /// names. The environment's proxies over both transports are tested through the Demo (see `DemoProxyTests`):
    /// setting the environment here would send every other test's requests through them.
    @Suite(.admitted, .timeLimit(.minutes(10))) struct ProxyIntegrationTests {
        static let alice = Proxy.Credentials(user: "alice", password: "Pr0xy-SECRET")

        /// Runs one request for `url` over a CurlTransport with `setting` (and the test CA when given).
        static func fetch(
            _ url: URL, through setting: Proxy.Setting, trusting ca: URL? = nil, headers: [String: String] = [:]
        )
            async throws -> NetworkRequest
        {
            var options = CurlTransport.Options()
            options.proxy = setting
            options.additionalTrustedCertificates = ca
            let queue = NetworkQueue.oneAttempt(transport: try CurlTransport(options: options))
            var urlRequest = URLRequest(url: url)
            urlRequest.timeoutInterval = 30
            for (name, value) in headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
            let request = NetworkRequest(urlRequest)
            try queue.add(request)
            await queue.run()
            return request
        }

        @Test(.enabled(if: RealProxy.runs(.tinyproxy), "needs tinyproxy (apt-get install tinyproxy)"))
        func plainHTTPIsForwardedThroughAnHTTPProxy() async throws {
            let server = try LoopbackServer()
            try await RealProxy.with(.tinyproxy) { proxy in
                let url = server.url("/bytes/5000")
                let request = try await Self.fetch(url, through: .through(proxy.proxy(.http)))
                #expect(try request.result?.get().body == pattern(0..<5000))
                #expect(proxy.log.contains("GET \(url.absoluteString) HTTP/1.1"), "\(proxy.log)")
            }
        }

        /// A real batch's scale (`NQ_BIG_BATCH` / 5: 20,000; 2,000 under the sanitizers) through tinyproxy with
        /// credentials, under the default retry policy: every request arrives whole, and the server is asked once
        /// for each. tinyproxy closes kept-alive connections now and then; under load libcurl may find every cached
        /// connection dead ("Connection died, tried 5 times": `.networkConnectionLost`, seen 2 to 5 times in 20,000
        /// with other tests running), and the retry sends it again on a new one. Not 100,000: tinyproxy opens a
        /// connection to the server for each request, which took 80 s for 100,000 here (the HTTP/2 tests run that).
        @Test(.enabled(if: RealProxy.runs(.tinyproxy), "needs tinyproxy (apt-get install tinyproxy)"))
        func aBatchThroughAProxyLosesAndDoublesNothing() async throws {
            try await HeavyTests.exclusively { try await proxiedBatch() }
        }

        private func proxiedBatch() async throws {
            let count = TestEnvironment.bigBatch / 5
            let server = try LoopbackServer()
            try await RealProxy.with(.tinyproxy, credentials: Self.alice) { proxy in
                var options = CurlTransport.Options()
                options.proxy = .through(proxy.proxy(.http, credentials: Self.alice))
                let queue = NetworkQueue(transport: try CurlTransport(options: options))
                queue.maxConcurrentRequestCount = 32
                queue.cancelsAllOnFailure = false
                for index in 0..<count { try queue.add(NetworkRequest(url: server.url("/bytes/100?i=\(index)"))) }
                let progress = await queue.run()
                #expect(progress.finishedRequestCount == count)
                #expect(progress.bytesReceived == Int64(count * 100))
                #expect(server.statistics.requests == count)
                #expect(Set(server.statistics.log).count == count)
            }
        }

        @Test(.enabled(if: RealProxy.runs(.tinyproxy), "needs tinyproxy (apt-get install tinyproxy)"))
        func httpsGoesThroughACONNECTTunnel() async throws {
            try await RealProxy.with(.tinyproxy, credentials: Self.alice) { proxy in
                try await TLSServer.with { tls in
                    let through = Proxy.Setting.through(proxy.proxy(.http, credentials: Self.alice))
                    let request = try await Self.fetch(tls.url, through: through, trusting: tls.caFile)
                    #expect(request.state == .finished)
                    #expect(request.response?.statusCode == 200)
                    #expect(proxy.log.contains("CONNECT 127.0.0.1:\(tls.port) "), "\(proxy.log)")
                    // The tunnel refused (no credentials): a failure that names the proxy, never the server's.
                    let refused = try await Self.fetch(
                        tls.url, through: .through(proxy.proxy(.http)), trusting: tls.caFile)
                    #expect(
                        refused.transportErrorCode == .userAuthenticationRequired,
                        "\(String(describing: refused.failure))")
                }
            }
        }

        @Test(.enabled(if: RealProxy.runs(.tinyproxy), "needs tinyproxy (apt-get install tinyproxy)"))
        func proxyCredentialsReachTheProxyAndNowhereElse() async throws {
            let server = try LoopbackServer()
            try await RealProxy.with(.tinyproxy, credentials: Self.alice) { proxy in
                let url = server.url("/bytes/100")
                let admitted = try await Self.fetch(url, through: .through(proxy.proxy(.http, credentials: Self.alice)))
                #expect(try admitted.result?.get().body == pattern(0..<100))
                // Without them the proxy's 407, which names the proxy, never the server (issue 50, item 7: it was
                // "HTTP status 407 from" the origin); with a wrong password tinyproxy's 401. No password in any text.
                let wrong = Proxy.Credentials(user: "alice", password: "Wr0ng-SECRET")
                for credentials in [nil, wrong] {
                    let refused = try await Self.fetch(
                        url, through: .through(proxy.proxy(.http, credentials: credentials)))
                    if credentials == nil {
                        #expect(
                            refused.transportErrorCode == .userAuthenticationRequired,
                            "\(String(describing: refused.failure))")
                    } else {
                        #expect(refused.failure == .unacceptableStatus(code: 401, url: url))
                    }
                    #expect(!"\(String(describing: refused.failure))".contains("SECRET"))
                }
                // The server saw one request, without the proxy's credentials.
                #expect(server.statistics.headers.count == 1)
                #expect(server.statistics.headers.allSatisfy { $0["proxy-authorization"] == nil })
            }
        }

        @Test(.enabled(if: RealProxy.runs(.tinyproxy), "needs tinyproxy (apt-get install tinyproxy)"))
        func aRequestsOwnProxyAuthorizationGoesToTheProxyAlone() async throws {
            let server = try LoopbackServer()
            let basic = "Basic " + Data("alice:Pr0xy-SECRET".utf8).base64EncodedString()
            try await RealProxy.with(.tinyproxy, credentials: Self.alice) { proxy in
                // Through the proxy: it admits the request on the header's credentials.
                let viaProxy = try await Self.fetch(
                    server.url("/bytes/10"), through: .through(proxy.proxy(.http)),
                    headers: ["Proxy-Authorization": basic])
                #expect(try viaProxy.result?.get().body == pattern(0..<10))
            }
            // Directly, over both transports: the server never sees it.
            let direct = try await Self.fetch(
                server.url("/bytes/10"), through: .direct, headers: ["Proxy-Authorization": basic])
            #expect(direct.state == .finished)
            let queue = NetworkQueue.oneAttempt(transport: TransportKind.urlSession.make())
            var urlRequest = URLRequest(url: server.url("/bytes/10"))
            urlRequest.setValue(basic, forHTTPHeaderField: "Proxy-Authorization")
            let overSession = NetworkRequest(urlRequest)
            try queue.add(overSession)
            await queue.run()
            #expect(overSession.state == .finished)
            #expect(server.statistics.headers.count == 3)
            #expect(server.statistics.headers.allSatisfy { $0["proxy-authorization"] == nil })
        }

        @Test(
            .enabled(if: RealProxy.runs(.tinyproxy), "needs tinyproxy (apt-get install tinyproxy)"),
            .enabled(if: NginxServer.runsTLSFront, "needs nginx's stream module (apt-get install libnginx-mod-stream)"))
        func anHTTPSProxyIsReachedOverVerifiedTLS() async throws {
            let server = try LoopbackServer()
            try await RealProxy.with(.tinyproxy, credentials: Self.alice) { proxy in
                // nginx ends TLS in front of tinyproxy: an HTTPS proxy.
                try await NginxServer.with(files: [:], tlsFront: proxy.port) { front in
                    let https = Proxy(.https, host: "127.0.0.1", port: Int(front.frontPort!), credentials: Self.alice)
                    let url = server.url("/bytes/700")
                    let trusted = try await Self.fetch(url, through: .through(https), trusting: front.caFile)
                    #expect(try trusted.result?.get().body == pattern(0..<700))
                    #expect(proxy.log.contains("GET \(url.absoluteString) HTTP/1.1"), "\(proxy.log)")
                    // The proxy's certificate is checked as a server's is.
                    let untrusted = try await Self.fetch(url, through: .through(https))
                    #expect(untrusted.transportErrorCode == .serverCertificateUntrusted)
                }
            }
        }

        @Test(.enabled(if: RealProxy.runs(.microsocks), "needs microsocks (apt-get install microsocks)"))
        func socks5WithCredentialsAndNamesResolvedByTheProxy() async throws {
            let server = try LoopbackServer()
            let bob = Proxy.Credentials(user: "bob", password: "S0cks-SECRET")
            try await RealProxy.with(.microsocks, credentials: bob) { proxy in
                // socks5h: the name goes to the proxy (when `localhost` is 127.0.0.1 here, where the server is).
                let host = Self.localhostIsIPv4 ? "localhost" : "127.0.0.1"
                let named = URL(string: "http://\(host):\(server.port)/bytes/300")!
                let remote = try await Self.fetch(named, through: .through(proxy.proxy(.socks5h, credentials: bob)))
                #expect(try remote.result?.get().body == pattern(0..<300))
                #expect(proxy.log.contains("connected to \(host):\(server.port)"), "\(proxy.log)")
                // socks5: this machine resolves it, the proxy gets the address.
                let local = try await Self.fetch(named, through: .through(proxy.proxy(.socks5, credentials: bob)))
                #expect(try local.result?.get().body == pattern(0..<300))
                #expect(proxy.log.contains("connected to 127.0.0.1:\(server.port)"), "\(proxy.log)")
                // A wrong password: a proxy failure, and no password in any text.
                let wrong = Proxy.Credentials(user: "bob", password: "Wr0ng-SECRET")
                let refused = try await Self.fetch(named, through: .through(proxy.proxy(.socks5h, credentials: wrong)))
                #expect(refused.state == .failed)
                #expect(refused.transportErrorCode == .cannotConnectToHost)
                #expect(!"\(String(describing: refused.failure))".contains("SECRET"))
            }
        }

        /// True when `localhost`'s first address is 127.0.0.1 (as microsocks, which tries only the first).
        static var localhostIsIPv4: Bool {
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var result: UnsafeMutablePointer<addrinfo>?
            guard getaddrinfo("localhost", "80", &hints, &result) == 0, let first = result else { return false }
            defer { freeaddrinfo(result) }
            return first.pointee.ai_family == AF_INET
        }

        @Test func theBypassListReachesItsHostsDirectly() async throws {
            let server = try LoopbackServer()
            // Nothing listens at the proxy's port (held bound, so no other test's server takes it): a request that
            // goes through it fails to connect.
            let held = try LoopbackPorts.held()
            defer { close(held.fd) }
            let dead = Proxy(.http, host: "127.0.0.1", port: Int(held.port))
            let through = try await Self.fetch(server.url("/bytes/10"), through: .through(dead))
            #expect(through.transportErrorCode == .cannotConnectToHost)
            var bypassing = dead
            bypassing.bypass = ["example.invalid", "127.0.0.1"]
            let direct = try await Self.fetch(server.url("/bytes/10"), through: .through(bypassing))
            #expect(try direct.result?.get().body == pattern(0..<10))
            #expect(server.statistics.requests == 1)
        }

        @Test func anUnusableProxyFailsTheTransportsCreationSayingWhy() {
            for (proxy, words) in [
                (Proxy(.http, host: "", port: 8080), "host"), (Proxy(.socks5, host: "p", port: 70_000), "port"),
                (Proxy(.http, host: "a b", port: 1), "host"),
                (Proxy(.http, host: "p", port: 1, credentials: .init(user: "a:b", password: "SECRET")), "':'"),
                (Proxy(.http, host: "p", port: 1, bypass: ["a,b"]), "bypass"),
            ] {
                var options = CurlTransport.Options()
                options.proxy = .through(proxy)
                #expect {
                    _ = try CurlTransport(options: options)
                } throws: { error in
                    guard case .invalidProxy(let problem) = error as? CurlTransport.LoadError else { return false }
                    return problem.description.contains(words) && !problem.description.contains("SECRET")
                }
            }
        }
    }
#endif
