import Foundation

/// An in-memory cookie store with RFC 6265's rules: what `Set-Cookie` fields store, and which cookies a
/// request carries. Pure: time is passed in; the transport that owns it decides when a response counts
/// (only a head that passed every framing check stores anything).
///
/// Bounded against hostile servers: a cookie over ``maximumCookieSize`` bytes is ignored, a domain keeps
/// at most ``maximumCookiesPerDomain`` (the oldest go first) and the jar ``maximumCookies`` (a full jar drops
/// the oldest cookie of the domain that holds the most, so one site's many cookies cannot push out another
/// site's session), and a request carries at most ``maximumHeaderSize`` bytes of cookies.
struct CookieJar {
    struct Cookie: Equatable {
        var name: String
        var value: String
        /// Lowercased, without a leading dot.
        var domain: String
        /// True when the cookie goes back to exactly its host (no `Domain` attribute).
        var isHostOnly: Bool
        var path: String
        var isSecure: Bool
        /// nil: a session cookie, kept for the jar's life.
        var expires: Date?
        /// Creation order, which also orders cookies of equal path length in a `Cookie` header.
        var serial: UInt64
        /// Set by the server with `HttpOnly` (or read from a cookie file's `#HttpOnly_` line): kept to be written
        /// back; it changes nothing here (no script reads this jar).
        var isHTTPOnly = false
    }

    static let maximumCookieSize = 4096
    static let maximumCookiesPerDomain = 50
    static let maximumCookies = 3000
    /// The most bytes of one `Cookie` header: 8 KiB, what common servers accept in one field.
    static let maximumHeaderSize = 8 << 10

    private(set) var cookies: [Cookie] = []
    private var nextSerial: UInt64 = 0

    /// Stores what the `Set-Cookie` values of a response to `url` say, at `now`.
    mutating func store(_ setCookies: [String], from url: URL, now: Date) {
        guard let host = url.host?.lowercased(), !host.isEmpty else { return }
        let path = Self.normalizedPath(url)
        for line in setCookies { store(line, host: host, requestPath: path, now: now) }
    }

    /// The `Cookie` header value for a request to `url` at `now`, or nil when no cookie matches.
    mutating func header(for url: URL, now: Date) -> String? {
        guard !cookies.isEmpty else { return nil }
        cookies.removeAll { $0.expires.map { $0 <= now } ?? false }
        guard let host = url.host?.lowercased(), !host.isEmpty else { return nil }
        let path = Self.normalizedPath(url)
        let isSecure = url.scheme?.lowercased() == "https"
        let matching = cookies.filter { cookie in
            (cookie.isHostOnly ? host == cookie.domain : Self.domainMatches(host, cookie.domain))
                && Self.pathMatches(path, cookie.path) && (isSecure || !cookie.isSecure)
        }
        guard !matching.isEmpty else { return nil }
        let ordered = matching.sorted { ($0.path.utf8.count, $1.serial) > ($1.path.utf8.count, $0.serial) }
        // In that order (most specific path, then oldest) until the header's bound.
        var header = ""
        for cookie in ordered {
            let pair = cookie.name.isEmpty ? cookie.value : "\(cookie.name)=\(cookie.value)"
            let added = (header.isEmpty ? 0 : 2) + pair.utf8.count
            if header.utf8.count + added > Self.maximumHeaderSize { continue }
            header += header.isEmpty ? pair : "; " + pair
        }
        return header.isEmpty ? nil : header
    }

    /// The path of `url` with its dot segments removed (RFC 3986 §5.2.4), so that `/admin/../x` is `/x`.
    static func normalizedPath(_ url: URL) -> String {
        let path = url.path
        guard !path.isEmpty else { return "/" }
        guard path.contains("/.") else { return path }
        var segments: [Substring] = []
        for segment in path.split(separator: "/", omittingEmptySubsequences: false).dropFirst() {
            switch segment {
            case ".": continue
            case "..": _ = segments.popLast()
            default: segments.append(segment)
            }
        }
        let last = path.split(separator: "/", omittingEmptySubsequences: false).last
        if last == "." || last == ".." { segments.append("") }
        return "/" + segments.joined(separator: "/")
    }

