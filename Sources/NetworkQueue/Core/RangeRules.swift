import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Continuing a file download from its `.part` file with a `Range` request: which validator is saved beside
/// the part, the headers a continuing request sends, and what the server's answer means. Pure functions of
/// their arguments.
enum RangeRules {
    /// What identifies the version of the resource the partial file holds.
    enum Validator: Equatable, Sendable {
        /// A strong entity tag (a weak one may not be used in `If-Range`).
        case entityTag(String)
        case lastModified(String)

        /// The value `If-Range` carries.
        var headerValue: String {
            switch self {
            case .entityTag(let tag): tag
            case .lastModified(let date): date
            }
        }

        /// The text saved in the validator file: a kind line, then the value.
        var fileText: String {
            switch self {
            case .entityTag(let tag): "etag\n\(tag)\n"
            case .lastModified(let date): "last-modified\n\(date)\n"
            }
        }

        /// Reads what ``fileText`` wrote; nil for anything else (a file we did not write is never trusted).
        init?(fileText: String) {
            let lines = fileText.split(separator: "\n", omittingEmptySubsequences: false)
            guard lines.count >= 2, !lines[1].isEmpty, lines[1].allSatisfy({ $0.isASCII && !$0.isNewline }) else {
                return nil
            }
            let value = String(lines[1])
            switch lines[0] {
            case "etag" where RangeRules.isStrongEntityTag(value): self = .entityTag(value)
            case "last-modified": self = .lastModified(value)
            default: return nil
            }
        }
    }

    /// What the answer to a continuing request means for the partial file.
    enum Outcome: Equatable {
        /// 206 for exactly the bytes after the part: append them. `total` is the full size, when given.
        case append(total: Int64?)
        /// 200: the server sent the whole resource (it ignored the range, or `If-Range` did not match).
        case startOver
        /// 416, or a 206 for other bytes (or encoded): the part cannot be continued; send again without
        /// a range.
        case restartWithoutRange
        /// Any other status: the response says nothing about the part (it fails or is retried by status).
        case unrelated
    }

    /// The validator to save for a response whose body starts a partial file, or nil when it cannot be
    /// resumed: only a 200 with an identity body (a range of an encoded body is a range of other bytes),
    /// a strong ETag first, else Last-Modified.
    static func validator(of response: ResponseHead) -> Validator? {
        guard response.statusCode == 200, !ResponseRules.isEncoded(response) else { return nil }
        if let tag = response.value(forHTTPHeaderField: "ETag").map({ String(HeaderName.trimmed($0)) }),
            isStrongEntityTag(tag)
        {
            return .entityTag(tag)
        }
        if let date = response.value(forHTTPHeaderField: "Last-Modified").map({ String(HeaderName.trimmed($0)) }),
            !date.isEmpty, !date.utf8.contains(10)
        {
            return .lastModified(date)
        }
        return nil
    }

    /// True for a quoted tag on one line (a weak tag, `W/"…"`, is not quoted at its start).
    static func isStrongEntityTag(_ tag: String) -> Bool {
        let bytes = tag.utf8
        return bytes.count >= 2 && bytes.first == 34 && bytes.last == 34 && !bytes.contains(10)
    }

    /// The headers that ask for the bytes from `offset` on, if the resource is still `validator`.
    static func headers(offset: Int64, validator: Validator) -> [String: String] {
        ["Range": "bytes=\(offset)-", "If-Range": validator.headerValue]
    }

    /// True when a request may continue a part at all: a GET that does not ask for a range of its own.
    static func mayContinue(_ request: URLRequest) -> Bool { mayContinue(.request(request)) }

    /// As ``mayContinue(_:)-(URLRequest)``, for what a transfer sends (the text form is a GET without a range).
    static func mayContinue(_ request: OutgoingRequest) -> Bool {
        RequestRules.isGet(request.method) && request.value(forHTTPHeaderField: "Range") == nil
    }

    /// As ``mayContinue(_:)-(URLRequest)``, read without building the request's `URLRequest`.
    static func mayContinue(_ request: NetworkRequest) -> Bool { mayContinue(request.outgoing) }

    /// What the final response to a request continuing from `offset` means.
    static func outcome(of response: ResponseHead, offset: Int64) -> Outcome {
        switch response.statusCode {
        case 206:
            guard !ResponseRules.isEncoded(response),
                let range = contentRange(response.value(forHTTPHeaderField: "Content-Range")), range.first == offset
            else { return .restartWithoutRange }
            return .append(total: range.total)
        case 200: return .startOver
        case 416: return .restartWithoutRange
        default: return .unrelated
        }
    }

    /// Parses `bytes first-last/total` (total may be `*`); nil when malformed or inconsistent.
    static func contentRange(_ value: String?) -> (first: Int64, last: Int64, total: Int64?)? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), value.lowercased().hasPrefix("bytes ") else {
            return nil
        }
        let spec = value.dropFirst(6).trimmingCharacters(in: .whitespaces)
        let halves = spec.split(separator: "/", omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        let bounds = halves[0].split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]), first >= 0, last >= first
        else {
            return nil
        }
        if halves[1] == "*" { return (first, last, nil) }
        guard let total = Int64(halves[1]), total > last else { return nil }
        return (first, last, total)
    }
}
