import Foundation

extension LoopbackServer {
    /// `/raw/NAME`: byte-exact hostile responses, for tests of a client's HTTP framing. Each is written as
    /// is; the connection stays open afterwards (so that a client reusing it shows) unless it closes.
    static let rawResponses: [String: (bytes: [UInt8], closes: Bool)] = {
        var responses = textResponses.mapValues { (bytes: Array($0.bytes.utf8), closes: $0.closes) }
        for (name, response) in corpusResponses { responses[name] = response }
        return responses
    }()

    /// The text of ``corpusBody``, the body the corpus's coded responses carry once decoded.
    public static let corpusText = "NetworkQueue corpus body: " + String(repeating: "0123456789abcdef", count: 300)
    private static var corpusBody: [UInt8] { Array(corpusText.utf8) }

    /// Odd but real responses whose body is binary: transfer codings and content codings.
    private static let corpusResponses: [String: (bytes: [UInt8], closes: Bool)] = [
        "te-gzip-chunked": (head("Transfer-Encoding: gzip, chunked") + Gzip.chunked(Gzip.encode(corpusBody)), false),
        "te-deflate-chunked": (
            head("Transfer-Encoding: deflate, chunked") + Gzip.chunked(Gzip.deflate(corpusBody)), false
        ),
        "te-gzip-close": (head("Transfer-Encoding: gzip") + Gzip.encode(corpusBody), true),
        "te-gzip-ce-deflate": (
            head("Content-Encoding: deflate\r\nTransfer-Encoding: gzip, chunked")
                + Gzip.chunked(Gzip.encode(Gzip.deflate(corpusBody))), false
        ),
        "ce-gzip-chain-6": (
            head("Content-Encoding: gzip, gzip, gzip, gzip, gzip, gzip\r\nContent-Length: \(chain(6).count)")
                + chain(6), false
        ),
        "ce-gzip-chain-5": (
            head("Content-Encoding: gzip, gzip, gzip, gzip, gzip\r\nContent-Length: \(chain(5).count)") + chain(5),
            false
        ),
    ]

    private static func head(_ fields: String) -> [UInt8] { Array("HTTP/1.1 200 OK\r\n\(fields)\r\n\r\n".utf8) }

    /// The corpus body gzipped `count` times.
    private static func chain(_ count: Int) -> [UInt8] {
        (0..<count).reduce(corpusBody) { body, _ in Gzip.encode(body) }
    }

