import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension ResponseHeadParser {
    /// A complete final head.
    struct Head: Equatable {
        var statusCode: Int
        /// As in the status line, e.g. `HTTP/1.1` or `HTTP/2`.
        var httpVersion: String
        /// Fields in order of first appearance; a repeated name's values are joined with ", " under the
        /// spelling of its first appearance. As a ``ResponseHead`` keeps them (handed over, not converted).
        var fields: [ResponseHead.Field]
        /// Every `Set-Cookie` field's value on its own (joining them would be ambiguous).
        var setCookies: [String] = []
        /// True when the connection must not be reused after this response: it carried both
        /// `Transfer-Encoding` and `Content-Length` (the length was dropped, RFC 9112 §6.3).
        var closesConnection = false
        /// The `Content-Length` kept, as a number (nil: none).
        var contentLength: Int64?
        /// The transfer codings besides `chunked` that the body must be decoded from, in the order applied.
        var transferCodings: [String] = []
        /// A transfer coding this library cannot decode, which fails any response with a body.
        var unsupportedTransferCoding: String?
        /// Bit `n % 64` set for each field name of `n` bytes (see ``ResponseHead``).
        var nameLengths: UInt64 = 0

        init(statusCode: Int, httpVersion: String, fields: [ResponseHead.Field], setCookies: [String] = []) {
            self.statusCode = statusCode
            self.httpVersion = httpVersion
            self.fields = fields
            self.setCookies = setCookies
            nameLengths = ResponseHead.lengthMask(of: fields)
        }

        /// A head with `fields` given as pairs (tests).
        init(statusCode: Int, httpVersion: String, fields: [(String, String)]) {
            self.init(
                statusCode: statusCode, httpVersion: httpVersion,
                fields: fields.map { ResponseHead.Field(name: $0.0, value: $0.1) })
        }

        static func == (lhs: Head, rhs: Head) -> Bool {
            lhs.statusCode == rhs.statusCode && lhs.httpVersion == rhs.httpVersion && lhs.fields == rhs.fields
        }

        /// The value of the field `name`, compared case-insensitively (ASCII).
        func value(_ name: String) -> String? {
            guard nameLengths & (1 << UInt64(name.utf8.count & 63)) != 0 else { return nil }
            for index in fields.indices where HeaderName.equal(fields[index].name.utf8, name.utf8) {
                return fields[index].value
            }
            return nil
        }
    }
}
