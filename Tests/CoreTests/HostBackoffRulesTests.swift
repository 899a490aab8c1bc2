import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Which responses hold their server, and for how long.
@Suite(.admitted, .timeLimit(.minutes(10))) struct HostBackoffRulesTests {
    static let wallClock = Date(timeIntervalSince1970: 1_700_000_000)

    static func seconds(_ status: Int, _ headers: [String: String]) -> Double? {
        let head = ResponseHead(
            url: URL(string: "http://a.test/")!, statusCode: status, httpVersion: "HTTP/1.1",
            fields: headers.sorted { $0.key < $1.key }.map { ResponseHead.Field(name: $0.key, value: $0.value) })
        return HostBackoffRules.hold(for: head, wallClock: wallClock)?.seconds
    }

    @Test func retryAfterHoldsOnlyWith429Or503() {
        #expect(Self.seconds(429, ["Retry-After": "2"]) == 2)
        #expect(Self.seconds(503, ["retry-after": "120"]) == 120)
        #expect(Self.seconds(503, ["Retry-After": "Tue, 14 Nov 2023 22:13:30 GMT"]) == 10)
        #expect(Self.seconds(200, ["Retry-After": "2"]) == nil)
        #expect(Self.seconds(301, ["Retry-After": "2"]) == nil)
        #expect(Self.seconds(500, ["Retry-After": "2"]) == nil)
        #expect(Self.seconds(429, [:]) == nil)
        #expect(Self.seconds(429, ["Retry-After": "soon"]) == nil)
        #expect(Self.seconds(429, ["Retry-After": "0"]) == nil)
    }

    @Test func theRateLimitFieldInBothDraftForms() {
        #expect(Self.seconds(200, ["RateLimit": #""default";r=0;t=30"#]) == 30)
        #expect(Self.seconds(200, ["RateLimit": #""default";r=5;t=30"#]) == nil)
        // Two policies: the spent one's reset counts.
        #expect(Self.seconds(200, ["RateLimit": #""minute";r=3;t=20, "day";r=0;t=3600"#]) == 3600)
        #expect(Self.seconds(200, ["RateLimit": "limit=100, remaining=0, reset=12"]) == 12)
        #expect(Self.seconds(200, ["RateLimit": "limit=100, remaining=1, reset=12"]) == nil)
        #expect(Self.seconds(200, ["RateLimit": #""default";r=0"#]) == nil)
        #expect(Self.seconds(200, ["RateLimit": ";;,=,r=,t=x"]) == nil)
    }

    @Test func remainingZeroWithAResetInEitherFamily() {
        #expect(Self.seconds(200, ["RateLimit-Remaining": "0", "RateLimit-Reset": "9"]) == 9)
        #expect(Self.seconds(200, ["RateLimit-Remaining": "1", "RateLimit-Reset": "9"]) == nil)
        #expect(Self.seconds(200, ["X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "45"]) == 45)
        // GitHub's form: a Unix time.
        #expect(Self.seconds(403, ["X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1700000090"]) == 90)
        // A reset already past holds nothing.
        #expect(Self.seconds(403, ["X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1699999990"]) == nil)
        #expect(Self.seconds(200, ["X-RateLimit-Remaining": "0"]) == nil)
        #expect(Self.seconds(200, ["X-RateLimit-Remaining": "-1", "X-RateLimit-Reset": "5"]) == nil)
    }

    @Test func theLongestWaitAskedWins() {
        #expect(Self.seconds(429, ["Retry-After": "5", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "50"]) == 50)
        #expect(Self.seconds(429, ["Retry-After": "70", "RateLimit": "remaining=0, reset=7"]) == 70)
    }

    @Test func numbersAreDecimalsAndNothingElse() {
        #expect(HostBackoffRules.number("12") == 12)
        #expect(HostBackoffRules.number(" 1.5 ") == 1.5)
        for bad in ["", ".", "1.", ".5", "1.2.3", "-3", "1e3", "inf", "nan", "0x10", String(repeating: "9", count: 30)]
        {
            #expect(HostBackoffRules.number(bad) == nil, "\(bad)")
        }
    }
}
