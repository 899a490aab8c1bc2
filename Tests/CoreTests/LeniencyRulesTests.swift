import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

/// RFC 9112's leniency where curl and browsers agree, and its limits where framing is at stake: what the
/// head parser and the framing rules accept, refuse and how fast.
@Suite(.admitted, .timeLimit(.minutes(10))) struct HeadLeniencyTests {
    @Test func linesEndedByABareLFAreLinesLikeAnyOther() {
        let (head, violation) = feedHead(["HTTP/1.1 200 OK\n", "Content-Length: 5\n", "Set-Cookie: a=1\r\n", "\n"])
        #expect(violation == nil)
        #expect(head?.contentLength == 5)
        #expect(head?.setCookies == ["a=1"])
    }

    @Test func aFieldLineThatLooksLikeAStatusLineDoesNotRestartTheHead() {
        let (head, _) = feedHead([
            "HTTP/1.1 401 Unauthorized\r\n", "X-A: 1\r\n", "HTTP/1.1 200 OK\r\n", "Location: /x\r\n", "\r\n",
        ])
        #expect(head?.statusCode == 401)
        #expect(head?.value("location") == "/x")
    }

    @Test func anInterimHeadIsTheOnlyWayToASecondStatusLine() {
        let (head, _) = feedHead([
            "HTTP/1.1 103 Early Hints\r\n", "Link: </a>\r\n", "\r\n", "HTTP/1.1 204 No Content\r\n", "\r\n",
        ])
        #expect(head?.statusCode == 204)
        #expect(head?.fields.isEmpty == true)
    }

    @Test(arguments: [
        ["Transfer-Encoding: gzip,\r\n", " chunked\r\n"], ["Content-Length: 5\r\n", "\t5\r\n"],
    ])
    func aFoldedFramingFieldIsRefused(_ lines: [String]) {
        let (head, violation) = feedHead(["HTTP/1.1 200 OK\r\n"] + lines + ["\r\n"])
        #expect(head == nil)
        #expect(violation?.hasPrefix("a folded ") == true)
    }

    @Test func transferCodingsBeforeChunkedAreKeptToDecode() {
        let (head, _) = feedHead([
            "HTTP/1.1 200 OK\r\n", "Transfer-Encoding: gzip\r\n", "transfer-encoding: chunked\r\n", "\r\n",
        ])
        #expect(head?.transferCodings == ["gzip"])
        #expect(head?.unsupportedTransferCoding == nil)
        let unknown = feedHead(["HTTP/1.1 200 OK\r\n", "Transfer-Encoding: compress, chunked\r\n", "\r\n"]).head
        #expect(unknown?.unsupportedTransferCoding == "compress")
    }

    @Test func manyFieldsParseInLinearTimeAndTooManyAreRefused() {
        // 1,000 distinct fields and 900 repeats of one: every line is looked up through the index.
        var lines = ["HTTP/1.1 200 OK\r\n"]
        for index in 0..<ResponseHeadParser.maximumFieldLines {
            lines.append(index < 100 ? "X-\(index): v\r\n" : "X-Same: \(index)\r\n")
        }
        let (head, violation) = feedHead(lines + ["\r\n"])
        #expect(violation == nil)
        #expect(head?.fields.count == 101)
        #expect(head?.value("x-same")?.split(separator: ",").count == 900)
        let (tooMany, reason) = feedHead(lines + ["X-One-More: v\r\n", "\r\n"])
        #expect(tooMany == nil)
        #expect(reason == "a response head over 1000 fields")
    }

    @Test func aHeadOverTheByteBoundIsRefused() {
        let line = "X-Big: " + String(repeating: "x", count: 100_000) + "\r\n"
        let (head, violation) = feedHead(["HTTP/1.1 200 OK\r\n", line, line, line, "\r\n"])
        #expect(head == nil)
        #expect(violation == "a response head over 262144 bytes")
    }
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct TransferCodingRulesTests {
    @Test(arguments: [
        ("chunked", FramingRules.TransferCoding.valid(codings: [], isChunked: true)),
        ("gzip, chunked", .valid(codings: ["gzip"], isChunked: true)),
        ("Deflate ,  CHUNKED", .valid(codings: ["deflate"], isChunked: true)),
        ("gzip", .valid(codings: ["gzip"], isChunked: false)),
        ("x-gzip, deflate, chunked", .valid(codings: ["x-gzip", "deflate"], isChunked: true)),
        (", chunked,", .valid(codings: [], isChunked: true)),
        ("identity", .valid(codings: [], isChunked: false)),
        ("chunked, another", .invalid("a transfer coding after chunked")),
        ("chunked, chunked", .invalid("a transfer coding after chunked")),
        ("chunked, gzip", .invalid("a transfer coding after chunked")),
        ("", .invalid("an empty Transfer-Encoding")),
        ("another, chunked", .unsupported("another")),
        ("identityx", .unsupported("identityx")),
        ("compress", .unsupported("compress")),
        ("gzip;q=1, chunked", .unsupported("gzip;q=1")),
        ("gzip, gzip, gzip, gzip, gzip, gzip, chunked", .invalid("more than 5 transfer codings")),
    ])
    func eachTransferEncodingValueHasItsMeaning(_ value: String, _ expected: FramingRules.TransferCoding) {
        #expect(FramingRules.transferCoding(value) == expected)
    }
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct RedactionScrubTests {
    @Test func urlsInsideAThrownErrorsTextAreRedacted() {
        let text = "token refresh failed for https://user:pw@auth.test/t?key=SECRET#f (HTTP 500)"
        #expect(Redaction.scrub(text) == "token refresh failed for https://***@auth.test/t?key=***#*** (HTTP 500)")
    }

    @Test func controlCharactersAreShownAsQuestionMarks() {
        #expect(Redaction.printable("text/html\r\n\u{1b}[31mforged") == "text/html???[31mforged")
        #expect(Redaction.scrub("plain words") == "plain words")
    }

    @Test func aBareQueryItemIsMaskedWhole() {
        #expect(Redaction.describe(URL(string: "https://h.test/p?TOKEN")) == "https://h.test/p?***")
    }

    @Test func theUnacceptableContentTypeErrorShowsNoControlCharacter() {
        let error = NetworkQueueError.unacceptableContentType("text/x\r\nInjected: 1", url: nil)
        #expect(error.description == "unacceptable content type text/x??Injected: 1 from (no URL)")
    }
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct CookieJarBoundsTests {
    let now = Date(timeIntervalSince1970: 2_000_000_000)

    @Test func aRequestCarriesAtMostTheHeaderBound() {
        var jar = CookieJar()
        let url = URL(string: "http://big.test/")!
        jar.store((0..<50).map { "c\($0)=\(String(repeating: "v", count: 4000)); Path=/" }, from: url, now: now)
        let header = jar.header(for: url, now: now)
        #expect(header.map { $0.utf8.count <= CookieJar.maximumHeaderSize } == true)
        #expect(header?.split(separator: ";").count == 2)
    }

    @Test func aFullJarEvictsFromTheDomainWithTheMostCookiesFirst() {
        var jar = CookieJar()
        let victim = URL(string: "http://bank.test/")!
        jar.store(["session=keep; Path=/"], from: victim, now: now)
        for host in 0..<62 {
            jar.store((0..<50).map { "c\($0)=1; Path=/" }, from: URL(string: "http://h\(host).test/")!, now: now)
        }
        #expect(jar.cookies.count == CookieJar.maximumCookies)
        #expect(jar.header(for: victim, now: now) == "session=keep")
    }

    @Test func dotSegmentsAreRemovedBeforePathsMatch() {
        var jar = CookieJar()
        jar.store(["admin=1; Path=/admin"], from: URL(string: "http://a.test/admin/x")!, now: now)
        #expect(jar.header(for: URL(string: "http://a.test/admin/../x")!, now: now) == nil)
        #expect(jar.header(for: URL(string: "http://a.test/x/../admin/y")!, now: now) == "admin=1")
        #expect(CookieJar.normalizedPath(URL(string: "http://a.test/a/./b/../c")!) == "/a/c")
        #expect(CookieJar.normalizedPath(URL(string: "http://a.test/a/..")!) == "/")
    }

    @Test(arguments: ["--5", "5-", "-", "", "1e3", "+5"])
    func aMalformedMaxAgeIsIgnored(_ value: String) {
        var jar = CookieJar()
        let url = URL(string: "http://a.test/")!
        jar.store(["a=1; Max-Age=\(value); Path=/"], from: url, now: now)
        #expect(jar.header(for: url, now: now) == "a=1")
    }

    @Test func aNegativeMaxAgeDeletes() {
        var jar = CookieJar()
        let url = URL(string: "http://a.test/")!
        jar.store(["a=1; Path=/"], from: url, now: now)
        jar.store(["a=1; Max-Age=-5; Path=/"], from: url, now: now)
        #expect(jar.header(for: url, now: now) == nil)
    }
}

#if os(Linux)
    @Suite(.admitted, .timeLimit(.minutes(10))) struct DecoderChainTests {
        @Test func moreThanFiveContentCodingsAreRefused() {
            #expect(throws: ContentDecoder.Failure.self) {
                try ContentDecoder(contentEncoding: "gzip, gzip, gzip, gzip, gzip, gzip", library: .shared)
            }
            #expect(throws: ContentDecoder.Failure.self) {
                try ContentDecoder(
                    contentEncoding: Array(repeating: "gzip", count: 60_000).joined(separator: ","), library: .shared)
            }
            #expect((try? ContentDecoder(contentEncoding: "gzip, gzip, gzip, gzip, gzip", library: .shared)) != nil)
        }

        @Test func noneAndIdentityAreNoCoding() throws {
            #expect(try ContentDecoder(contentEncoding: "none", library: .shared) == nil)
            #expect(
                try ContentDecoder(contentCodings: ["identity", "none"], transferCodings: [], library: .shared) == nil)
        }
    }
#endif
