import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The rules a request must pass before it is sent: pure functions of the request, no I/O.
enum RequestRules {
    /// Timeouts of this many seconds or more mean no timeout, like infinity and NaN: a deadline that
    /// far away is no deadline, and larger values overflow the clocks and libcurl's millisecond count.
    static let noTimeoutThreshold: TimeInterval = 1_000_000

    /// How long a transfer may stay idle.
    enum IdleTimeout: Equatable {
        case none
        case seconds(TimeInterval)
    }

    /// The idle timeout `interval` stands for: nil for a non-positive one (an invalid request).
    static func idleTimeout(_ interval: TimeInterval) -> IdleTimeout? {
        if interval.isNaN || interval >= noTimeoutThreshold { return IdleTimeout.none }
        return interval > 0 ? .seconds(interval) : nil
    }

    /// Why `request` cannot be sent to `destination`, or nil when it can.
    static func validate(
        _ request: URLRequest, destination: NetworkRequest.Destination = .memory, destinationPath: String? = nil
    ) -> NetworkQueueError.InvalidRequestReason? {
        guard let url = request.url else { return .missingURL }
        return validate(
            url: url, timeout: request.timeoutInterval, destination: destination, destinationPath: destinationPath)
    }

    /// Whether `text` is an `http` or `https` URL (the scheme in lowercase) whose authority is a host of letters,
    /// digits, dots and hyphens, not empty, and perhaps a port of digits: no user, brackets or escapes. Such a URL has
    /// the scheme and the host ``validate(url:timeout:destination:destinationPath:text:)`` asks for; any other text is
    /// left to Foundation's reading.
    static func hasPlainHTTPHost(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            // "http://" or "https://", byte by byte (a generic `starts(with:)` cost 300 instructions).
            guard bytes.count > 7, bytes[0] == 0x68, bytes[1] == 0x74, bytes[2] == 0x74, bytes[3] == 0x70 else {
                return false
            }
            let secure = bytes[4] == 0x73
            let start = secure ? 8 : 7
            guard bytes.count > start, bytes[start - 3] == 0x3A, bytes[start - 2] == 0x2F, bytes[start - 1] == 0x2F
            else { return false }
            // The authority ends at a path, a query or a fragment.
            func endsAuthority(_ index: Int) -> Bool {
                index == bytes.count || bytes[index] == UInt8(ascii: "/") || bytes[index] == UInt8(ascii: "?")
                    || bytes[index] == UInt8(ascii: "#")
            }
            // The host: letters, digits, dots and hyphens, up to a port or the authority's end.
            var index = start
            while !endsAuthority(index), bytes[index] != UInt8(ascii: ":") {
                let byte = bytes[index]
                guard
                    (97...122).contains(byte | 0x20) || (48...57).contains(byte) || byte == UInt8(ascii: ".")
                        || byte == UInt8(ascii: "-")
                else { return false }
                index += 1
            }
            let host = index - start
            // A port: digits alone.
            if !endsAuthority(index) {
                index += 1
                while index < bytes.count, (48...57).contains(bytes[index]) { index += 1 }
            }
            return host > 0 && endsAuthority(index)
        }
    }

    /// `URLRequest`'s default `timeoutInterval`, which a request created from a URL has.
    static let defaultTimeout: TimeInterval = 60

    /// Why a request for `url` with `timeout` to `destination` cannot be sent, or nil. `destinationPath`: the file
    /// destination's path, when the caller has made it already.
    static func validate(
        url: URL, timeout: TimeInterval, destination: NetworkRequest.Destination = .memory,
        destinationPath: String? = nil, text: String? = nil
    ) -> NetworkQueueError.InvalidRequestReason? {
        // Compared and checked without allocating or percent-decoding: this runs for every request added. The URL's
        // text, when the caller has it, answers for the usual URL alone (Foundation parses each part again).
        if !(text.map(hasPlainHTTPHost) ?? false) {
            let scheme = url.scheme
            guard let scheme, HeaderName.equal(scheme.utf8, "http".utf8) || HeaderName.equal(scheme.utf8, "https".utf8)
            else { return .unsupportedScheme(scheme) }
            guard let host = url.host(percentEncoded: true), !host.isEmpty else { return .missingHost(url) }
        }
        guard idleTimeout(timeout) != nil else { return .invalidTimeout(timeout) }
        if case .file(let file) = destination,
            !file.isFileURL || (destinationPath ?? file.path).isEmpty || file.hasDirectoryPath
        {
            return .invalidDestination(file)
        }
        return nil
    }

    /// HEAD preflight applies to GET requests: only they download a body the HEAD can describe.
    static func wantsPreflight(_ request: URLRequest) -> Bool { isGet(request.httpMethod ?? "GET") }

    /// As ``wantsPreflight(_:)``, read without building the request's `URLRequest`.
    static func wantsPreflight(_ request: NetworkRequest) -> Bool { isGet(request.method) }

    /// Whether `method` is GET in any case (methods are case-sensitive, RFC 9110 §9.1, but a lowercase `get` has
    /// always been taken as GET here); the usual spelling is compared without making an uppercased copy.
    static func isGet(_ method: String) -> Bool { method == "GET" || method.uppercased() == "GET" }

    /// `method` (nil: GET) uppercased as it is sent, without a copy when it is uppercase already (the usual
    /// spellings: uppercasing made a new string for every request of a `URLRequest`).
    static func sentMethod(_ method: String?) -> String {
        guard let method else { return "GET" }
        return method.utf8.contains(where: { (97...122).contains($0) }) ? method.uppercased() : method
    }

    /// The largest body accepted for `limit` and `destination`, or nil for no limit.
    static func maximumResponseSize(
        _ limit: NetworkRequest.ResponseSizeLimit, destination: NetworkRequest.Destination
    ) -> Int64? {
        switch (limit, destination) {
        case (.automatic, .memory): NetworkRequest.ResponseSizeLimit.defaultMemoryLimit
        case (.automatic, .file), (.unlimited, _): nil
        case (.bytes(let bytes), _): max(0, bytes)
        }
    }

    /// The key of the server a request talks to: lowercased scheme and host, and the port (explicit or
    /// the scheme's default).
    static func hostKey(_ url: URL?) -> String? {
        guard let url, let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(host):\(port)"
    }
}
