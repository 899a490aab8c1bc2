import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How a transport that follows redirects itself builds the next request, as browsers do: 303 turns any
/// method but HEAD into GET, 301 and 302 turn POST into GET (dropping the body and its headers), 307 and
/// 308 keep method and body. The result still goes through the ``RedirectPolicy``. Pure; tested alone.
enum RedirectRules {
    /// Whether `status` is one of those followed: 301, 302, 303, 307 and 308 (a switch: every response asks, and a
    /// set's hashing cost more).
    static func isFollowed(_ status: Int) -> Bool {
        switch status {
        case 301, 302, 303, 307, 308: true
        default: false
        }
    }

    /// The next request after a `status` response with `location` to `request` (sent to `url`), or nil
    /// when the response is not a redirect to follow (another status, or no usable `Location`).
    static func next(after status: Int, location: String?, request: URLRequest, url: URL) -> URLRequest? {
        guard isFollowed(status), let location, !location.isEmpty,
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
