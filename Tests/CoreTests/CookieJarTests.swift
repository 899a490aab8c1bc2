import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

@Suite(.admitted, .timeLimit(.minutes(10))) struct CookieJarTests {
    let now = Date(timeIntervalSince1970: 2_000_000_000)
    let site = URL(string: "http://www.a.test/dir/page")!

    func jar(_ lines: [String], from url: URL? = nil) -> CookieJar {
        var jar = CookieJar()
        jar.store(lines, from: url ?? site, now: now)
        return jar
    }

    @Test func aHostOnlyCookieGoesBackToItsHostAlone() {
        var jar = jar(["a=1"])
        #expect(jar.header(for: URL(string: "http://www.a.test/dir/x")!, now: now) == "a=1")
        #expect(jar.header(for: URL(string: "http://a.test/dir/x")!, now: now) == nil)
        #expect(jar.header(for: URL(string: "http://sub.www.a.test/dir/x")!, now: now) == nil)
    }

    @Test func aDomainCookieGoesToSubdomainsButNeverToAnotherSite() {
        var jar = jar(["a=1; Domain=.a.test; Path=/", "evil=1; Domain=b.test; Path=/", "wide=1; Domain=test; Path=/"])
        #expect(jar.header(for: URL(string: "http://x.a.test/")!, now: now) == "a=1")
        #expect(jar.header(for: URL(string: "http://b.test/")!, now: now) == nil)
        #expect(jar.header(for: URL(string: "http://other.test/")!, now: now) == nil)
    }

    @Test func pathsMatchByDirectoryAndTheLongestGoesFirst() {
        var jar = jar(["short=1; Path=/", "long=2; Path=/dir", "implicit=3"])
        #expect(jar.header(for: URL(string: "http://www.a.test/dir/x")!, now: now) == "long=2; implicit=3; short=1")
        #expect(jar.header(for: URL(string: "http://www.a.test/directory")!, now: now) == "short=1")
    }

    @Test func aSecureCookieTravelsOnlyOverHTTPS() {
        var jar = jar(["s=1; Secure; Path=/"])
        #expect(jar.header(for: URL(string: "http://www.a.test/")!, now: now) == nil)
        #expect(jar.header(for: URL(string: "https://www.a.test/")!, now: now) == "s=1")
    }

    @Test func expiryByMaxAgeAndExpiresFollowsTheTimePassedIn() {
        var jar = jar([
            "m=1; Max-Age=60; Path=/", "e=2; Expires=Wed, 18 May 2033 03:34:00 GMT; Path=/",
            "gone=3; Max-Age=0; Path=/",
        ])
        let url = URL(string: "http://www.a.test/")!
        // Expires is 40 s after now, Max-Age 60 s.
        #expect(jar.header(for: url, now: now.addingTimeInterval(39)) == "m=1; e=2")
        #expect(jar.header(for: url, now: now.addingTimeInterval(50)) == "m=1")
        #expect(jar.header(for: url, now: now.addingTimeInterval(61)) == nil)
    }

    @Test func aLaterCookieReplacesTheSameNameDomainAndPathAndMaxAgeZeroDeletes() {
        var jar = jar(["a=1; Path=/", "b=1; Path=/", "a=2; Path=/"])
        let url = URL(string: "http://www.a.test/")!
        #expect(jar.header(for: url, now: now) == "a=2; b=1")
        jar.store(["a=x; Max-Age=0; Path=/"], from: url, now: now)
        #expect(jar.header(for: url, now: now) == "b=1")
    }

    @Test func hostileCookiesAreBounded() {
        let huge = "big=" + String(repeating: "x", count: CookieJar.maximumCookieSize)
        var jar = jar([huge, "ctl=a\u{1}b"] + (0..<60).map { "n\($0)=1; Path=/" })
        #expect(jar.cookies.count == CookieJar.maximumCookiesPerDomain)
        #expect(jar.cookies.first?.name == "n10")
        #expect(jar.header(for: URL(string: "http://www.a.test/")!, now: now)?.contains("big=") == false)
    }

    @Test func anAddressTakesNoDomainCookieForOthers() {
        var jar = jar(["a=1; Domain=0.0.1; Path=/", "b=2; Path=/"], from: URL(string: "http://127.0.0.1/")!)
        #expect(jar.header(for: URL(string: "http://127.0.0.1/")!, now: now) == "b=2")
    }

    @Test(arguments: [
        ("a=1, b=2", ["a=1", "b=2"]),
        (
            "a=1; Expires=Wed, 21 Oct 2037 07:28:00 GMT, b=2; Path=/",
            ["a=1; Expires=Wed, 21 Oct 2037 07:28:00 GMT", "b=2; Path=/"]
        ),
        ("only=1", ["only=1"]),
    ])
    func joinedValuesSplitWhereANewCookieBegins(_ value: String, _ expected: [String]) {
        #expect(CookieJar.splitJoined(value) == expected)
    }
}