    /// Splits `Set-Cookie` values that a parser joined with ", " (Foundation does): a comma starts a new
    /// cookie only when a `name=` follows it before the next `;`, so an `Expires` date's comma stays.
    static func splitJoined(_ value: String) -> [String] {
        var cookies: [String] = []
        var current = Substring()
        var rest = value[...]
        while let comma = rest.firstIndex(of: ",") {
            let following = rest[rest.index(after: comma)...]
            let nextPair = following.prefix { $0 != ";" && $0 != "," }
            current += rest[..<comma]
            if nextPair.contains("=") {
                cookies.append(String(current))
                current = ""
            } else {
                current += ","
            }
            rest = following
        }
        current += rest
        cookies.append(String(current))
        return cookies.map { String($0.drop { $0 == " " }) }.filter { !$0.isEmpty }
    }

    // MARK: Storing (RFC 6265 §5.2, §5.3)

    private mutating func store(_ line: String, host: String, requestPath: String, now: Date) {
        guard line.utf8.count <= Self.maximumCookieSize else { return }
        var parts = line.split(separator: ";", omittingEmptySubsequences: false)[...]
        guard let pair = parts.popFirst() else { return }
        let name: String
        let value: String
        if let equals = pair.firstIndex(of: "=") {
            name = Self.trimmed(pair[..<equals])
            value = Self.trimmed(pair[pair.index(after: equals)...])
        } else {
            return
        }
        guard !(name.isEmpty && value.isEmpty), Self.isAllowed(name), Self.isAllowed(value) else { return }
        var domain: String?
        var path: String?
        var isSecure = false
        var isHTTPOnly = false
        var expires: Date?
        var maxAge: Int64?
        for attribute in parts {
            let key: String
            let argument: String
            if let equals = attribute.firstIndex(of: "=") {
                key = Self.trimmed(attribute[..<equals]).lowercased()
                argument = Self.trimmed(attribute[attribute.index(after: equals)...])
            } else {
                key = Self.trimmed(attribute).lowercased()
                argument = ""
            }
            switch key {
            case "expires": if let date = HTTPDate.parse(argument) { expires = date }
            case "max-age":
                // RFC 6265 §5.2.2: an optional "-", then digits only; anything else is ignored.
                let digits = argument.hasPrefix("-") ? argument.dropFirst() : argument[...]
                if !digits.isEmpty, digits.allSatisfy(\.isASCIIDigit) {
                    maxAge = Int64(argument) ?? (argument.hasPrefix("-") ? Int64.min : Int64.max)
                }
            case "domain":
                var text = argument.lowercased()
                if text.hasPrefix(".") { text.removeFirst() }
                if !text.isEmpty { domain = text }
            case "path": path = argument.hasPrefix("/") ? argument : nil
            case "secure": isSecure = true
            case "httponly": isHTTPOnly = true
            default: break
            }
        }
        if let maxAge {
            expires = maxAge <= 0 ? .distantPast : now.addingTimeInterval(TimeInterval(min(maxAge, 1 << 40)))
        }
        let isHostOnly: Bool
        if let domain {
            // A cookie for another site, a whole top-level domain (no public-suffix list: a domain needs a
            // dot of its own) or an IP range is refused.
            guard Self.domainMatches(host, domain), domain == host || (!Self.isAddress(host) && domain.contains("."))
            else { return }
            isHostOnly = false
        } else {
            isHostOnly = true
        }
        var cookie = Cookie(
            name: name, value: value, domain: domain ?? host, isHostOnly: isHostOnly,
            path: path ?? Self.defaultPath(requestPath), isSecure: isSecure, expires: expires, serial: nextSerial,
            isHTTPOnly: isHTTPOnly)
        nextSerial += 1
        if let index = cookies.firstIndex(where: {
            $0.name == name && $0.domain == cookie.domain && $0.path == cookie.path
        }) {
            cookie.serial = cookies[index].serial
            cookies.remove(at: index)
        }
        if let expires, expires <= now { return }
        cookies.append(cookie)
        evict(domain: cookie.domain)
    }

    // MARK: Cookie files (curl's and wget's Netscape format)

    /// Adds the cookies of a Netscape cookie file's `text` (curl's `-b`/`-c`, wget's `--load-cookies`): a line per
    /// cookie, seven TAB-separated fields — domain, whether subdomains match (`TRUE`/`FALSE`), path, secure
    /// (`TRUE`/`FALSE`), expiry (Unix seconds; 0: a session cookie), name, value — and `#HttpOnly_` before the domain
    /// of an HttpOnly cookie. Other `#` lines and blank lines are comments. Returns the cookies added and the lines
    /// skipped: malformed ones, expired ones, and those the jar's rules refuse (a cookie over
    /// ``maximumCookieSize``, control characters, a domain cookie for a whole top-level domain or an address). A
    /// cookie already in the jar (same name, domain and path) is replaced.
    @discardableResult
    mutating func load(netscape text: String, now: Date) -> (added: Int, skipped: Int) {
        let read = loadNamingSkipped(netscape: text, now: now)
        return (read.added, read.skipped)
    }

