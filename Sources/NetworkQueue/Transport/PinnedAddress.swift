import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A host and port pinned to addresses, as curl's `--resolve HOST:PORT:ADDRESS[,ADDRESS]…`: connections to that host
/// and port go to the addresses given, and its name is never looked up. The request is unchanged (its `Host` field, its
/// TLS server name and certificate check are the host's). Used by ``CurlTransport/Options/pinnedAddresses``.
public struct PinnedAddress: Sendable, Hashable, CustomStringConvertible {
    /// The host name as URLs write it (compared without case), without brackets.
    public let host: String
    /// The port, 1 to 65535.
    public let port: Int
    /// The addresses to connect to, in order: IPv4 dotted quads or IPv6 addresses (written without brackets).
    public let addresses: [String]

    /// Reads curl's form: `HOST:PORT:ADDRESS[,ADDRESS]…`, an IPv6 address in brackets (`[::1]`). Nil for anything
    /// else: an empty host or one with spaces, control characters or a colon, a port outside 1…65535, or an address
    /// that is not an IP address (a name would need the very lookup the pin avoids).
    public init?(_ text: String) {
        guard let first = text.firstIndex(of: ":") else { return nil }
        let host = String(text[..<first])
        let rest = text[text.index(after: first)...]
        guard let second = rest.firstIndex(of: ":"), let port = Int(rest[..<second]), (1...65_535).contains(port)
        else { return nil }
        let list = rest[rest.index(after: second)...]
        let addresses = list.split(separator: ",", omittingEmptySubsequences: false).map { item -> String in
            item.hasPrefix("[") && item.hasSuffix("]") ? String(item.dropFirst().dropLast()) : String(item)
        }
        self.init(host: host, port: port, addresses: addresses)
    }

    /// `host:port` pinned to `addresses`; nil when one of them is not valid (see ``init(_:)``).
    public init?(host: String, port: Int, addresses: [String]) {
        guard !host.isEmpty, host.utf8.count <= 253,
            host.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F && $0 != ":" && $0 != "," }),
            (1...65_535).contains(port), !addresses.isEmpty, addresses.allSatisfy(Self.isAddress)
        else { return nil }
        self.host = host
        self.port = port
        self.addresses = addresses
    }

    /// True for an IPv4 or IPv6 address literal.
    static func isAddress(_ text: String) -> Bool {
        var storage = in6_addr()
        return inet_pton(AF_INET, text, &storage) == 1 || inet_pton(AF_INET6, text, &storage) == 1
    }

    /// curl's form, IPv6 addresses in brackets: what libcurl's `CURLOPT_RESOLVE` reads.
    public var description: String {
        "\(host):\(port):" + addresses.map { $0.contains(":") ? "[\($0)]" : $0 }.joined(separator: ",")
    }
}
