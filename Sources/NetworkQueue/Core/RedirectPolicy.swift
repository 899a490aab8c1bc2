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

    /// `request` as it may go to its URL when it was meant for `from`'s origin: without the
    /// ``crossOriginStrippedHeaders`` when the origins differ (a redirect's target, a mirror), else as it is.
    func sending(_ request: URLRequest, from: URL?) -> URLRequest {
        guard let from, let target = request.url, Self.origin(of: from) != Self.origin(of: target) else {
            return request
        }
        var request = request
        let stripped = Set(crossOriginStrippedHeaders.map { $0.lowercased() })
        for name in (request.allHTTPHeaderFields ?? [:]).keys where stripped.contains(name.lowercased()) {
            request.setValue(nil, forHTTPHeaderField: name)
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
