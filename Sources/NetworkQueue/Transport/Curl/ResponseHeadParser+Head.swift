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
        var storage: HeadFields
        /// The fields as values (tests, logs).
        var fields: [ResponseHead.Field] { storage.fields }
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

        init(
            statusCode: Int, httpVersion: String, storage: HeadFields, setCookies: [String] = [],
            contentLength: Int64? = nil, transferCodings: [String] = [], unsupportedTransferCoding: String? = nil,
            closesConnection: Bool = false
        ) {
            self.statusCode = statusCode
            self.httpVersion = httpVersion
            self.storage = storage
            self.setCookies = setCookies
            self.contentLength = contentLength
            self.transferCodings = transferCodings
            self.unsupportedTransferCoding = unsupportedTransferCoding
            self.closesConnection = closesConnection
        }

        /// A head with `fields` given as pairs (tests).
        init(statusCode: Int, httpVersion: String, fields: [(String, String)]) {
            self.init(
                statusCode: statusCode, httpVersion: httpVersion,
                storage: HeadFields(fields.map { ResponseHead.Field(name: $0.0, value: $0.1) }))
        }

        static func == (lhs: Head, rhs: Head) -> Bool {
            lhs.statusCode == rhs.statusCode && lhs.httpVersion == rhs.httpVersion && lhs.storage == rhs.storage
        }

        /// The value of the field `name`, compared case-insensitively (ASCII).
        func value(_ name: String) -> String? { storage.value(named: name) }
    }
}
