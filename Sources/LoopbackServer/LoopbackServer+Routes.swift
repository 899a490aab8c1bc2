import Foundation

extension LoopbackServer {
    /// The body pattern: byte i of every body is `i % 256`.
    static let pattern: [UInt8] = (0..<(65_536 + 256)).map { UInt8(truncatingIfNeeded: $0) }
    static let chunkSize = 65_536

    /// Serves one request; returns false when the connection must close.
    func respond(to request: HTTPRequest, reader: inout RequestReader, with response: Response) -> Bool {
        guard let bodyLength = try? reader.consumeBody(of: request) else { return false }
        if let delay = request.int("delay"), delay > 0 { Thread.sleep(forTimeInterval: Double(delay) / 1000) }
        // `silent=1` on any route: no answer at all until the client hangs up (a server that never answers, so that
        // a client's time limit is the only way the request can end, however slow the machine running the test).
        if request.query["silent"] == "1" {
            while response.pause(60) {}
            return false
        }
        // `resets=N&key=K` on any route: the first N requests with key K, HEADs included, have their connection reset
        // once their head is read (a server that breaks before it answers).
        if let resets = request.int("resets") {
            let key = request.query["key"] ?? request.path
            let arrival = state.with { state in
                defer { state.resetArrivals[key, default: 0] += 1 }
                return state.resetArrivals[key, default: 0]
            }
            if arrival < resets {
                Socket.reset(response.fd)
                return false
            }
        }
        if request.method == "HEAD" {
            if request.query["headDrop"] == "1" { return false }
            if let status = request.int("headStatus"), (200...599).contains(status) { return response.send(status) }
        }
        if request.query["continue"] == "1" {
            // An interim 100 Continue head before the real response.
            guard Socket.write(response.fd, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return false }
        }
        let parts = request.path.split(separator: "/").map(String.init)
        let name = parts.first ?? ""
        let number = parts.count > 1 ? Int(parts[1]) : nil
        switch (name, number) {
        case ("bytes", let size?) where size >= 0:
            return serveBytes(size, request, response)
        case ("nohead", let size?) where size >= 0:
            guard request.method != "HEAD" else { return response.send(405, ["Allow": "GET"]) }
            return serveBytes(size, request, response)
        case ("chunked", let size?) where size >= 0:
            guard response.head(200, ["Transfer-Encoding": "chunked", "Content-Type": "application/octet-stream"])
            else { return false }
            return request.method == "HEAD"
                ? response.write([], isLast: true) : stream(size, from: 0, request, response, chunked: true)
        case ("status", let code?) where (100...999).contains(code) && code >= 200:
            return response.send(code, body: "status \(code)\n")
        case ("drop", let size?) where size >= 2:
            response.head(200, ["Content-Length": "\(size)", "Content-Type": "application/octet-stream"])
            response.write(Array(Self.pattern.prefix(size / 2)), isLast: false)
            return false
        case ("gzip", let size?) where size >= 0:
            return serveGzip(size, request, response)
        case ("reset", let size?) where size >= 2:
            response.head(200, ["Content-Length": "\(size)", "Content-Type": "application/octet-stream"])
            response.write(Array(Self.pattern.prefix(size / 2)), isLast: false)
            Socket.reset(response.fd)
            return false
        case ("malformed", nil):
            Socket.write(response.fd, Array("HTTZ/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc".utf8))
            response.finishRequest()
            return false
        case ("raw", nil) where parts.count == 2:
            return serveRaw(parts[1], response)
        case ("text", nil):
            // /text?body=B&header=Name:Value&lastModified=D: a 200 whose body is B (a validator file's text a
            // hostile server sends, say), with one field of the test's and a Last-Modified.
            var headers = ["Content-Type": "text/plain"]
            if let modified = request.query["lastModified"] { headers["Last-Modified"] = modified }
            if let extra = request.query["header"], let colon = extra.firstIndex(of: ":") {
                headers[String(extra[..<colon])] = String(extra[extra.index(after: colon)...])
            }
            return response.send(200, headers, body: request.query["body"] ?? "")
        case ("bighead", nil):
            return serveBigHead(request, response)
        case ("cookie", nil):
            return response.send(
                200, ["Set-Cookie": "session=\(request.query["value"] ?? "secret"); Path=/"], body: "ok")
        case ("upload", nil):
            return response.send(200, body: "\(bodyLength)")
        case ("redirect", let count?) where count >= 1:
            let code = request.int("code") ?? 302
            var next = request
            next.path = "/redirect/\(count - 1)"
            let location = count == 1 ? (request.query["to"] ?? "/bytes/16") : next.target
            return response.send(code, ["Location": location])
        case ("trickle", let size?) where size >= 0 && parts.count == 4:
            guard let pieces = Int(parts[2]), let interval = Int(parts[3]), pieces >= 1 else { break }
            return serveTrickle(size, pieces: pieces, interval: interval, request, response)
        case ("shared", let size?) where size >= 0:
            return serveShared(size, request, response)
        case ("capped", let size?) where size >= 0:
            return serveCapped(size, request, response)
        case ("crowd", let size?) where size >= 0:
            return serveCrowd(size, request, response)
        case ("latency", let size?) where size >= 0:
            return serveLatency(size, request, response)
        case ("endless", nil):
            return serveEndless(request, response)
        case ("flaky", let size?) where size >= 2:
            return serveFlaky(size, request, response)
        case ("barrier", let size?) where size >= 0:
            let batch = max(1, request.int("n") ?? 1)
            let index = state.with { state in
                defer { state.barrierArrivals += 1 }
                return state.barrierArrivals
            }
            let releaseAt = (index / batch + 1) * batch
            // wait=S: how long a batch waits for its last arrival before it goes anyway (default 10 s).
            let wait = Double(max(0, request.int("wait") ?? 10))
            _ = state.wait(until: Date(timeIntervalSinceNow: wait)) { $0.barrierArrivals >= releaseAt }
            return serveBytes(size, request, response)
        default:
            break
        }
        return response.send(404, body: "no route for \(request.path)\n")
    }

