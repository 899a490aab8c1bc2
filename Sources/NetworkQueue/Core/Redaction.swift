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
