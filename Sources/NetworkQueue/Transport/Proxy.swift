import Foundation

/// A proxy server set in code, for ``CurlTransport/Options/proxy``.
///
/// `http` URLs are forwarded through an HTTP proxy (the request in absolute form) and `https` URLs go through
/// a `CONNECT` tunnel, so the proxy never sees their contents or headers; through SOCKS5 every URL goes through
/// a tunnel. Credentials go to the proxy alone and appear nowhere else: not in ``description``, a log line,
/// metrics or an error's text.
public struct Proxy: Sendable, Hashable, CustomStringConvertible {
    /// How the transport talks to the proxy.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// An HTTP proxy over plain TCP. Its default port is 1080, as curl's.
        case http
        /// An HTTP proxy reached over TLS, verified as servers are (the system's CA store plus
        /// ``CurlTransport/Options/additionalTrustedCertificates``). Default port 443.
        case https
        /// SOCKS5 with names resolved by this machine. Default port 1080.
        case socks5
        /// SOCKS5 with names resolved by the proxy (curl's `socks5h`): this machine's resolver never sees the
        /// servers' names. Default port 1080.
        case socks5h

        /// The port used when none is given.
        public var defaultPort: Int { self == .https ? 443 : 1080 }
    }

    /// A user name and password for the proxy: HTTP Basic for an HTTP proxy, RFC 1929 for SOCKS5.
    public struct Credentials: Sendable, Hashable {
        /// The user name.
        public var user: String
        /// The password.
        public var password: String

        /// Creates credentials.
        public init(user: String, password: String) {
            self.user = user
            self.password = password
        }
    }

    /// Why a proxy cannot be used (``Proxy/init(parsing:bypass:)``, ``CurlTransport/LoadError/invalidProxy(_:)``).
    public struct Problem: Error, Sendable, Hashable, CustomStringConvertible {
        /// What is wrong, without the proxy's credentials.
        public let description: String
    }

    /// How the transport talks to the proxy.
    public var kind: Kind
    /// The proxy's host name or IP address (an IPv6 address without brackets).
    public var host: String
    /// The proxy's port, 1–65535.
    public var port: Int
    /// What the proxy asks for; default nil (none).
    public var credentials: Credentials?
    /// Hosts reached directly, not through the proxy; default empty. An entry is a host name (it matches that
    /// host and its subdomains), an IP address, or `*` (every host), as curl's `--noproxy` takes them.
    public var bypass: [String]

    /// Creates a proxy setting; ``validate()`` (called when a transport is created) says whether it is usable.
    public init(_ kind: Kind, host: String, port: Int? = nil, credentials: Credentials? = nil, bypass: [String] = []) {
        self.kind = kind
        self.host = host
        self.port = port ?? kind.defaultPort
        self.credentials = credentials
        self.bypass = bypass
    }

    /// Reads a proxy written as curl takes one: `[scheme://][user[:password]@]host[:port]`, the scheme one of
    /// ``Kind``'s (default `http`), credentials percent-decoded, an IPv6 host in brackets.
    /// - Throws: ``Problem`` saying what is wrong, without the credentials.
    public init(parsing text: String, bypass: [String] = []) throws(Problem) {
        let schemeEnd = text.range(of: "://")
        let schemeText = schemeEnd.map { String(text[..<$0.lowerBound]).lowercased() } ?? "http"
        guard let kind = Kind(rawValue: schemeText) else {
            throw Problem(description: "unsupported proxy scheme '\(schemeText)' (http, https, socks5, socks5h)")
        }
        let rest = schemeEnd.map { text[$0.upperBound...] } ?? text[...]
        let authority = rest.hasSuffix("/") ? rest.dropLast() : rest
        guard !authority.contains(where: { "/?#".contains($0) }) else {
            throw Problem(description: "a proxy is a host and port, without a path: \(ProxyRoutes.redacted(text))")
        }
        var credentials: Credentials?
        var hostPort = authority
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            hostPort = authority[authority.index(after: at)...]
            let colon = userInfo.firstIndex(of: ":")
            let user = String(userInfo[..<(colon ?? userInfo.endIndex)])
            let password = colon.map { String(userInfo[userInfo.index(after: $0)...]) } ?? ""
            guard let user = user.removingPercentEncoding, let password = password.removingPercentEncoding else {
                throw Problem(description: "the proxy's credentials are not valid percent-encoding")
            }
            credentials = Credentials(user: user, password: password)
        }
        var host = String(hostPort)
        var port: Int?
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else {
                throw Problem(description: "an IPv6 proxy host lacks its ']': \(ProxyRoutes.redacted(text))")
            }
            let after = host[host.index(after: close)...]
            if after.hasPrefix(":") {
                port = try Self.port(String(after.dropFirst()), in: text)
            } else if !after.isEmpty {
                throw Problem(description: "not a proxy: \(ProxyRoutes.redacted(text))")
            }
            host = String(host[host.index(after: host.startIndex)..<close])
        } else if let colon = host.lastIndex(of: ":") {
            port = try Self.port(String(host[host.index(after: colon)...]), in: text)
            host = String(host[..<colon])
        }
        self.init(kind, host: host, port: port, credentials: credentials, bypass: bypass)
        try validate()
    }

    private static func port(_ text: String, in whole: String) throws(Problem) -> Int {
        guard let port = Int(text), text.allSatisfy(\.isASCII) else {
            throw Problem(description: "the proxy's port is not a number: \(ProxyRoutes.redacted(whole))")
        }
        return port
    }

    /// Throws ``Problem`` when the proxy cannot be used: an empty host or one with characters no host has, a
    /// port outside 1–65535, a user name with a `:` (HTTP Basic cannot carry it), a bypass entry that is empty or
    /// holds a comma or a space.
    public func validate() throws(Problem) {
        let forbidden = Set(" \t\r\n/?#@[],")
        guard !host.isEmpty, !host.contains(where: { forbidden.contains($0) || $0.asciiValue.map { $0 < 32 } == true })
        else { throw Problem(description: "the proxy's host '\(host)' is not a host name or address") }
        guard (1...65_535).contains(port) else {
            throw Problem(description: "the proxy's port \(port) is outside 1–65535")
        }
        if let credentials, credentials.user.contains(":") {
            throw Problem(description: "the proxy's user name holds a ':', which Basic authentication cannot carry")
        }
        for entry in bypass where entry.isEmpty || entry.contains(where: { $0 == "," || $0.isWhitespace }) {
            throw Problem(description: "the proxy bypass entry '\(entry)' is empty or holds a comma or space")
        }
    }

    /// The proxy as curl names it, without credentials: `scheme://host:port` (an IPv6 host in brackets).
    var address: String { written(userInfo: "") }

    /// `scheme://host:port`, with `***@` before the host when it has credentials.
    public var description: String { written(userInfo: credentials == nil ? "" : "***@") }

    /// The proxy written as curl writes one, with its credentials percent-encoded: what
    /// ``init(parsing:bypass:)`` reads back. Unlike ``description`` it carries the password: for handing the proxy
    /// on (an environment variable for another program), never for a log.
    public var text: String {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        func encoded(_ part: String) -> String { part.addingPercentEncoding(withAllowedCharacters: allowed) ?? "" }
        return written(userInfo: credentials.map { "\(encoded($0.user)):\(encoded($0.password))@" } ?? "")
    }

    /// `scheme://` + `userInfo` + `host:port` (an IPv6 host in brackets).
    private func written(userInfo: String) -> String {
        "\(kind.rawValue)://\(userInfo)\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }
}

extension Proxy {
    /// Where a transport's requests go: through the proxies the environment names, directly, or through one
    /// set in code.
    public enum Setting: Sendable, Hashable {
        /// `http_proxy`, `https_proxy`, `all_proxy` and `no_proxy` (and their upper-case forms, but never
        /// `HTTP_PROXY`), read once when the transport is created, as curl reads them.
        case environment
        /// No proxy, whatever the environment says.
        case direct
        /// Every request through `proxy`, except to the hosts of its ``Proxy/bypass`` list.
        case through(Proxy)
    }
}
