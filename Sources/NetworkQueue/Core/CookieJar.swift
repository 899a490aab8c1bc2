import Foundation

/// An in-memory cookie store with RFC 6265's rules: what `Set-Cookie` fields store, and which cookies a
/// request carries. Pure: time is passed in; the transport that owns it decides when a response counts
/// (only a head that passed every framing check stores anything).
///
/// Bounded against hostile servers: a cookie over ``maximumCookieSize`` bytes is ignored, a domain keeps
/// at most ``maximumCookiesPerDomain`` (the oldest go first) and the jar ``maximumCookies``.
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
    }

    static let maximumCookieSize = 4096
    static let maximumCookiesPerDomain = 50
    static let maximumCookies = 3000

    private(set) var cookies: [Cookie] = []
    private var nextSerial: UInt64 = 0

    /// Stores what the `Set-Cookie` values of a response to `url` say, at `now`.
    mutating func store(_ setCookies: [String], from url: URL, now: Date) {
        guard let host = url.host?.lowercased(), !host.isEmpty else { return }
        for line in setCookies { store(line, host: host, requestPath: url.path, now: now) }
    }

    /// The `Cookie` header value for a request to `url` at `now`, or nil when no cookie matches.
    mutating func header(for url: URL, now: Date) -> String? {
        guard !cookies.isEmpty else { return nil }
        cookies.removeAll { $0.expires.map { $0 <= now } ?? false }
        guard let host = url.host?.lowercased(), !host.isEmpty else { return nil }
        let path = url.path.isEmpty ? "/" : url.path
        let isSecure = url.scheme?.lowercased() == "https"
        let matching = cookies.filter { cookie in
            (cookie.isHostOnly ? host == cookie.domain : Self.domainMatches(host, cookie.domain))
                && Self.pathMatches(path, cookie.path) && (isSecure || !cookie.isSecure)
        }
        guard !matching.isEmpty else { return nil }
        let ordered = matching.sorted { ($0.path.utf8.count, $1.serial) > ($1.path.utf8.count, $0.serial) }
        return ordered.map { $0.name.isEmpty ? $0.value : "\($0.name)=\($0.value)" }.joined(separator: "; ")
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
                let isNumber = !argument.isEmpty && argument.drop { $0 == "-" }.allSatisfy(\.isASCIIDigit)
                if isNumber { maxAge = Int64(argument) ?? (argument.hasPrefix("-") ? Int64.min : Int64.max) }
            case "domain":
                var text = argument.lowercased()
                if text.hasPrefix(".") { text.removeFirst() }
                if !text.isEmpty { domain = text }
            case "path": path = argument.hasPrefix("/") ? argument : nil
            case "secure": isSecure = true
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
            path: path ?? Self.defaultPath(requestPath), isSecure: isSecure, expires: expires, serial: nextSerial)
        nextSerial += 1
        if let index = cookies.firstIndex(where: { $0.name == name && $0.domain == cookie.domain && $0.path == cookie.path }) {
            cookie.serial = cookies[index].serial
            cookies.remove(at: index)
        }
        if let expires, expires <= now { return }
        cookies.append(cookie)
        evict(domain: cookie.domain)
    }

    /// Keeps the domain's and the jar's counts within their bounds, dropping the oldest first.
    private mutating func evict(domain: String) {
        if let oldest = cookies.indices.filter({ cookies[$0].domain == domain }).dropLast(Self.maximumCookiesPerDomain).first {
            cookies.remove(at: oldest)
        }
        if cookies.count > Self.maximumCookies { cookies.removeFirst(cookies.count - Self.maximumCookies) }
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

    private static func trimmed(_ text: Substring) -> String {
        String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
