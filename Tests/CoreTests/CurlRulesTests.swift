import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.admitted, .timeLimit(.minutes(10))) struct CurlErrorTableTests {
    @Test(
        arguments: [
            (Int32(0), URLError.Code?.none),
            (1, .badServerResponse),  // HTTP/0.9 from an http URL
            (3, .badURL),
            (5, .cannotFindHost), (6, .cannotFindHost),
            (7, .cannotConnectToHost), (97, .cannotConnectToHost),
            (8, .badServerResponse),
            (16, .networkConnectionLost), (92, .networkConnectionLost),
            (18, .networkConnectionLost), (52, .networkConnectionLost), (55, .networkConnectionLost),
            (25, .networkConnectionLost),
            (26, .requestBodyStreamExhausted),
            (28, .cannotConnectToHost),  // before a response: the connect's bound (TimeLimits.connect)
            (35, .secureConnectionFailed), (59, .secureConnectionFailed), (77, .secureConnectionFailed),
            (60, .serverCertificateUntrusted), (83, .serverCertificateUntrusted), (91, .serverCertificateUntrusted),
            (58, .clientCertificateRejected), (98, .clientCertificateRequired),
            (42, .cancelled),
            (47, .httpTooManyRedirects),
            (61, .cannotDecodeContentData),
            (63, .dataLengthExceedsMaximum),
            (4, .unsupportedURL), (23, .cannotWriteToFile), (33, .badServerResponse), (88, .badServerResponse),
            (45, .cannotConnectToHost), (96, .cannotConnectToHost), (65, .requestBodyStreamExhausted),
            (81, .networkConnectionLost), (95, .networkConnectionLost), (99, .networkConnectionLost),
            (94, .userAuthenticationRequired),
            // 43 before the final head: libcurl's word for a head it refused (curl's test 1473).
            (43, .badServerResponse),
            (2, .unknown), (48, .unknown), (93, .unknown), (1234, .unknown),
        ] as [(Int32, URLError.Code?)])
    func eachCurlCodeHasItsURLErrorCode(curlCode: Int32, expected: URLError.Code?) {
        #expect(CurlErrorTable.code(for: curlCode, scheme: "http") == expected)
    }

    @Test func aFailedReceiveIsALostConnectionOnlyWhenTheSystemSaysSo() {
        // CURLE_RECV_ERROR with ECONNRESET: the peer reset; with no system error: libcurl refused the bytes
        // (broken chunk framing, a head over its limit), which no retry mends.
        #expect(
            CurlErrorTable.code(for: 56, scheme: "http", afterResponse: true, osErrno: 104) == .networkConnectionLost)
        #expect(CurlErrorTable.code(for: 56, scheme: "http", afterResponse: true, osErrno: 0) == .badServerResponse)
        #expect(CurlErrorTable.code(for: 56, scheme: "http", afterResponse: false, osErrno: 0) == .badServerResponse)
        // The connect's bound is the only one libcurl is given: once a response came, a timeout is a timeout.
        #expect(CurlErrorTable.code(for: 28, scheme: "http", afterResponse: true) == .timedOut)
        // A bad argument once the head is read is the program's fault, never the server's.
        #expect(CurlErrorTable.code(for: 43, scheme: "http", afterResponse: true) == .unknown)
    }

    @Test func aProxyThatRefusesTheTunnelSaysSoWhateverLibcurlsCode() {
        // libcurl 7.88 ends a refused CONNECT with CURLE_RECV_ERROR and no system error; later ones with others.
        for curlCode: Int32 in [56, 97, 7] {
            #expect(
                CurlErrorTable.code(for: curlCode, scheme: "https", connectCode: 407) == .userAuthenticationRequired)
            #expect(CurlErrorTable.code(for: curlCode, scheme: "https", connectCode: 403) == .cannotConnectToHost)
            #expect(CurlErrorTable.code(for: curlCode, scheme: "https", connectCode: 502) == .cannotConnectToHost)
        }
        // A tunnel that was set up (200) leaves the code to libcurl's.
        #expect(CurlErrorTable.code(for: 56, scheme: "https", osErrno: 0, connectCode: 200) == .badServerResponse)
        #expect(CurlErrorTable.code(for: 60, scheme: "https", connectCode: 200) == .serverCertificateUntrusted)
        #expect(CurlErrorTable.code(for: 0, scheme: "https", connectCode: 407) == nil)
    }

    @Test func aCertificateThatFailedSaysWhetherItsDatesOrItsTrustFailed() {
        // OpenSSL's verify result behind CURLE_PEER_FAILED_VERIFICATION: 10 expired, 9 not yet valid.
        #expect(
            CurlErrorTable.code(for: 60, scheme: "https", certificateVerifyResult: 10) == .serverCertificateHasBadDate)
        #expect(
            CurlErrorTable.code(for: 60, scheme: "https", certificateVerifyResult: 9) == .serverCertificateNotYetValid)
        for result in [0, 1, 18, 19, 20, 21] {
            #expect(
                CurlErrorTable.code(for: 60, scheme: "https", certificateVerifyResult: result)
                    == .serverCertificateUntrusted)
        }
        // Only that code reads it.
        #expect(CurlErrorTable.code(for: 35, scheme: "https", certificateVerifyResult: 10) == .secureConnectionFailed)
    }

    /// What URLSession on Linux reports as -1 with libcurl's words (captured from libcurl 7.88 with OpenSSL 3).
    @Test func libcurlsWordsGiveTheCodeItsCodeWould() {
        let table: [(String, URLError.Code?)] = [
            ("SSL certificate problem: unable to get local issuer certificate", .serverCertificateUntrusted),
            ("SSL certificate problem: self-signed certificate", .serverCertificateUntrusted),
            ("SSL certificate problem: certificate has expired", .serverCertificateHasBadDate),
            ("SSL certificate problem: certificate is not yet valid", .serverCertificateNotYetValid),
            (
                "SSL: no alternative certificate subject name matches target host name '127.0.0.1'",
                .serverCertificateUntrusted
            ),
            ("OpenSSL SSL_connect: SSL_ERROR_SYSCALL in connection to 127.0.0.1:443", .secureConnectionFailed),
            ("error:0A00010B:SSL routines::wrong version number", .secureConnectionFailed),
            ("CONNECT tunnel failed, response 407", .userAuthenticationRequired),
            ("CONNECT tunnel failed, response 403", .cannotConnectToHost),
            ("Proxy CONNECT aborted", .cannotConnectToHost),
            ("Failed writing header", .badServerResponse), ("Header without colon", .badServerResponse),
            ("out of memory", .badServerResponse), ("Unrecognized content encoding type", .cannotDecodeContentData),
            ("Unsupported proxy syntax in 'http://u:p@tls-proxy:x'", nil), ("Could not resolve proxy: ssl.test", nil),
            ("something else entirely", nil),
            // A server that resets the connection as it accepts it (issue 71: 36 of 60 saved over URLSession).
            ("Failed to connect to 127.0.0.1 port 18507 after 1 ms: Couldn't connect to server", .cannotConnectToHost),
            ("Could not resolve host: nq-gone.invalid", .cannotFindHost),
            ("Empty reply from server", .networkConnectionLost),
            ("Recv failure: Connection reset by peer", .networkConnectionLost),
        ]
        for (words, code) in table {
            #expect(LibcurlWords.codeBeforeResponse(words.lowercased()) == code, "\(words)")
        }
    }

    @Test func outOfMemoryBeforeTheHeadIsAnOversizedHeadLine() {
        #expect(CurlErrorTable.code(for: 27, scheme: "http", afterResponse: false) == .badServerResponse)
        #expect(CurlErrorTable.code(for: 27, scheme: "http", afterResponse: true) == .cannotLoadFromNetwork)
    }

    @Test func noDeterministicFailureIsRetriedByTheDefaultPolicy() {
        // Framing, decoding and head-size failures map to codes the default policy never retries.
        let retryable = RetryPolicy.defaultRetryableErrors
        for (code, afterResponse) in [(8, false), (27, false), (56, true), (61, true), (1, false)] as [(Int32, Bool)] {
            let mapped = CurlErrorTable.code(for: code, scheme: "http", afterResponse: afterResponse, osErrno: 0)
            #expect(mapped.map { !retryable.contains($0) } == true, "CURLcode \(code) → \(String(describing: mapped))")
        }
    }

    @Test func anUnsupportedProtocolIsABadURLOnlyForOtherSchemes() {
        #expect(CurlErrorTable.code(for: 1, scheme: "https") == .badServerResponse)
        #expect(CurlErrorTable.code(for: 1, scheme: "ftp") == .unsupportedURL)
    }

    @Test func theErrorKeepsCurlsWordsItsCodeAndTheURL() throws {
        let url = URL(string: "http://127.0.0.1:1/x")!
        let error = try #require(CurlErrorTable.error(for: 7, scheme: "http", url: url, message: "Failed to connect"))
        #expect(error.code == .cannotConnectToHost)
        #expect(error.userInfo[CurlErrorTable.curlCodeKey] as? Int == 7)
        #expect(error.userInfo[NSLocalizedDescriptionKey] as? String == "Failed to connect")
        #expect(CurlErrorTable.error(for: 0, scheme: "http", url: url, message: "") == nil)
    }
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct ResponseHeadParserTests {
    func parse(_ lines: [String]) -> (heads: [ResponseHeadParser.Head], parser: ResponseHeadParser) {
        var parser = ResponseHeadParser()
        var heads: [ResponseHeadParser.Head] = []
        for line in lines { if let head = parser.feed(line[...]) { heads.append(head) } }
        return (heads, parser)
    }

    @Test func aHeadEndsAtTheBlankLine() {
        let (heads, parser) = parse([
            "HTTP/1.1 200 OK\r\n", "Content-Length: 5\r\n", "Content-Type: text/plain\r\n", "\r\n",
        ])
        #expect(parser.isComplete)
        #expect(
            heads == [
                .init(
                    statusCode: 200, httpVersion: "HTTP/1.1",
                    fields: [("Content-Length", "5"), ("Content-Type", "text/plain")])
            ])
    }

    @Test func anInterimHeadIsDroppedAndTheFinalOneKept() {
        let (heads, _) = parse([
            "HTTP/1.1 100 Continue\r\n", "\r\n", "HTTP/1.1 103 Early Hints\r\n", "Link: </a>\r\n", "\r\n",
            "HTTP/1.1 201 Created\r\n", "Location: /x\r\n", "\r\n",
        ])
        #expect(heads == [.init(statusCode: 201, httpVersion: "HTTP/1.1", fields: [("Location", "/x")])])
    }

    @Test func duplicateFieldsAreJoinedUnderTheFirstSpelling() {
        let (heads, _) = parse(["HTTP/2 200\r\n", "set-cookie: a=1\r\n", "Set-Cookie: b=2\r\n", "X: 1\r\n", "\r\n"])
        #expect(heads.first?.fields.map(\.name) == ["set-cookie", "X"])
        #expect(heads.first?.value("SET-COOKIE") == "a=1, b=2")
        #expect(heads.first?.httpVersion == "HTTP/2")
    }

    @Test func foldedLinesContinueTheFieldBefore() {
        let (heads, _) = parse(["HTTP/1.1 200 OK\r\n", "X-Long: one\r\n", " two\r\n", "\tthree\r\n", "\r\n"])
        #expect(heads.first?.value("x-long") == "one two three")
    }

    @Test func emptyValuesJoinAndFoldAsTheyAlwaysDid() {
        // A fold after an empty value starts it (no leading space), an empty fold line adds nothing; a repeated
        // field joins with ", " even to an empty value or with one; UTF-8 beyond ASCII reads back as sent.
        let (heads, _) = parse([
            "HTTP/1.1 200 OK\r\n", "F:\r\n", " a\r\n", " \r\n", "J:\r\n", "j: b\r\n", "j:\r\n", "U: \u{80}x\r\n",
            "\r\n",
        ])
        #expect(
            heads.first?.fields == [
                .init(name: "F", value: "a"), .init(name: "J", value: ", b, "), .init(name: "U", value: "\u{80}x"),
            ])
    }

    @Test func trailersAfterTheHeadAndMalformedLinesAreIgnored() {
        let (heads, _) = parse([
            "junk before a status line\r\n", "HTTP/1.1 200 OK\r\n", "no colon here\r\n", ": no name\r\n", "A: 1\r\n",
            "\r\n", "Trailer-Field: late\r\n", "\r\n",
        ])
        #expect(heads == [.init(statusCode: 200, httpVersion: "HTTP/1.1", fields: [("A", "1")])])
    }

    @Test func aRedirectChainYieldsOneHeadPerRun() {
        // Each run of a transfer (the transport follows redirects itself) gets a fresh parser.
        let first = parse(["HTTP/1.1 302 Found\r\n", "Location: /b\r\n", "\r\n"]).heads
        let second = parse(["HTTP/1.1 200 OK\r\n", "\r\n"]).heads
        #expect(first.first?.value("location") == "/b")
        #expect(second.first?.statusCode == 200)
    }

    @Test(arguments: [
        ("HTTP/1.1 404\r\n", 404, "HTTP/1.1"), ("HTTP/1.1  204 No Content\r\n", 204, "HTTP/1.1"),
        ("HTTP/2 200\r\n", 200, "HTTP/2"), ("HTTP/1.0 200 OK\r\n", 200, "HTTP/1.0"),
    ])
    func statusLinesGiveTheirCodeAndVersion(_ line: String, _ code: Int, _ version: String) {
        let heads = parse([line, "Content-Length: 007\r\n", "\r\n"]).heads
        #expect(heads.first?.statusCode == code)
        #expect(heads.first?.httpVersion == version)
        #expect(heads.first?.value("content-length") == "7")
        #expect(heads.first?.contentLength == 7)
    }

    @Test(arguments: ["HTTP/1.1 2000 Big\r\n", "HTTP/1.1 OK\r\n", "HTTP/1.1 20x\r\n", "HTTP/1.1\r\n"])
    func aStatusLineWithoutAThreeDigitCodeCompletesNoHead(_ line: String) {
        #expect(parse([line, "A: 1\r\n", "\r\n"]).heads.isEmpty)
    }
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct RedirectRulesTests {
    let url = URL(string: "http://a.test/dir/page?q=1")!

    func request(_ method: String, body: Data? = Data("x=1".utf8)) -> URLRequest {
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.httpBody = body
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.setValue("Bearer T", forHTTPHeaderField: "Authorization")
        return request
    }

    @Test(arguments: [
        (301, "POST", "GET", false), (302, "POST", "GET", false), (303, "POST", "GET", false),
        (303, "PUT", "GET", false), (303, "HEAD", "HEAD", true), (301, "PUT", "PUT", true),
        (302, "DELETE", "DELETE", true), (307, "POST", "POST", true), (308, "PUT", "PUT", true),
    ])
    func methodAndBodyFollowTheBrowsersRules(status: Int, method: String, next: String, keepsBody: Bool) throws {
        let followed = try #require(
            RedirectRules.next(after: status, location: "/other", request: request(method), url: url))
        #expect(followed.httpMethod == next)
        #expect((followed.httpBody != nil) == keepsBody)
        #expect((followed.value(forHTTPHeaderField: "Content-Type") != nil) == keepsBody)
        #expect(followed.value(forHTTPHeaderField: "Authorization") == "Bearer T")
        #expect(followed.url?.absoluteString == "http://a.test/other")
    }

    @Test func locationsResolveAgainstTheCurrentURL() {
        func target(_ location: String) -> String? {
            RedirectRules.next(after: 302, location: location, request: request("GET", body: nil), url: url)?.url?
                .absoluteString
        }
        #expect(target("next") == "http://a.test/dir/next")
        #expect(target("//b.test/x") == "http://b.test/x")
        #expect(target("https://c.test:8443/y") == "https://c.test:8443/y")
    }

    @Test func otherStatusesAndMissingLocationsAreNoRedirect() {
        #expect(RedirectRules.next(after: 304, location: "/x", request: request("GET"), url: url) == nil)
        #expect(RedirectRules.next(after: 300, location: "/x", request: request("GET"), url: url) == nil)
        #expect(RedirectRules.next(after: 302, location: nil, request: request("GET"), url: url) == nil)
        #expect(RedirectRules.next(after: 302, location: "", request: request("GET"), url: url) == nil)
    }
}

