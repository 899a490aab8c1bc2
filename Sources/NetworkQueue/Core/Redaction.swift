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
            // A bare item (`?TOKEN`) may be the secret itself: masked whole.
            let pairs = query.split(separator: "&", omittingEmptySubsequences: false).map { pair in
                pair.firstIndex(of: "=").map { pair[..<$0] + "=" + mask } ?? (pair.isEmpty ? "" : mask)
            }
            text += "?" + pairs.joined(separator: "&")
        }
        if parts.percentEncodedFragment != nil { text += "#" + mask }
        return text
    }
}

extension Redaction {
    /// `text` (a thrown error's description, a server's field) fit for a log line: every URL in it
    /// redacted as ``describe(_:)`` does, and control characters (a server's CR, LF, ESC…) shown as `?`.
    static func scrub(_ text: String) -> String {
        var out = ""
        var rest = Substring(text)
        // A URL starts at a scheme followed by "://" and runs to the next space, quote or bracket.
        while let separator = rest.range(of: "://") {
            var start = separator.lowerBound
            while start > rest.startIndex, let previous = rest[rest.index(before: start)].unicodeScalars.first,
                previous.properties.isAlphabetic || "+-.".unicodeScalars.contains(previous)
                    || ("0"..."9").contains(previous)
            {
                start = rest.index(before: start)
            }
            let end = rest[separator.upperBound...].firstIndex { " \t\n\r\"'<>()[]{}".contains($0) } ?? rest.endIndex
            out += rest[..<start]
            let candidate = String(rest[start..<end])
            out += start == separator.lowerBound ? candidate : describe(URL(string: candidate))
            rest = rest[end...]
        }
        out += rest
        return printable(out)
    }

    /// `text` with control characters shown as `?`, so that a server's bytes cannot forge or color a log line.
    static func printable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        return String(String.UnicodeScalarView(text.unicodeScalars.map { isControl($0) ? "?" : $0 }))
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7f..<0xa0).contains(scalar.value)
    }

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