    private static let textResponses: [String: (bytes: String, closes: Bool)] = [
        // Two lengths, as two fields or one list: RFC 9112 §6.3 makes either an unrecoverable error.
        "cl-conflict": ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 10\r\n\r\n0123456789", false),
        "cl-list": ("HTTP/1.1 200 OK\r\nContent-Length: 5, 10\r\n\r\n0123456789", false),
        "cl-invalid": ("HTTP/1.1 200 OK\r\nContent-Length: 5x\r\n\r\n01234", false),
        // The same length twice is one length.
        "cl-same": ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5, 5\r\n\r\n01234", false),
        // A length beside chunked: the length is ignored, the connection must not be reused.
        "cl-chunked": (
            "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", false
        ),
        // A bare LF, a bare CR or a NUL in a field, each smuggling a cookie.
        "bare-lf": (
            "HTTP/1.1 200 OK\r\nX-A: foo\nSet-Cookie: injected=lf; Path=/\r\nContent-Length: 2\r\n\r\nok", false
        ),
        "bare-cr": (
            "HTTP/1.1 200 OK\r\nX-A: foo\rSet-Cookie: injected=cr; Path=/\r\nContent-Length: 2\r\n\r\nok", false
        ),
        "nul": (
            "HTTP/1.1 200 OK\r\nSet-Cookie: injected=nul; Path=/\r\nX-A: foo\0bar\r\nContent-Length: 2\r\n\r\nok", false
        ),
        // A valid cookie before a broken line: nothing of the head may take effect.
        "cookie-then-bad": (
            "HTTP/1.1 200 OK\r\nSet-Cookie: early=1; Path=/\r\nX-A: a\rb\r\nContent-Length: 2\r\n\r\nok", false
        ),
        // A redirect whose head is broken is not followed.
        "redirect-bare-lf": ("HTTP/1.1 302 Found\r\nLocation: /bytes/4\nX-B: y\r\nContent-Length: 0\r\n\r\n", false),
        // Broken chunk framing: a chunk size that is not hexadecimal.
        "bad-chunk": ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", true),
        // A status line, then the connection closes.
        "status-only": ("HTTP/1.1 200 OK\r\n", true),
        // A well-framed head that sets a cookie, for comparison.
        "cookie-ok": ("HTTP/1.1 200 OK\r\nSet-Cookie: good=1; Path=/\r\nContent-Length: 2\r\n\r\nok", false),
        // The corpus of odd but real responses (RFC 9112 leniency and its limits).
        "lf-only": ("HTTP/1.1 200 OK\nContent-Length: 5\nSet-Cookie: lf=1; Path=/\n\nhello", false),
        "lf-mixed": ("HTTP/1.1 200 OK\r\nContent-Type: text/plain\nContent-Length: 5\r\n\nhello", false),
        "obs-fold": ("HTTP/1.1 200 OK\r\nX-Long: one\r\n two\r\nContent-Length: 5\r\n\r\nhello", false),
        // curl's test 1473: the first field line begins with white space (a fold with nothing to fold into).
        "first-field-folded": ("HTTP/1.1 200 OK\r\n  Server: x\r\nContent-Length: 5\r\n\r\nhello", true),
        // What a proxy answers a forwarded request it wants credentials for.
        "proxy-407": (
            "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"p\"\r\n"
                + "Content-Length: 5\r\n\r\nproxy", false
        ),
        "te-folded": ("HTTP/1.1 200 OK\r\nTransfer-Encoding:\r\n chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", true),
        "cl-folded": ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n 5\r\n\r\nhello", true),
        "te-space-before-colon": (
            "HTTP/1.1 200 OK\r\nTransfer-Encoding : chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", true
        ),
        "trailers": (
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n",
            false
        ),
        "te-chunked-unknown": (
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, another\r\n\r\n5\r\nhello\r\n0\r\n\r\n", true
        ),
        "te-unknown-chunked": (
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: another, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", true
        ),
        "te-identityx": ("HTTP/1.1 200 OK\r\nTransfer-Encoding: identityx\r\n\r\nhello", true),
        "te-chunked-gzip": ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", true),
        "interim-103": (
            "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false
        ),
        "204-with-body": ("HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello", true),
        "304-with-body": ("HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\nhello", true),
        "http10-no-length": ("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nhello", true),
        "ce-none": ("HTTP/1.1 200 OK\r\nContent-Encoding: none\r\nContent-Length: 5\r\n\r\nhello", false),
        "location-empty": ("HTTP/1.1 302 Found\r\nLocation: \r\nContent-Length: 2\r\n\r\nok", false),
        // Two Location fields: joined they would name "/bytes/4, /bytes/5", a place the server never sent.
        "location-twice": (
            "HTTP/1.1 302 Found\r\nLocation: /bytes/4\r\nLocation: /bytes/5\r\nContent-Length: 2\r\n\r\nok", false
        ),
        // The same Location twice: one place, followed.
        "location-repeated": (
            "HTTP/1.1 302 Found\r\nLocation: /bytes/4\r\nLocation: /bytes/4\r\nContent-Length: 2\r\n\r\nok", false
        ),
        // A redirect whose body ends only when the connection closes, from a server that keeps it open.
        "redirect-close-body": (
            "HTTP/1.1 301 Moved Permanently\r\nLocation: /bytes/4\r\nConnection: close\r\n\r\nmoved", false
        ),
        // A field line that looks like a status line is a field line (without a colon: ignored).
        "status-in-fields-401": (
            "HTTP/1.1 401 Unauthorized\r\nX-A: 1\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nno", false
        ),
        "status-in-fields-302": (
            "HTTP/1.1 200 OK\r\nHTTP/1.1 302 Found\r\nLocation: /bytes/4\r\nContent-Length: 2\r\n\r\nok", false
        ),
    ]

    /// Serves `/raw/NAME`; returns false when the connection must close.
    func serveRaw(_ name: String, _ response: Response) -> Bool {
        guard let raw = Self.rawResponses[name] else { return response.send(404, body: "no raw response \(name)\n") }
        response.finishRequest()
        return Socket.write(response.fd, raw.bytes) && !raw.closes
    }

    /// `/bighead?cookies=N&size=S`: a head setting N cookies, then one field of S bytes (past a client's
    /// limit when S is large), then a short body.
    func serveBigHead(_ request: HTTPRequest, _ response: Response) -> Bool {
        let cookies = max(0, request.int("cookies") ?? 0)
        let size = max(0, request.int("size") ?? 0)
        var text = "HTTP/1.1 200 OK\r\n"
        for index in 0..<cookies { text += "Set-Cookie: big\(index)=\(String(repeating: "v", count: 100)); Path=/\r\n" }
        text += "X-Big: \(String(repeating: "x", count: size))\r\nContent-Length: 2\r\n\r\nok"
        response.finishRequest()
        return Socket.write(response.fd, Array(text.utf8))
    }
}