/// Feeds `lines` to a new head parser: the last head it completed, and its violation.
func feedHead(_ lines: [String]) -> (head: ResponseHeadParser.Head?, violation: String?) {
    var parser = ResponseHeadParser()
    var head: ResponseHeadParser.Head?
    for line in lines { head = parser.feed(line[...]) ?? head }
    return (head, parser.violation)
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct StrictFramingTests {
    @Test(arguments: [
        ("X-A: a\rb\r\n", "a bare CR in a header line"), ("X-A: a\rb\n", "a bare CR in a header line"),
        ("X-A: foo", "a header line not ended by LF"),
        ("Transfer-Encoding: chunked, gzip\r\n", "a transfer coding after chunked"),
        ("Transfer-Encoding : chunked\r\n", "white space around a framing field's name"),
        ("Content-Length\t: 5\r\n", "white space around a framing field's name"),
        ("X-A: a\u{0}b\r\n", "a NUL in a header line"),
        ("Content-Length: 5, 10\r\n", "differing Content-Length values"),
        ("Content-Length: -1\r\n", "a malformed Content-Length"),
        ("Content-Length: \r\n", "a malformed Content-Length"),
    ])
    func aBrokenHeadIsNeverCompleted(_ line: String, _ reason: String) {
        let (head, violation) = feedHead(["HTTP/1.1 200 OK\r\n", "Set-Cookie: a=1\r\n", line, "\r\n"])
        #expect(head == nil)
        #expect(violation == reason)
    }

    @Test func repeatedEqualLengthsAreOneLength() {
        let (head, violation) = feedHead([
            "HTTP/1.1 200 OK\r\n", "Content-Length: 5\r\n", "content-length: 5, 5\r\n", "\r\n",
        ])
        #expect(violation == nil)
        #expect(head?.value("Content-Length") == "5")
        #expect(head?.closesConnection == false)
    }

    @Test func aLengthBesideATransferCodingIsDroppedAndTheConnectionClosed() {
        let (head, _) = feedHead([
            "HTTP/1.1 200 OK\r\n", "Content-Length: 3\r\n", "Transfer-Encoding: chunked\r\n", "\r\n",
        ])
        #expect(head?.value("Content-Length") == nil)
        #expect(head?.closesConnection == true)
    }

    @Test func setCookieValuesStaySeparate() {
        let (head, _) = feedHead([
            "HTTP/1.1 200 OK\r\n", "Set-Cookie: a=1; Expires=Wed, 21 Oct 2037 07:28:00 GMT\r\n", "set-cookie: b=2\r\n",
            "\r\n",
        ])
        #expect(head?.setCookies == ["a=1; Expires=Wed, 21 Oct 2037 07:28:00 GMT", "b=2"])
    }

    @Test(arguments: [
        ("5", FramingRules.ContentLength.valid(5)), (" 7 , 7 ", .valid(7)),
        ("5,10", .invalid("differing Content-Length values")),
        ("5,", .invalid("a malformed Content-Length")), ("0x10", .invalid("a malformed Content-Length")),
        ("99999999999999999999", .invalid("a malformed Content-Length")),
        ("", .invalid("a malformed Content-Length")), ("1 2", .invalid("a malformed Content-Length")),
        (",5", .invalid("a malformed Content-Length")), ("\t3\t", .valid(3)), ("007", .valid(7)),
        ("5,5,5", .valid(5)), ("5,5,6", .invalid("differing Content-Length values")),
        ("999999999999999999", .valid(999_999_999_999_999_999)),
        ("1000000000000000000", .invalid("a malformed Content-Length")), ("-1", .invalid("a malformed Content-Length")),
    ])
    func contentLengthValues(_ value: String, _ expected: FramingRules.ContentLength) {
        #expect(FramingRules.contentLength(value) == expected)
    }
}
