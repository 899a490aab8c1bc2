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
    static func contentLength(_ value: String) -> ContentLength {
        // One pass over the bytes (this runs for every response): each comma-separated element is 1–18
        // digits with optional spaces or tabs around them.
        var length: Int64?
        var number: Int64 = 0
        var digits = 0
        var spaceAfterDigits = false
        var bytes = value.utf8.makeIterator()
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

    /// Whether libcurl's words for a failed transfer (under either transport) describe a response it
    /// could not frame: broken chunk sizes, or, before the head was complete, a head over its size limit
    /// (libcurl 7.88 calls that "Out of memory"). Such a response is hostile or broken, not a lost
    /// connection: it maps to `.badServerResponse`, which is not retried by default.
    static func isFramingFailure(libcurlMessage message: String, afterResponse: Bool) -> Bool {
        message.contains("chunked-encoding") || message.contains("chunk hex-length")
            || (!afterResponse && (message == "Out of memory" || message.contains("too large")))
    }

    /// The framing error in a head a transport has already parsed (`URLSession`'s), or nil. Only the
    /// length can still be checked there: the lines themselves are gone.
    static func violation(in response: ResponseHead) -> String? {
        guard response.value(forHTTPHeaderField: "Transfer-Encoding") == nil,
            let value = response.value(forHTTPHeaderField: "Content-Length"),
            case .invalid(let reason) = contentLength(value)
        else { return nil }
        return reason
    }
}
