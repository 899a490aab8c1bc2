import Foundation
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

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

    @Test(arguments: [
        ("http://p.test:3128", true), ("p.test:3128", true), ("socks5h://u:pw@p.test:1080", true),
        ("https://p.test", true),
        ("http://user:pw@[::1:80", false), ("http://exa mple:80", false), ("ftp://p.test:21", false),
        ("http://:80", false),
        ("http://p.test:99999", false),
    ])
    func aProxyValueIsUsableOnlyAsLibcurlTakesIt(value: String, usable: Bool) {
        #expect(ProxyEnvironment.isUsable(value) == usable)
    }

    @Test func credentialsAreRedactedAndScrubbedFromAnyText() {
        #expect(ProxyEnvironment.redacted("http://user:s3cret@p.test:80/") == "http://***@p.test:80/")
        #expect(ProxyEnvironment.redacted("user:s3cret@p.test:80") == "***@p.test:80")
        #expect(ProxyEnvironment.redacted("http://p.test:80") == "http://p.test:80")
        // The last @ before the host ends the credentials: a password may hold an @.
        #expect(ProxyEnvironment.credentials(in: "http://u:p@ss@p.test") == "u:p@ss")
        let environment = ProxyEnvironment([
            "http_proxy": "http://user:s3cret@[::1:80", "https_proxy": "socks5://a:b@s.test",
        ])
        #expect(
            environment.scrub("Unsupported proxy syntax in 'http://user:s3cret@[::1:80'")
                == "Unsupported proxy syntax in 'http://***@[::1:80'")
        #expect(environment.scrub("failed at socks5://a:b@s.test") == "failed at socks5://***@s.test")
    }

    /// A failure of an unusable proxy is `.unsupportedURL` (never retried), naming the variable, never the
    /// password; any other failure keeps its code, its text scrubbed.
    @Test func refineNamesAnUnusableProxyAndKeepsTheCodeOfAnyOtherFailure() {
        let environment = ProxyEnvironment([
            "http_proxy": "http://user:s3cret@[::1:80", "https_proxy": "http://v:w@good.test:3128",
        ])
        let target = URL(string: "http://example.test/x")!
        let leaked = URLError(
            .cannotFindHost,
            userInfo: [NSLocalizedDescriptionKey: "Unsupported proxy syntax in 'http://user:s3cret@[::1:80'"])
        let unusable = environment.refine(leaked, url: target, isProxyFailure: true)
        #expect(unusable.code == .unsupportedURL)
        #expect(
            unusable.userInfo[NSLocalizedDescriptionKey] as? String
                == "the proxy http_proxy names is not usable: http://***@[::1:80")
        #expect(
            RetryRules.defaultVerdict(
                policy: RetryPolicy(), error: .transport(unusable), method: "GET", retryAfter: nil) == .fail)
        let secure = URL(string: "https://example.test/x")!
        let unresolved = URLError(
            .cannotFindHost, userInfo: [NSLocalizedDescriptionKey: "Could not resolve proxy: v:w@good.test"])
        let kept = environment.refine(unresolved, url: secure, isProxyFailure: true)
        #expect(kept.code == .cannotFindHost)
        #expect(kept.userInfo[NSLocalizedDescriptionKey] as? String == "Could not resolve proxy: ***@good.test")
    }
}