    /// ``load(netscape:now:)``, also saying the number of the first line skipped (1 for the first line; nil when none
    /// was), so that a user can find it.
    mutating func loadNamingSkipped(netscape text: String, now: Date) -> (
        added: Int, skipped: Int, firstSkippedLine: Int?
    ) {
        var text = text
        text.makeContiguousUTF8()
        return text.utf8.withContiguousStorageIfAvailable { load(netscape: $0, now: now) } ?? (0, 0, nil)
    }

    /// ``load(netscape:now:)`` over the file's bytes: lines found with `memchr`, fields checked where they lie, and
    /// strings made only for the fields of a line that is a cookie (a million lines in about a second).
    private mutating func load(netscape bytes: UnsafeBufferPointer<UInt8>, now: Date) -> (
        added: Int, skipped: Int, firstSkippedLine: Int?
    ) {
        var added = 0
        var skipped = 0
        var firstSkippedLine: Int?
        var number = 0
        // Linear in the file's lines: each cookie is placed by its key in a table, not looked for in the jar, and the
        // jar's bounds are applied once at the end (a file of a million lines loads in seconds, not hours).
        var merged = Merge(cookies)
        let seconds = now.timeIntervalSince1970
        let httpOnly = Array("#HttpOnly_".utf8)
        var start = 0
        while start < bytes.count {
            let end =
                memchr(bytes.baseAddress! + start, 0x0A, bytes.count - start).map {
                    UnsafeRawPointer($0) - UnsafeRawPointer(bytes.baseAddress!)
                } ?? bytes.count
            var line = start..<end
            start = end + 1
            number += 1
            if line.count > 0, bytes[line.upperBound - 1] == 0x0D { line = line.lowerBound..<(line.upperBound - 1) }
            var isHTTPOnly = false
            if line.count >= httpOnly.count, bytes[line.prefix(httpOnly.count)].elementsEqual(httpOnly) {
                line = (line.lowerBound + httpOnly.count)..<line.upperBound
                isHTTPOnly = true
            } else if line.isEmpty || bytes[line.lowerBound] == 0x23
                || bytes[line].allSatisfy({ $0 == 0x20 || $0 == 0x09 })
            {
                continue
            }
            guard var cookie = Self.cookie(fromFileLine: bytes, line, now: seconds) else {
                skipped += 1
                if firstSkippedLine == nil { firstSkippedLine = number }
                continue
            }
            cookie.isHTTPOnly = isHTTPOnly
            cookie.serial = nextSerial
            nextSerial += 1
            merged.add(cookie)
            added += 1
        }
        cookies = merged.bounded(perDomain: Self.maximumCookiesPerDomain, total: Self.maximumCookies)
        return (added, skipped, firstSkippedLine)
    }

    /// Cookies merged by key (name, domain and path) in the jar's order: a cookie that replaces another keeps the
    /// other's serial and goes last, as a stored one does.
    private struct Merge {
        struct Key: Hashable {
            let name: String
            let domain: String
            let path: String
        }
        /// Each cookie with its place in the order (the higher, the newer); a replaced one is dropped.
        private var entries: [(cookie: Cookie, order: Int)?] = []
        private var places: [Key: Int] = [:]

        init(_ cookies: [Cookie]) { for cookie in cookies { add(cookie) } }

        mutating func add(_ cookie: Cookie) {
            var cookie = cookie
            let key = Key(name: cookie.name, domain: cookie.domain, path: cookie.path)
            if let old = places[key], let replaced = entries[old] {
                cookie.serial = replaced.cookie.serial
                entries[old] = nil
            }
            places[key] = entries.count
            entries.append((cookie, entries.count))
        }

