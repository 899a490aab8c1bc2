import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// HTTP/1.1 message framing rules (RFC 9112 §6.3) that both transports apply to a response head. Pure.
enum FramingRules {
    /// What a `Content-Length` field value (repeated fields already joined with ", ") says.
    enum ContentLength: Equatable {
        /// One length, however often it was repeated.
        case valid(Int64)
        /// Differing or malformed values: the message cannot be framed, the connection cannot be trusted.
        case invalid(String)
    }

    /// Reads a `Content-Length` value: a list of identical decimal lengths is one length (RFC 9110 §8.6);
    /// differing values, an empty element or anything but digits is invalid.
    static func contentLength(_ value: String) -> ContentLength { contentLength(bytes: value.utf8) }

    /// As ``contentLength(_:)``, over the value's bytes where they are (a parser's field: no string made).
    static func contentLength<Bytes: Sequence<UInt8>>(bytes value: Bytes) -> ContentLength {
        // One pass over the bytes (this runs for every response): each comma-separated element is 1–18
        // digits with optional spaces or tabs around them.
        var length: Int64?
        var number: Int64 = 0
        var digits = 0
        var spaceAfterDigits = false
        var bytes = value.makeIterator()
        while true {
            let byte = bytes.next()
            switch byte {
            case .some(let digit) where (48...57).contains(digit) && !spaceAfterDigits && digits < 18:
                number = number * 10 + Int64(digit - 48)
                digits += 1
            case 32, 9:
                if digits > 0 { spaceAfterDigits = true }
            case 44, nil:
                guard digits > 0 else { return .invalid("a malformed Content-Length") }
                if let length, length != number { return .invalid("differing Content-Length values") }
                length = number
                guard byte != nil else { return .valid(number) }
                (number, digits, spaceAfterDigits) = (0, 0, false)
            default:
                return .invalid("a malformed Content-Length")
            }
        }
    }

    /// What a response's `Transfer-Encoding` field value (repeated fields joined with ", ") asks of the client
    /// (RFC 9112 §6.1).
    enum TransferCoding: Equatable {
        /// The body is framed as the field says: `chunked` last (or not at all: the body ends when the
        /// connection closes) and, before it, these codings to decode, in the order they were applied.
        case valid(codings: [String], isChunked: Bool)
        /// A coding this library does not know (`compress`, `identityx`, …): the body cannot be read.
        case unsupported(String)
        /// A list that cannot frame a message: `chunked` twice or not last, too many codings, or no coding.
        case invalid(String)
    }

    /// The transfer codings decoded besides `chunked` (`x-gzip` is `gzip`).
    static let decodableTransferCodings: Set<String> = ["gzip", "x-gzip", "deflate"]

    /// The most codings one `Transfer-Encoding` or `Content-Encoding` may list (libcurl's limit since its fix
    /// for CVE-2022-32206): each is a decoder stage and its memory.
    static let maximumCodings = 5

    /// Reads a `Transfer-Encoding` value. Empty list elements are skipped (RFC 9110 §5.6.1); `identity`
    /// (no longer a transfer coding) is accepted and means nothing, as curl does.
    static func transferCoding(_ value: String) -> TransferCoding {
        let elements = codings(value)
        guard !elements.isEmpty else { return .invalid("an empty Transfer-Encoding") }
        var codings: [String] = []
        var isChunked = false
        for coding in elements {
            if isChunked { return .invalid("a transfer coding after chunked") }
            if codings.count >= maximumCodings { return .invalid("more than \(maximumCodings) transfer codings") }
            switch coding {
            case "chunked": isChunked = true
            case "identity": continue
            case _ where decodableTransferCodings.contains(coding): codings.append(coding)
            default: return .unsupported(coding)
            }
        }
        return .valid(codings: codings, isChunked: isChunked)
    }

    /// The codings a `Transfer-Encoding` or `Content-Encoding` value lists, lowercased and trimmed, empty list
    /// elements skipped (RFC 9110 §5.6.1).
    static func codings(_ value: String) -> [String] {
        value.split(separator: ",").compactMap { element in
            let coding = element.trimmingCharacters(in: .whitespaces).lowercased()
            return coding.isEmpty ? nil : coding
        }
    }

    /// The framing error in a head a transport has already parsed (`URLSession`'s), as the `URLError` it
    /// fails with, or nil. Only the length and the transfer codings can still be checked there: the lines
    /// themselves are gone. `hasBody` is false for a response that has none whatever its fields say (to a
    /// HEAD, a 204 or a 304).
    static func violation(in response: ResponseHead, hasBody: Bool = true) -> URLError? {
        if let coding = response.value(forHTTPHeaderField: "Transfer-Encoding") {
            switch transferCoding(coding) {
            case .valid: return nil
            case .unsupported(let name):
                guard hasBody else { return nil }
                return URLError(
                    .cannotDecodeContentData,
                    userInfo: [NSLocalizedDescriptionKey: "unsupported Transfer-Encoding \(name)"])
            case .invalid(let reason):
                return URLError(
                    .badServerResponse, userInfo: [NSLocalizedDescriptionKey: "invalid response head: \(reason)"])
            }
        }
        guard let value = response.value(forHTTPHeaderField: "Content-Length"),
            case .invalid(let reason) = contentLength(value)
        else {
            return nil
        }
        return URLError(.badServerResponse, userInfo: [NSLocalizedDescriptionKey: "invalid response head: \(reason)"])
    }
}
