import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The proxies a transport uses: the environment's, read as libcurl reads them, or one set in code (``Proxy``).
@Suite(.admitted, .timeLimit(.minutes(10))) struct ProxyRoutesTests {
    @Test func nothingSetMeansNoProxy() {
        #expect(ProxyRoutes([:]) == ProxyRoutes(["PATH": "/bin"]))
        let none = ProxyRoutes([:])
        #expect(none.http == "" && none.https == "" && none.noProxy == "")
    }

    @Test func httpReadsOnlyTheLowercaseName() {
        // HTTP_PROXY can come from a CGI request's Proxy header: libcurl never reads it, nor do we.
        let upper = ProxyRoutes(["HTTP_PROXY": "http://evil:1"])
        #expect(upper.http == "")
        let lower = ProxyRoutes(["http_proxy": "http://p:1", "HTTP_PROXY": "http://evil:1"])
        #expect(lower.http == "http://p:1")
        #expect(lower.https == "")
    }

    @Test func httpsReadsLowercaseThenUppercase() {
        #expect(ProxyRoutes(["HTTPS_PROXY": "http://u:2"]).https == "http://u:2")
        #expect(ProxyRoutes(["https_proxy": "http://l:2", "HTTPS_PROXY": "http://u:2"]).https == "http://l:2")
    }

    @Test func allProxyIsTheFallbackOfBothAndEmptyCountsAsUnset() {
        let all = ProxyRoutes(["all_proxy": "socks5://a:3", "ALL_PROXY": "http://b:3"])
        #expect(all.http == "socks5://a:3" && all.https == "socks5://a:3")
        #expect(ProxyRoutes(["ALL_PROXY": "http://b:3"]).https == "http://b:3")
        let empty = ProxyRoutes(["http_proxy": "", "all_proxy": "http://c:4", "https_proxy": ""])
        #expect(empty.http == "http://c:4" && empty.https == "http://c:4")
        #expect(ProxyRoutes(["http_proxy": "http://p:1", "all_proxy": "http://c:4"]).https == "http://c:4")
    }

    @Test func noProxyReadsLowercaseThenUppercase() {
        #expect(ProxyRoutes(["NO_PROXY": "example.com"]).noProxy == "example.com")
        #expect(ProxyRoutes(["no_proxy": "a.test,b.test", "NO_PROXY": "example.com"]).noProxy == "a.test,b.test")
    }

    @Test(arguments: [
        ("http://p.test:3128", true), ("p.test:3128", true), ("socks5h://u:pw@p.test:1080", true),
        ("https://p.test", true),
        ("http://user:pw@[::1:80", false), ("http://exa mple:80", false), ("ftp://p.test:21", false),
        ("http://:80", false),
        ("http://p.test:99999", false),
    ])
    func aProxyValueIsUsableOnlyAsLibcurlTakesIt(value: String, usable: Bool) {
        #expect(ProxyRoutes.isUsable(value) == usable)
    }

    @Test func credentialsAreRedactedAndScrubbedFromAnyText() {
        #expect(ProxyRoutes.redacted("http://user:s3cret@p.test:80/") == "http://***@p.test:80/")
        #expect(ProxyRoutes.redacted("user:s3cret@p.test:80") == "***@p.test:80")
        #expect(ProxyRoutes.redacted("http://p.test:80") == "http://p.test:80")
        // The last @ before the host ends the credentials: a password may hold an @.
        #expect(ProxyRoutes.credentials(in: "http://u:p@ss@p.test") == "u:p@ss")
        let environment = ProxyRoutes([
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
        let environment = ProxyRoutes([
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

    @Test func aProxyIsReadAsCurlWritesOne() throws {
        let socks = try Proxy(parsing: "SOCKS5H://bob:p%40ss:w@[::1]:1081/", bypass: ["internal.test"])
        #expect(
            socks
                == Proxy(
                    .socks5h, host: "::1", port: 1081, credentials: .init(user: "bob", password: "p@ss:w"),
                    bypass: ["internal.test"]))
        #expect(socks.description == "socks5h://***@[::1]:1081")
        #expect(try Proxy(parsing: "proxy.test:3128") == Proxy(.http, host: "proxy.test", port: 3128))
        #expect(try Proxy(parsing: "https://proxy.test").port == 443)
        #expect(try Proxy(parsing: "socks5://10.0.0.1").port == 1080)
        #expect(try Proxy(parsing: "http://alice@p.test:8080").credentials == .init(user: "alice", password: ""))
        #expect(Proxy(.http, host: "p.test", port: 8).description == "http://p.test:8")
        // Its text carries the credentials, percent-encoded, and reads back as the same proxy.
        let written = Proxy(.socks5h, host: "::1", port: 9, credentials: .init(user: "a b", password: "p@:w"))
        #expect(written.text == "socks5h://a%20b:p%40%3Aw@[::1]:9")
        #expect(written.description == "socks5h://***@[::1]:9")
        #expect(try Proxy(parsing: written.text) == written)
        #expect(Proxy(.https, host: "p.test", port: 443).text == "https://p.test:443")
    }

    @Test func aProxyThatCannotBeUsedSaysWhyWithoutItsPassword() {
        for (text, words) in [
            ("ftp://u:SECRET@p.test:21", "unsupported proxy scheme 'ftp'"),
            ("http://u:SECRET@p.test:port", "not a number: http://***@p.test:port"),
            ("http://u:SECRET@p.test:3128/path", "without a path: http://***@p.test:3128/path"),
            ("http://u:SECRET@[::1:80", "lacks its ']'"), ("http://u:SECRET@:80", "host '' is not"),
            ("http://p.test:0", "port 0 is outside"), ("http://p.test:65536", "port 65536 is outside"),
            ("http://u:SECRET@p.test:1%", "not a number"), ("http://u%zz:SECRET@p.test:1", "percent-encoding"),
        ] {
            #expect {
                _ = try Proxy(parsing: text)
            } throws: { error in
                let description = "\(error)"
                return description.contains(words) && !description.contains("SECRET")
            }
        }
    }

    @Test func aSettingInCodeReplacesTheEnvironment() {
        let environment = ["http_proxy": "http://env.test:1", "no_proxy": "env.test"]
        let proxy = Proxy(
            .socks5h, host: "p.test", port: 1080, credentials: .init(user: "u", password: "pw"),
            bypass: ["a.test", "10.0.0.1"])
        let routes = ProxyRoutes(.through(proxy), environment: environment)
        #expect(routes.http == "socks5h://p.test:1080" && routes.https == "socks5h://p.test:1080")
        #expect(routes.noProxy == "a.test,10.0.0.1")
        #expect(routes.credentials == .init(user: "u", password: "pw"))
        #expect(
            !routes.isTLSProxy && ProxyRoutes(.through(Proxy(.https, host: "p", port: 1)), environment: [:]).isTLSProxy)
        #expect(routes.scrub("failed for u:pw") == "failed for ***")
        #expect(ProxyRoutes(.direct, environment: environment) == ProxyRoutes([:]))
        #expect(ProxyRoutes(.environment, environment: environment) == ProxyRoutes(environment))
    }
}
