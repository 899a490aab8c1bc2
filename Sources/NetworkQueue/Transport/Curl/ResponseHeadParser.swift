import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Assembles a response head from the header lines libcurl hands over one at a time (status line,
/// fields, blank line), keeping only the final head: an interim `1xx` head is dropped, and lines after
/// the final head (trailers of a chunked body) are ignored. Pure; tested alone.
///
/// Strict framing (RFC 9112): a line that does not end in CRLF, or holds a bare CR, a bare LF or a NUL,
/// and a final head whose `Content-Length` values differ or are not numbers, set ``violation``: the head
/// is never completed, so nothing of it (a cookie, a redirect) can take effect.
struct ResponseHeadParser {
    /// A complete final head.
    struct Head: Equatable {
        var statusCode: Int
        /// As in the status line, e.g. `HTTP/1.1` or `HTTP/2`.
        var httpVersion: String
        /// Fields in order of first appearance; a repeated name's values are joined with ", " under the
        /// spelling of its first appearance.
        var fields: [(name: String, value: String)]
        /// Every `Set-Cookie` field's value on its own (joining them would be ambiguous).
        var setCookies: [String] = []
        /// True when the connection must not be reused after this response: it carried both
        /// `Transfer-Encoding` and `Content-Length` (the length was dropped, RFC 9112 §6.3).
        var closesConnection = false
        /// The `Content-Length` kept, as a number (nil: none).
        var contentLength: Int64?

        static func == (lhs: Head, rhs: Head) -> Bool {
            lhs.statusCode == rhs.statusCode && lhs.httpVersion == rhs.httpVersion
                && lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
        }

        /// The value of the field `name`, compared case-insensitively (ASCII).
        func value(_ name: String) -> String? {
            fields.first { HeaderName.equal($0.name.utf8, name.utf8) }?.value
        }

        /// The fields as a ``ResponseHead`` keeps them.
        var responseFields: [ResponseHead.Field] { fields.map { ResponseHead.Field(name: $0.name, value: $0.value) } }
    }

    private var statusCode: Int?
    private var httpVersion = ""
    private var fields: [(name: String, value: String)] = []
    private var setCookies: [String] = []
    private(set) var isComplete = false
    /// Why the head breaks HTTP's framing rules; once set, no head is completed.
    private(set) var violation: String?

    /// Feeds one line (with its CRLF); returns the head when this line completes the final one.
    mutating func feed(_ rawLine: Substring) -> Head? { feed(bytes: Array(rawLine.utf8)) }

    /// Feeds one line as libcurl hands it over: bytes ending in CRLF (libcurl splits lines at LF).
    mutating func feed<Bytes: Collection<UInt8>>(bytes rawLine: Bytes) -> Head? {
        if let head = rawLine.withContiguousStorageIfAvailable({ feed(line: UnsafeRawBufferPointer($0)) }) { return head }
        return Array(rawLine).withUnsafeBytes { feed(line: $0) }
    }

    /// The work of ``feed(bytes:)``, on the bytes where they are (this runs for every header line of every
    /// response: it copies only the name and value it keeps).
    private mutating func feed(line rawLine: UnsafeRawBufferPointer) -> Head? {
        guard !isComplete, violation == nil else { return nil }
        let count = rawLine.count
        guard count >= 2, rawLine[count - 2] == 13, rawLine[count - 1] == 10 else {
            violation = "a header line not ended by CRLF"
            return nil
        }
        let line = rawLine[..<(count - 2)]
        if let bad = line.first(where: { $0 == 13 || $0 == 10 || $0 == 0 }) {
            violation = bad == 0 ? "a NUL in a header line" : "a bare CR or LF in a header line"
            return nil
        }
        if line.starts(with: Self.httpPrefix) {
            // A new status line: an interim head before it is forgotten. "HTTP/1.1 200 OK": the version up to
            // the first space, then the code (three digits) after any spaces.
            let versionEnd = line.firstIndex(of: 32) ?? line.endIndex
            httpVersion = String(decoding: line[..<versionEnd], as: UTF8.self)
            var index = versionEnd
            while index < line.endIndex, line[index] == 32 { index += 1 }
            var code = 0
            var digits = 0
            while index < line.endIndex, (48...57).contains(line[index]), digits < 4 {
                code = code * 10 + Int(line[index] - 48)
                digits += 1
                index += 1
            }
            let isEnd = index == line.endIndex || line[index] == 32
            statusCode = digits > 0 && digits < 4 && isEnd ? code : nil
            fields = []
            fields.reserveCapacity(12)
            setCookies = []
            return nil
        }
        guard let code = statusCode else { return nil }
        if line.isEmpty {
            if (100..<200).contains(code) {
                statusCode = nil
                fields = []
                setCookies = []
                return nil
            }
            return completeHead(code)
        }
        if line[line.startIndex] == 32 || line[line.startIndex] == 9 {
            // Obsolete line folding: the line continues the previous field's value.
            let more = String(decoding: Self.trimmed(line), as: UTF8.self)
            if !fields.isEmpty, !more.isEmpty {
                fields[fields.count - 1].value += fields[fields.count - 1].value.isEmpty ? more : " " + more
            }
            return nil
        }
        guard let colon = line.firstIndex(of: 58) else { return nil }
        let nameBytes = Self.trimmed(line[..<colon])
        guard !nameBytes.isEmpty else { return nil }
        let value = String(decoding: Self.trimmed(line[(colon + 1)...]), as: UTF8.self)
        if HeaderName.equal(nameBytes, Self.setCookieKey) { setCookies.append(value) }
        if let index = fields.firstIndex(where: { HeaderName.equal($0.name.utf8, nameBytes) }) {
            fields[index].value += ", " + value
        } else {
            fields.append((String(decoding: nameBytes, as: UTF8.self), value))
        }
        return nil
    }

    /// Ends the final head, checking its framing: one length however often it is repeated, and none
    /// beside a transfer coding.
    private mutating func completeHead(_ code: Int) -> Head? {
        var head = Head(statusCode: code, httpVersion: httpVersion, fields: fields, setCookies: setCookies)
        if let index = fields.firstIndex(where: { HeaderName.equal($0.name.utf8, Self.contentLengthKey) }) {
            if fields.contains(where: { HeaderName.equal($0.name.utf8, Self.transferEncodingKey) }) {
                head.fields.remove(at: index)
                head.closesConnection = true
            } else {
                switch FramingRules.contentLength(fields[index].value) {
                case .valid(let length):
                    head.contentLength = length
                    // Repeated or padded values (" 7 , 7 ") become the one number.
                    if !fields[index].value.utf8.allSatisfy({ (48...57).contains($0) }) || fields[index].value.utf8.first == 48 {
                        head.fields[index].value = String(length)
                    }
                case .invalid(let reason):
                    violation = reason
                    return nil
                }
            }
        }
        isComplete = true
        return head
    }

    private static let httpPrefix = Array("HTTP/".utf8)
    private static let setCookieKey = Array("set-cookie".utf8)
    private static let contentLengthKey = Array("content-length".utf8)
    private static let transferEncodingKey = Array("transfer-encoding".utf8)

    /// `bytes` without leading and trailing spaces and tabs.
    private static func trimmed(_ bytes: Slice<UnsafeRawBufferPointer>) -> Slice<UnsafeRawBufferPointer> {
        var slice = bytes
        while let first = slice.first, first == 32 || first == 9 { slice.removeFirst() }
        while let last = slice.last, last == 32 || last == 9 { slice.removeLast() }
        return slice
    }
}

/// How a transport that follows redirects itself builds the next request, as browsers do: 303 turns any
/// method but HEAD into GET, 301 and 302 turn POST into GET (dropping the body and its headers), 307 and
/// 308 keep method and body. The result still goes through the ``RedirectPolicy``. Pure; tested alone.
enum RedirectRules {
    /// The statuses followed.
    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// The next request after a `status` response with `location` to `request` (sent to `url`), or nil
    /// when the response is not a redirect to follow (another status, or no usable `Location`).
    static func next(after status: Int, location: String?, request: URLRequest, url: URL) -> URLRequest? {
        guard redirectStatuses.contains(status), let location, !location.isEmpty,
            let target = URL(string: location, relativeTo: url)?.absoluteURL
        else { return nil }
        var next = request
        next.url = target
        let method = (request.httpMethod ?? "GET").uppercased()
        let becomesGet = (status == 303 && method != "HEAD") || ((status == 301 || status == 302) && method == "POST")
        if becomesGet {
            next.httpMethod = "GET"
            next.httpBody = nil
            next.httpBodyStream = nil
            for name in ["Content-Type", "Content-Length"] { next.setValue(nil, forHTTPHeaderField: name) }
        }
        return next
    }
}
