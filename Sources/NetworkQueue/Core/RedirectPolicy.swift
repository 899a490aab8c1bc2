import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How a transport follows redirects: which headers stay behind when a redirect leaves the origin, and
/// whether a redirect may leave HTTPS for plain HTTP.
public struct RedirectPolicy: Sendable, Hashable {
    /// Header names (compared case-insensitively) removed from the request when a redirect changes
    /// scheme, host or port. Default: `Authorization`, `Cookie` and `Proxy-Authorization`, as curl and
    /// browsers do. Add your own credential headers (such as `X-Api-Key`) here.
    public var crossOriginStrippedHeaders: Set<String>
    /// Whether a redirect from `https` to `http` is followed. Default false: such a redirect fails the
    /// transfer with `URLError(.appTransportSecurityRequiresSecureConnection)`.
    public var allowsHTTPSToHTTP: Bool
    /// When set, only these headers (compared case-insensitively) go on when a redirect (or a mirror) leaves the
    /// origin: every other one stays behind too, so that a header given for one server (a list's per-file header, a
    /// token) never reaches another. Default nil: only ``crossOriginStrippedHeaders`` stay behind.
    public var crossOriginKeptHeaders: Set<String>?
    /// The `Authorization` value to send to each host (its name, compared case-insensitively) when a redirect or a
    /// mirror leads there from another origin and the request carries none after the headers that stay behind are
    /// removed: credentials looked up for the host each request goes to, as curl does with a `.netrc`. Never sent to
    /// another host; default empty.
    public var hostAuthorizations: [String: String] = [:] {
        didSet {
            if hostAuthorizations.keys.contains(where: { $0 != $0.lowercased() }) {
                hostAuthorizations = Dictionary(
                    hostAuthorizations.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
            }
        }
    }

    /// The headers every policy strips by default.
    public static let defaultStrippedHeaders: Set<String> = ["Authorization", "Cookie", "Proxy-Authorization"]

    /// Creates a policy.
    /// - Parameters:
    ///   - crossOriginStrippedHeaders: headers removed on a cross-origin redirect; default
    ///     ``defaultStrippedHeaders``.
    ///   - allowsHTTPSToHTTP: whether to follow an `https` → `http` redirect; default false.
    public init(
        crossOriginStrippedHeaders: Set<String> = RedirectPolicy.defaultStrippedHeaders, allowsHTTPSToHTTP: Bool = false
    ) {
        self.crossOriginStrippedHeaders = crossOriginStrippedHeaders
        self.allowsHTTPSToHTTP = allowsHTTPSToHTTP
    }

    /// The default policy.
    public static let `default` = RedirectPolicy()

    /// What to do with one redirect.
    enum Decision: Equatable {
        /// Follow it with this request.
        case follow(URLRequest)
        /// Refuse it: the transfer fails with this error.
        case refuse(URLError)
    }

    /// Decides the redirect from `from` to `proposed`: refuses targets that are not HTTP(S) or that
    /// downgrade HTTPS, and strips credentials when the origin changes. `location` is the response's own
    /// `Location` value, when the proposed request was built by someone else: Foundation on Linux turns
    /// `javascript:…`, `data:…` or `file:…` into a same-origin `http` URL, so the header itself is judged.
    func decide(from: URL?, to proposed: URLRequest, location: String? = nil) -> Decision {
        if let location, let scheme = URL(string: location, relativeTo: from)?.absoluteURL.scheme?.lowercased(),
            scheme != "http", scheme != "https"
        {
            return .refuse(URLError(.unsupportedURL))
        }
        guard let target = proposed.url, let targetScheme = target.scheme?.lowercased(),
            targetScheme == "http" || targetScheme == "https", target.host?.isEmpty == false
        else { return .refuse(URLError(.unsupportedURL)) }
        let sourceScheme = from?.scheme?.lowercased()
        if sourceScheme == "https", targetScheme == "http", !allowsHTTPSToHTTP {
            return .refuse(URLError(.appTransportSecurityRequiresSecureConnection))
        }
        return .follow(sending(proposed, from: from))
    }

    /// `request` as it may go to its URL when it was meant for `from`'s origin: when the origins differ (a redirect's
    /// target, a mirror), without the ``crossOriginStrippedHeaders`` (and any header not in ``crossOriginKeptHeaders``)
    /// and with the target host's own ``hostAuthorizations`` entry; else as it is.
    func sending(_ request: URLRequest, from: URL?) -> URLRequest {
        guard let from, let target = request.url, Self.origin(of: from) != Self.origin(of: target) else {
            return request
        }
        var request = request
        let stripped = Set(crossOriginStrippedHeaders.map { $0.lowercased() })
        let kept = crossOriginKeptHeaders.map { Set($0.map { $0.lowercased() }) }
        for name in (request.allHTTPHeaderFields ?? [:]).keys {
            let lowercased = name.lowercased()
            if stripped.contains(lowercased) || kept.map({ !$0.contains(lowercased) }) == true {
                request.setValue(nil, forHTTPHeaderField: name)
            }
        }
        if !hostAuthorizations.isEmpty, let host = target.host?.lowercased(),
            let authorization = hostAuthorizations[host], request.value(forHTTPHeaderField: "Authorization") == nil
        {
            request.setValue(authorization, forHTTPHeaderField: "Authorization")
        }
        return request
    }

    /// Scheme, host and effective port, lowercased: two URLs with the same origin share credentials.
    static func origin(of url: URL) -> String {
        let scheme = url.scheme?.lowercased() ?? ""
        let port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : -1)
        return "\(scheme)://\(url.host?.lowercased() ?? ""):\(port)"
    }
}
