import Foundation

extension LoopbackServer {
    /// `/raw/NAME`: byte-exact hostile responses, for tests of a client's HTTP framing. Each is written as
    /// is; the connection stays open afterwards (so that a client reusing it shows) unless it closes.
    static let rawResponses: [String: (bytes: String, closes: Bool)] = [
        // Two lengths, as two fields or one list: RFC 9112 §6.3 makes either an unrecoverable error.
        "cl-conflict": ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 10\r\n\r\n0123456789", false),
        "cl-list": ("HTTP/1.1 200 OK\r\nContent-Length: 5, 10\r\n\r\n0123456789", false),
        "cl-invalid": ("HTTP/1.1 200 OK\r\nContent-Length: 5x\r\n\r\n01234", false),
        // The same length twice is one length.
        "cl-same": ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5, 5\r\n\r\n01234", false),
        // A length beside chunked: the length is ignored, the connection must not be reused.
        "cl-chunked": ("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", false),
        // A bare LF, a bare CR or a NUL in a field, each smuggling a cookie.
        "bare-lf": ("HTTP/1.1 200 OK\r\nX-A: foo\nSet-Cookie: injected=lf; Path=/\r\nContent-Length: 2\r\n\r\nok", false),
        "bare-cr": ("HTTP/1.1 200 OK\r\nX-A: foo\rSet-Cookie: injected=cr; Path=/\r\nContent-Length: 2\r\n\r\nok", false),
        "nul": ("HTTP/1.1 200 OK\r\nSet-Cookie: injected=nul; Path=/\r\nX-A: foo\0bar\r\nContent-Length: 2\r\n\r\nok", false),
        // A valid cookie before a broken line: nothing of the head may take effect.
        "cookie-then-bad": ("HTTP/1.1 200 OK\r\nSet-Cookie: early=1; Path=/\r\nX-A: a\rb\r\nContent-Length: 2\r\n\r\nok", false),
        // A redirect whose head is broken is not followed.
        "redirect-bare-lf": ("HTTP/1.1 302 Found\r\nLocation: /bytes/4\nX-B: y\r\nContent-Length: 0\r\n\r\n", false),
        // Broken chunk framing: a chunk size that is not hexadecimal.
        "bad-chunk": ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", true),
        // A status line, then the connection closes.
        "status-only": ("HTTP/1.1 200 OK\r\n", true),
        // A well-framed head that sets a cookie, for comparison.
        "cookie-ok": ("HTTP/1.1 200 OK\r\nSet-Cookie: good=1; Path=/\r\nContent-Length: 2\r\n\r\nok", false),
    ]

    /// Serves `/raw/NAME`; returns false when the connection must close.
    func serveRaw(_ name: String, _ response: Response) -> Bool {
        guard let raw = Self.rawResponses[name] else { return response.send(404, body: "no raw response \(name)\n") }
        response.finishRequest()
        return Socket.write(response.fd, Array(raw.bytes.utf8)) && !raw.closes
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
