import Testing

@testable import NetworkQueue

/// The environment's proxies, read as libcurl reads them (CurlTransport hands the result to libcurl once).
@Suite(.timeLimit(.minutes(1))) struct ProxyEnvironmentTests {
    @Test func nothingSetMeansNoProxy() {
        #expect(ProxyEnvironment([:]) == ProxyEnvironment(["PATH": "/bin"]))
        let none = ProxyEnvironment([:])
        #expect(none.http == "" && none.https == "" && none.noProxy == "")
    }

    @Test func httpReadsOnlyTheLowercaseName() {
        // HTTP_PROXY can come from a CGI request's Proxy header: libcurl never reads it, nor do we.
        let upper = ProxyEnvironment(["HTTP_PROXY": "http://evil:1"])
        #expect(upper.http == "")
        let lower = ProxyEnvironment(["http_proxy": "http://p:1", "HTTP_PROXY": "http://evil:1"])
        #expect(lower.http == "http://p:1")
        #expect(lower.https == "")
    }

    @Test func httpsReadsLowercaseThenUppercase() {
        #expect(ProxyEnvironment(["HTTPS_PROXY": "http://u:2"]).https == "http://u:2")
        #expect(ProxyEnvironment(["https_proxy": "http://l:2", "HTTPS_PROXY": "http://u:2"]).https == "http://l:2")
    }

    @Test func allProxyIsTheFallbackOfBothAndEmptyCountsAsUnset() {
        let all = ProxyEnvironment(["all_proxy": "socks5://a:3", "ALL_PROXY": "http://b:3"])
        #expect(all.http == "socks5://a:3" && all.https == "socks5://a:3")
        #expect(ProxyEnvironment(["ALL_PROXY": "http://b:3"]).https == "http://b:3")
        let empty = ProxyEnvironment(["http_proxy": "", "all_proxy": "http://c:4", "https_proxy": ""])
        #expect(empty.http == "http://c:4" && empty.https == "http://c:4")
        #expect(ProxyEnvironment(["http_proxy": "http://p:1", "all_proxy": "http://c:4"]).https == "http://c:4")
    }

    @Test func noProxyReadsLowercaseThenUppercase() {
        #expect(ProxyEnvironment(["NO_PROXY": "example.com"]).noProxy == "example.com")
        #expect(ProxyEnvironment(["no_proxy": "a.test,b.test", "NO_PROXY": "example.com"]).noProxy == "a.test,b.test")
    }
}