    /// `/flaky/N?key=K&failures=F`: the first F requests (HEAD excluded) with key K fail, the next ones get
    /// N pattern bytes. A failure is `status` (default 503) with `Retry-After: retryAfter` when given, or with
    /// `mode=drop` a 200 whose connection closes after 60% of the body.
    private func serveFlaky(_ size: Int, _ request: HTTPRequest, _ response: Response) -> Bool {
        guard request.method != "HEAD" else { return serveBytes(size, request, response) }
        let key = request.query["key"] ?? ""
        let arrival = state.with { state in
            defer { state.flakyArrivals[key, default: 0] += 1 }
            return state.flakyArrivals[key, default: 0]
        }
        guard arrival < (request.int("failures") ?? 1) else { return serveBytes(size, request, response) }
        if request.query["mode"] == "drop" {
            response.head(200, ["Content-Length": "\(size)", "Content-Type": "application/octet-stream"])
            response.write(Array(Self.patternBytes(size * 6 / 10)), isLast: false)
            return false
        }
        var headers: [String: String] = [:]
        if let retryAfter = request.query["retryAfter"] { headers["Retry-After"] = retryAfter }
        return response.send(request.int("status") ?? 503, headers, body: "busy\n")
    }

    /// `/gzip/N`: N pattern bytes gzip-encoded when the client accepts gzip (or `force=1`), else plain;
    /// `fault=truncate` cuts the stream at 60% (Content-Length matching what is sent), `fault=corrupt`
    /// breaks its checksum.
    private func serveGzip(_ size: Int, _ request: HTTPRequest, _ response: Response) -> Bool {
        let accepted = request.headers["accept-encoding"]?.lowercased().contains("gzip") == true
        guard accepted || request.query["force"] == "1" else { return serveBytes(size, request, response) }
        var body = Gzip.encode(Self.patternBytes(size))
        switch request.query["fault"] {
        case "truncate": body = Array(body.prefix(body.count * 6 / 10))
        case "corrupt": body[body.count - 8] ^= 0xff
        default: break
        }
        let headers = [
            "Content-Encoding": request.query["encoding"] ?? "gzip", "Content-Length": "\(body.count)",
            "Content-Type": "application/octet-stream",
        ]
        guard response.head(200, headers, isLast: request.method == "HEAD") else { return false }
        return request.method == "HEAD" || response.write(body, isLast: true)
    }

