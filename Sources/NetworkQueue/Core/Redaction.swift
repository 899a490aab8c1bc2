import Foundation

/// Text for logs and error messages that never carries secrets from a URL.
enum Redaction {
    /// What stands in place of a secret.
    static let mask = "***"

    /// `url` with its user info, query values and fragment masked:
    /// `https://user:pw@host:8443/p?token=abc&x#f` becomes `https://***@host:8443/p?token=***&x#***`.
    static func describe(_ url: URL?) -> String {
        guard let url else { return "(no URL)" }
        guard let parts = URLComponents(url: url, resolvingAgainstBaseURL: false), let scheme = parts.scheme else {
            return mask
        }
        var text = scheme + ":"
        if let host = parts.percentEncodedHost {
            text += "//"
            if parts.percentEncodedUser != nil || parts.percentEncodedPassword != nil { text += mask + "@" }
            text += host
            if let port = parts.port { text += ":\(port)" }
        }
        text += parts.percentEncodedPath
        if let query = parts.percentEncodedQuery {
            let pairs = query.split(separator: "&", omittingEmptySubsequences: false).map { pair in
                pair.firstIndex(of: "=").map { pair[..<$0] + "=" + mask } ?? String(pair)
            }
            text += "?" + pairs.joined(separator: "&")
        }
        if parts.percentEncodedFragment != nil { text += "#" + mask }
        return text
    }
}

extension Redaction {
    /// `error` with its failing URL redacted (as ``describe(_:)`` does) wherever its user info holds one, so
    /// that `String(describing:)` of it shows no secret. An underlying error (which may hold the URL again)
    /// is dropped; the code and libcurl's text stay.
    static func redacted(_ error: URLError) -> URLError {
        // Foundation's NSURLErrorFailingURLStringErrorKey, by value (the constant is deprecated).
        let stringKey = "NSErrorFailingURLStringKey"
        var info = error.userInfo
        info[NSUnderlyingErrorKey] = nil
        let url = error.failingURL ?? (info[stringKey] as? String).flatMap(URL.init(string:))
        if let url {
            let text = describe(url)
            info[stringKey] = text
            // The masks keep it a URL; if they did not, only the text stays.
            info[NSURLErrorFailingURLErrorKey] = URL(string: text)
        }
        return URLError(error.code, userInfo: info)
    }
}