        /// The cookies in order, at most `perDomain` of each domain (its newest) and `total` in all: the domains
        /// that hold the most give up their oldest first, until the jar fits (what storing them one by one keeps).
        func bounded(perDomain: Int, total: Int) -> [Cookie] {
            var byDomain: [String: [Int]] = [:]
            for case let entry? in entries { byDomain[entry.cookie.domain, default: []].append(entry.order) }
            var counts = byDomain.mapValues { min($0.count, perDomain) }
            func kept(atMost level: Int) -> Int { counts.values.reduce(0) { $0 + min($1, level) } }
            if kept(atMost: perDomain) > total {
                // The highest level every domain can be cut to with the jar fitting; the room left goes one cookie
                // each to domains above it (in their names' order, so that a load is the same every time).
                var (low, high) = (0, perDomain)
                while low < high {
                    let middle = (low + high + 1) / 2
                    if kept(atMost: middle) <= total { low = middle } else { high = middle - 1 }
                }
                let room = total - kept(atMost: low)
                // The `room` first names among the domains above the level keep one more: found by selection, not
                // by sorting every name (a million domains of one cookie each keep 3,000).
                var above = counts.compactMap { $0.value > low ? $0.key : nil }
                let first = Self.smallest(room, of: &above)
                for domain in above { counts[domain] = low }
                for domain in first { counts[domain] = low + 1 }
            }
            var keep = Set<Int>()
            for (domain, orders) in byDomain { keep.formUnion(orders.suffix(counts[domain] ?? 0)) }
            return entries.compactMap { entry in entry.flatMap { keep.contains($0.order) ? $0.cookie : nil } }
        }
        /// The `count` smallest of `names` (all of them when there are no more), in no order: a quickselect that moves
        /// them to the front of `names`, O(names) comparisons on average.
        static func smallest(_ count: Int, of names: inout [String]) -> ArraySlice<String> {
            guard count < names.count else { return names[...] }
            guard count > 0 else { return [] }
            var (low, high) = (0, names.count - 1)
            // Deterministic pivots (the middle): the same file keeps the same cookies every time.
            while low < high {
                let pivot = names[(low + high) / 2]
                var (left, right) = (low, high)
                while left <= right {
                    while names[left] < pivot { left += 1 }
                    while pivot < names[right] { right -= 1 }
                    if left <= right {
                        names.swapAt(left, right)
                        left += 1
                        right -= 1
                    }
                }
                if count - 1 <= right {
                    high = right
                } else if count - 1 >= left {
                    low = left
                } else {
                    break
                }
            }
            return names[..<count]
        }
    }

    /// The cookie of the cookie-file line at `line` of `bytes` (without `#HttpOnly_`), or nil when the line is
    /// malformed, expired at `now` (seconds since 1970) or refused by the jar's rules. Six or seven TAB-separated
    /// fields: domain, whether subdomains match (`TRUE`/`FALSE`, any case), path, secure, expiry (0: a session
    /// cookie), name and value.
    private static func cookie(fromFileLine bytes: UnsafeBufferPointer<UInt8>, _ line: Range<Int>, now: Double)
        -> Cookie?
    {
        guard line.count <= maximumCookieSize else { return nil }
        var fields: [Range<Int>] = []
        fields.reserveCapacity(7)
        var fieldStart = line.lowerBound
        for index in line where bytes[index] == 0x09 {
            fields.append(fieldStart..<index)
            fieldStart = index + 1
            guard fields.count < 7 else { return nil }
        }
        fields.append(fieldStart..<line.upperBound)
        guard fields.count == 7 || fields.count == 6 else { return nil }
        guard let includesSubdomains = flag(bytes, fields[1]), let isSecure = flag(bytes, fields[3]),
            let expiry = ASCIIDecimal.value(of: bytes[fields[4]], signed: false)
        else { return nil }
        var domain = fields[0]
        if domain.count > 0, bytes[domain.lowerBound] == 0x2E { domain = (domain.lowerBound + 1)..<domain.upperBound }
        let path = fields[2]
        let name = fields[5]
        let value = fields.count == 7 ? fields[6] : line.upperBound..<line.upperBound
        guard !domain.isEmpty, bytes[domain].allSatisfy({ $0 > 32 && $0 < 127 && $0 != 0x2F }),
            path.count > 0, bytes[path.lowerBound] == 0x2F, !(name.isEmpty && value.isEmpty),
            isAllowed(bytes[name]), isAllowed(bytes[value]), isAllowed(bytes[path])
        else { return nil }
        let domainText = String(decoding: bytes[domain].lazy.map(Self.lowercased), as: UTF8.self)
        // As a server's Domain attribute: never a whole top-level domain or an address range.
        if includesSubdomains, !bytes[domain].contains(0x2E) || isAddress(domainText) { return nil }
        let expires = expiry == 0 ? nil : Date(timeIntervalSince1970: TimeInterval(min(expiry, 1 << 40)))
        if expiry != 0, Double(min(expiry, 1 << 40)) <= now { return nil }
        return Cookie(
            name: String(decoding: bytes[name], as: UTF8.self), value: String(decoding: bytes[value], as: UTF8.self),
            domain: domainText, isHostOnly: !includesSubdomains, path: String(decoding: bytes[path], as: UTF8.self),
            isSecure: isSecure, expires: expires, serial: 0)
    }