    /// `count` pattern bytes from byte `offset` on, appended in 64 KiB runs (the pattern repeats every 256 bytes).
    static func patternBytes(_ count: Int, from offset: Int = 0) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        while bytes.count < count {
            let start = (offset + bytes.count) % 256
            bytes += pattern[start..<(start + min(chunkSize, count - bytes.count))]
        }
        return bytes
    }

    /// True when `request` is conditional and the resource it names is the one the client has (RFC 9110 §13.2.2):
    /// `If-None-Match` lists `etag` (weak comparison) or is `*`; without it, `If-Modified-Since` is no earlier than
    /// `lastModified`.
    static func isNotModified(_ request: HTTPRequest, etag: String?, lastModified: String?) -> Bool {
        if let list = request.headers["if-none-match"] {
            guard let etag else { return false }
            func opaque(_ tag: Substring) -> Substring {
                let trimmed = tag.drop(while: { $0 == " " })
                return trimmed.hasPrefix("W/") ? trimmed.dropFirst(2) : trimmed
            }
            return list.split(separator: ",").contains { opaque($0) == "*" || opaque($0) == opaque(Substring(etag)) }
        }
        guard let since = request.headers["if-modified-since"].flatMap(httpDate),
            let modified = lastModified.flatMap(httpDate)
        else { return false }
        return modified <= since
    }

    /// The date of an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), or nil.
    static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.date(from: text)
    }

    /// `/bytes/N`: a body with Content-Length, an ETag, and single-range support; `rate=` paces each connection,
    /// `seed=` serves other bytes, `ignoreRange=1` answers a range with the whole body, `ignoreIfRange=1` answers it
    /// whatever its `If-Range`, `rangeFault=` answers every
    /// range wrongly (see ``serveRangeFault(_:_:_:_:)``).
    func serveBytes(_ size: Int, _ request: HTTPRequest, _ response: Response) -> Bool {
        if let fault = request.query["rangeFault"], request.method == "GET", let header = request.headers["range"],
            let requested = Self.parseRange(header, size: size)
        {
            return serveRangeFault(fault, requested, size, request, response)
        }
        let etag = request.query["etag"].map { "\"\($0)\"" } ?? "\"bytes-\(size)\""
        var headers = ["Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"]
        if request.query["noetag"] != "1" { headers["ETag"] = etag }
        if let modified = request.query["lastModified"] { headers["Last-Modified"] = modified }
        if request.method == "HEAD", let encoding = request.query["headEncoding"] {
            headers["Content-Encoding"] = encoding
        }
        if let extra = request.query["header"], let colon = extra.firstIndex(of: ":") {
            // header=Name:Value adds one field (a digest the test computed, say).
            headers[String(extra[..<colon])] = String(extra[extra.index(after: colon)...])
        }
        if request.method == "GET" || request.method == "HEAD", request.query["ignoreConditional"] != "1",
            Self.isNotModified(request, etag: headers["ETag"], lastModified: headers["Last-Modified"])
        {
            // A conditional GET of what the client has: 304 with the validators, no body (RFC 9110 §15.4.5).
            var fields = ["ETag": headers["ETag"], "Last-Modified": headers["Last-Modified"]].compactMapValues { $0 }
            // lie304=N: a Content-Length that claims the whole body (a server that sends one is allowed to only if
            // it is the 200's; the body is never there).
            if let claimed = request.query["lie304"] { fields["Content-Length"] = claimed }
            return response.head(304, fields, isLast: true)
        }
        var status = 200
        var range = 0..<size
        let validator = headers["ETag"] ?? headers["Last-Modified"]
        // ignoreIfRange=1: a range is answered whatever its If-Range says (a server that changed its file and
        // ignores the validator).
        let ifRangeMatches =
            request.query["ignoreIfRange"] == "1" || (request.headers["if-range"].map { $0 == validator } ?? true)
        if let header = request.headers["range"], ifRangeMatches, request.query["ignoreRange"] != "1" {
            guard let requested = Self.parseRange(header, size: size), request.query["refuseRange"] != "1" else {
                return response.send(416, ["Content-Range": "bytes */\(size)"])
            }
            status = 206
            // badRange=1: a 206 for other bytes than asked (from 0).
            range = request.query["badRange"] == "1" ? 0..<requested.count : requested
            headers["Content-Range"] = "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(size)"
        }
        headers["Content-Length"] = "\(range.count)"
        let isEmpty = request.method == "HEAD" || range.isEmpty
        if request.method == "HEAD", request.query["headBody"] == "1" {
            // headBody=1: a HEAD answered with its body too, in a write of its own after the head (RFC 9110 §9.3.2
            // says it has none): a client reading the connection's next response reads these bytes first.
            guard response.head(status, headers, isLast: false) else { return false }
            usleep(2_000)
            return response.write(Self.patternBytes(range.count), isLast: true)
        }
        // Which GET is cut is decided as it arrives, before its head is sent: a client that shares the file once it has
        // that head could otherwise have its range GETs reach this check first, and the first one would be cut instead.
        let cuts =
            !isEmpty && (request.int("dropAt") != nil || request.int("dropAfter") != nil)
            && (request.query["cutAll"] == "1" || arrival(request) == (request.int("dropArrival") ?? 1))
        guard response.head(status, headers, isLast: isEmpty) else { return false }
        if cuts {
            // dropAt=P: the first GET with this key (the Nth with dropArrival=N, every GET with cutAll=1) closes the
            // connection after P% of the whole body (at once, for a range that starts past it); dropAfter=B: after B
            // bytes of its own body.
            let at = request.int("dropAfter") ?? (size * (request.int("dropAt") ?? 0) / 100 - range.lowerBound)
            let cut = max(0, min(range.count, at))
            _ = stream(cut, from: range.lowerBound, request, response, chunked: false, stalls: false)
            return false
        }
        return isEmpty || stream(range.count, from: range.lowerBound, request, response, chunked: false)
    }

    /// A range answered the way servers get ranges wrong, after the file's own head says
    /// `Accept-Ranges: bytes`: `whole` (a 200 with the whole body), `416`, `offset` (a 206 for other bytes: from 0),
    /// `noRange` (a 206 without Content-Range), `multipart` (`multipart/byteranges` holding the range), `length`
    /// (a Content-Range of another total), `etag` (another ETag), `gzip` (the range gzip-coded) or `short` (the
    /// range's head, then half its body and the connection closes).
    private func serveRangeFault(
        _ fault: String, _ range: Range<Int>, _ size: Int, _ request: HTTPRequest, _ response: Response
    ) -> Bool {
        let etag = "\"bytes-\(size)\""
        var headers = ["Accept-Ranges": "bytes", "ETag": etag, "Content-Type": "application/octet-stream"]
        let contentRange = "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(size)"
        var body = Self.patternBytes(range.count, from: range.lowerBound)
        let status = 206
        switch fault {
        case "whole":
            // Paced as the file's own body is (`rate=`).
            headers["Content-Length"] = "\(size)"
            guard response.head(200, headers) else { return false }
            return stream(size, from: 0, request, response, chunked: false)
        case "416":
            return response.send(416, ["Content-Range": "bytes */\(size)"])
        case "offset":
            body = Self.patternBytes(range.count)
            headers["Content-Range"] = "bytes 0-\(range.count - 1)/\(size)"
        case "noRange":
            break
        case "multipart":
            let boundary = "NQBOUNDARY"
            headers["Content-Type"] = "multipart/byteranges; boundary=\(boundary)"
            let partHead =
                "--\(boundary)\r\nContent-Type: application/octet-stream\r\nContent-Range: \(contentRange)\r\n\r\n"
            body = Array(partHead.utf8) + body + Array("\r\n--\(boundary)--\r\n".utf8)
        case "length":
            headers["Content-Range"] = "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(size + 1000)"
        case "etag":
            headers["Content-Range"] = contentRange
            headers["ETag"] = "\"other-\(size)\""
        case "gzip":
            headers["Content-Range"] = contentRange
            headers["Content-Encoding"] = "gzip"
            body = Gzip.encode(body)
        case "short":
            headers["Content-Range"] = contentRange
            headers["Content-Length"] = "\(body.count)"
            guard response.head(206, headers) else { return false }
            _ = response.write(Array(body.prefix(body.count / 2)), isLast: false)
            return false
        default:
            return response.send(400, body: "no such rangeFault\n")
        }
        headers["Content-Length"] = "\(body.count)"
        guard response.head(status, headers, isLast: body.isEmpty) else { return false }
        return body.isEmpty || response.write(body, isLast: true)
    }

    /// True for the first GET (HEAD excluded) carrying its `key`.
    private func isFirstArrival(_ request: HTTPRequest) -> Bool { arrival(request) == 1 }

    /// How many requests with `request`'s key (`key=`) asked this before it, plus one: 1 for the first.
    private func arrival(_ request: HTTPRequest) -> Int {
        let key = "first:" + (request.query["key"] ?? "")
        return state.with { state in
            state.flakyArrivals[key, default: 0] += 1
            return state.flakyArrivals[key, default: 0]
        }
    }

    /// Writes `count` pattern bytes starting at `offset`, throttled by `rate=` when given, and (`stalls`) stalled
    /// by `stallAt=`.
    private func stream(
        _ count: Int, from offset: Int, _ request: HTTPRequest, _ response: Response, chunked: Bool,
        stalls: Bool = true
    ) -> Bool {
        let rate = request.int("rate").flatMap { $0 > 0 ? $0 : nil }
        if var size = request.int("sndbuf").map(Int32.init) {
            setsockopt(response.fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        let piece = rate.map { max(1, min(Self.chunkSize, $0 / 20)) } ?? Self.chunkSize
        let began = Date()
        var sent = 0
        // stallAt=P&stall=MS: once P% of the body is sent, nothing more for MS milliseconds (an idle server), or
        // until the client hangs up (the request then ends, abandoned). A response cut by dropAt= never stalls.
        // stallByte=B: the same once byte B of the whole body is reached, whatever range this response sends (every
        // response that reaches it stalls there).
        let stallByte = request.int("stallByte").map { max(0, $0 - offset) }
        // stallOnce=1: only the first GET with this key= stalls (its later ones are served at once).
        let stalls = stalls && (request.query["stallOnce"] != "1" || isFirstArrival(request))
        let stallAt = stalls ? request.int("stallAt").map { count * max(0, min(100, $0)) / 100 } ?? stallByte : nil
        var hasStalled = false
        while sent < count {
            if let stallAt, !hasStalled, sent >= stallAt, request.query["hold"] == "1" {
                // hold=1: nothing more until the test calls releaseHeld() (or the client hangs up).
                hasStalled = true
                guard hold(response) else { return false }
            }
            if let stallAt, !hasStalled, sent >= stallAt, let stall = request.int("stall") {
                hasStalled = true
                guard response.pause(Double(max(0, stall)) / 1000) else { return false }
            }
            let length = min(piece, count - sent)
            // seed=K: other bytes of the same length (byte i is (i + K) % 256), as a mirror serving another file.
            let start = (offset + sent + max(0, request.int("seed") ?? 0)) % 256
            var bytes = Array(Self.pattern[start..<(start + length)])
            if chunked { bytes = Self.chunk(bytes) }
            guard response.write(bytes, isLast: !chunked && sent + length == count) else { return false }
            sent += length
            if let rate {
                let due = Double(sent) / Double(rate) - Date().timeIntervalSince(began)
                // The client hung up (a split file's range cut short): the request ends now.
                if due > 0, !response.pause(due) { return false }
            }
        }
        return chunked ? response.write(Self.lastChunk, isLast: true) : true
    }

    /// Holds `response` until ``releaseHeld()`` (true) or the client hangs up (false).
    private func hold(_ response: Response) -> Bool {
        state.with { $0.held += 1 }
        defer { state.with { $0.held -= 1 } }
        while !state.with({ $0.heldReleased }) {
            guard response.pause(0.005) else { return false }
        }
        return true
    }

    /// `bytes` framed as one chunk of a chunked body.
    static func chunk(_ bytes: some Collection<UInt8>) -> [UInt8] {
        Array((String(bytes.count, radix: 16) + "\r\n").utf8) + bytes + [13, 10]
    }

    /// The chunk that ends a chunked body (no trailer).
    static let lastChunk = Array("0\r\n\r\n".utf8)

    /// Parses `bytes=a-b`, `bytes=a-` or `bytes=-n`; nil when unsatisfiable or malformed.
    static func parseRange(_ header: String, size: Int) -> Range<Int>? {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let spec = header.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
        guard spec.count == 2 else { return nil }
        let first = Int(spec[0].trimmingCharacters(in: .whitespaces))
        let last = Int(spec[1].trimmingCharacters(in: .whitespaces))
        switch (first, last) {
        case (let a?, let b?) where a <= b && a < size: return a..<min(b + 1, size)
        case (let a?, nil) where a < size: return a..<size
        case (nil, let n?) where n > 0 && size > 0: return max(0, size - n)..<size
        default: return nil
        }
    }
}
