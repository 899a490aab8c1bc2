import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Assembles a response head from the header lines libcurl hands over one at a time (status line,
/// fields, blank line), keeping only the final head: an interim `1xx` head is dropped, and lines after
/// the final head (trailers of a chunked body) are ignored. Pure; tested alone.
struct ResponseHeadParser {
    /// A complete final head.
    struct Head: Equatable {
        var statusCode: Int
        /// As in the status line, e.g. `HTTP/1.1` or `HTTP/2`.
        var httpVersion: String
        /// Fields in order of first appearance; a repeated name's values are joined with ", " under the
        /// spelling of its first appearance.
        var fields: [(name: String, value: String)]

        static func == (lhs: Head, rhs: Head) -> Bool {
            lhs.statusCode == rhs.statusCode && lhs.httpVersion == rhs.httpVersion
                && lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
        }

        /// The value of the field `name`, compared case-insensitively.
        func value(_ name: String) -> String? {
            fields.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
        }

        /// The fields as `HTTPURLResponse` takes them.
        var dictionary: [String: String] {
            Dictionary(fields.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
        }
    }

    private var statusCode: Int?
    private var httpVersion = ""
    private var fields: [(name: String, value: String)] = []
    private(set) var isComplete = false

    /// Feeds one line (with or without its CRLF); returns the head when this line completes the final one.
    mutating func feed(_ rawLine: Substring) -> Head? {
        guard !isComplete else { return nil }
        var line = rawLine
        while let last = line.last, last.isNewline { line.removeLast() }
        if line.hasPrefix("HTTP/") {
            // A new status line: an interim head before it is forgotten.
            let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
            statusCode = parts.count >= 2 ? Int(parts[1]) : nil
            httpVersion = parts.first.map(String.init) ?? ""
            fields = []
            return nil
        }
        guard let code = statusCode else { return nil }
        if line.isEmpty {
            if (100..<200).contains(code) {
                statusCode = nil
                fields = []
                return nil
            }
            isComplete = true
            return Head(statusCode: code, httpVersion: httpVersion, fields: fields)
        }
        if let first = line.first, first == " " || first == "\t" {
            // Obsolete line folding: the line continues the previous field's value.
            if !fields.isEmpty {
                let more = line.trimmingCharacters(in: .whitespaces)
                fields[fields.count - 1].value += fields[fields.count - 1].value.isEmpty ? more : " " + more
            }
            return nil
        }
        guard let colon = line.firstIndex(of: ":") else { return nil }
        let name = String(line[..<colon]).trimmingCharacters(in: .whitespaces)
        let value = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty else { return nil }
        if let index = fields.firstIndex(where: { $0.name.caseInsensitiveCompare(name) == .orderedSame }) {
            fields[index].value += ", " + value
        } else {
            fields.append((name, value))
        }
        return nil
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