    /// `TRUE` or `FALSE` in any case, as a cookie file's flag; nil for anything else.
    private static func flag(_ bytes: UnsafeBufferPointer<UInt8>, _ field: Range<Int>) -> Bool? {
        let word = bytes[field].lazy.map { $0 & 0xDF }
        if word.elementsEqual("TRUE".utf8) { return true }
        if word.elementsEqual("FALSE".utf8) { return false }
        return nil
    }

    /// An ASCII letter in lowercase; any other byte as it is.
    private static func lowercased(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte }

    /// Control characters (other than tab) never enter a stored cookie.
    private static func isAllowed(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        bytes.allSatisfy { $0 == 9 || ($0 >= 32 && $0 != 127) }
    }

    /// The jar as a Netscape cookie file (see ``load(netscape:now:)``), the cookies not expired at `now`, session
    /// cookies with an expiry of 0 (as curl writes them), oldest first.
    func netscapeText(now: Date) -> String {
        var text = "# Netscape HTTP Cookie File\n# Written by NetworkQueue. Holds credentials: keep it private.\n\n"
        for cookie in cookies.sorted(by: { $0.serial < $1.serial }) where cookie.expires.map({ $0 > now }) ?? true {
            // A TAB in a field would break the line's fields: such a cookie is not written.
            if cookie.name.contains("\t") || cookie.value.contains("\t") || cookie.path.contains("\t") { continue }
            let domain = (cookie.isHTTPOnly ? "#HttpOnly_" : "") + (cookie.isHostOnly ? "" : ".") + cookie.domain
            let expiry = cookie.expires.map { String(Int64($0.timeIntervalSince1970.rounded(.up))) } ?? "0"
            let fields = [
                domain, cookie.isHostOnly ? "FALSE" : "TRUE", cookie.path, cookie.isSecure ? "TRUE" : "FALSE", expiry,
                cookie.name, cookie.value,
            ]
            text += fields.joined(separator: "\t") + "\n"
        }
        return text
    }

    /// Keeps the domain's and the jar's counts within their bounds, dropping the oldest first: of the
    /// domain, then, when the jar is full, of whichever domain holds the most cookies.
    private mutating func evict(domain: String) {
        var count = 0
        var oldest: Int?
        for index in cookies.indices where cookies[index].domain == domain {
            if oldest == nil { oldest = index }
            count += 1
        }
        if count > Self.maximumCookiesPerDomain, let oldest { cookies.remove(at: oldest) }
        guard cookies.count > Self.maximumCookies else { return }
        var counts: [String: Int] = [:]
        for cookie in cookies { counts[cookie.domain, default: 0] += 1 }
        guard let largest = counts.max(by: { $0.value < $1.value })?.key,
            let index = cookies.firstIndex(where: { $0.domain == largest })
        else { return }
        cookies.remove(at: index)
    }

    // MARK: Matching

    static func domainMatches(_ host: String, _ domain: String) -> Bool {
        host == domain || (host.hasSuffix("." + domain) && !isAddress(host))
    }

    static func pathMatches(_ path: String, _ cookiePath: String) -> Bool {
        guard path.hasPrefix(cookiePath) else { return false }
        return path.utf8.count == cookiePath.utf8.count || cookiePath.hasSuffix("/")
            || path.utf8.dropFirst(cookiePath.utf8.count).first == UInt8(ascii: "/")
    }

    /// The directory of the request path (RFC 6265 §5.1.4).
    static func defaultPath(_ path: String) -> String {
        guard path.hasPrefix("/"), let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }

    private static func isAddress(_ host: String) -> Bool {
        host.contains(":") || (!host.isEmpty && host.allSatisfy { $0 == "." || $0.isASCIIDigit })
    }

    /// Control characters (other than tab) never enter a stored cookie.
    private static func isAllowed(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 == 9 || ($0 >= 32 && $0 != 127) }
    }

    /// `text` without leading and trailing spaces and tabs.
    private static func trimmed(_ text: Substring) -> String { String(HeaderName.trimmed(text)) }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
