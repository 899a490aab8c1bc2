import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The rules a response must pass: pure functions of the response head and the bytes counted.
enum ResponseRules {
    /// A 1xx head (`100 Continue`, `103 Early Hints`) is interim: never the final response.
    static func isInterim(_ response: ResponseHead) -> Bool { (100..<200).contains(response.statusCode) }

    /// The body length a response announces, or nil when unknown or not a count of delivered bytes.
    static func knownLength(of response: ResponseHead, encoded: Bool? = nil) -> Int64? {
        guard response.expectedContentLength >= 0, !(encoded ?? isEncoded(response)) else { return nil }
        return response.expectedContentLength
    }

    /// True when a Content-Encoding other than identity makes Content-Length a count of encoded bytes.
    static func isEncoded(_ response: ResponseHead) -> Bool {
        guard let encoding = response.value(forHTTPHeaderField: "Content-Encoding") else { return false }
        let trimmed = encoding.trimmingCharacters(in: .whitespaces).lowercased()
        return !trimmed.isEmpty && trimmed != "identity"
    }

    /// The failure a response head means for a request with these rules, or nil when it is acceptable.
    static func check(
        _ response: ResponseHead, isAcceptableStatus: Bool,
        acceptableContentTypes: Set<String>?, maximumResponseSize: Int64?, expectedLength: Int64?
    ) -> NetworkQueueError? {
        // The URL is read only for a problem: a head's URL may be text, parsed when first read (3,700 instructions).
        if response.statusCode == 407 {
            // Only a proxy sends 407 (RFC 9110 §15.5.8): the origin never answered, whatever statuses are accepted.
            let info: [String: Any] = [
                NSLocalizedDescriptionKey: "the proxy asked for credentials (407)",
                NSURLErrorFailingURLErrorKey: response.url,
            ]
            return .transport(URLError(.userAuthenticationRequired, userInfo: info))
        }
        if !isAcceptableStatus {
            return .unacceptableStatus(code: response.statusCode, url: response.url)
        }
        if let types = acceptableContentTypes {
            let type = response.mimeType?.lowercased()
            if type.map(types.contains) != true {
                return .unacceptableContentType(response.mimeType, url: response.url)
            }
        }
        if let limit = maximumResponseSize, let length = expectedLength, length > limit {
            return .responseTooLarge(limit: limit, url: response.url)
        }
        return nil
    }

    /// Whether a response with `statusCode` to a request with `method` (nil: GET) has a body at all: a
    /// response to HEAD, a 204 and a 304 have none, whatever their fields announce (RFC 9110 §6.4.1).
    static func hasBody(statusCode: Int, method: String?) -> Bool {
        hasBody(statusCode: statusCode, isHead: (method ?? "GET").uppercased() == "HEAD")
    }

    /// As ``hasBody(statusCode:method:)``, for a caller that knows whether the method is HEAD.
    static func hasBody(statusCode: Int, isHead: Bool) -> Bool {
        statusCode != 204 && statusCode != 304 && !isHead
    }

    /// True when a transfer that reported success delivered fewer body bytes than its (unencoded)
    /// Content-Length announced. HEAD responses and 204/304 announce a length but carry no body.
    /// `knownLength` is the response's ``knownLength(of:encoded:)``, when the caller has it already.
    static func isShort(_ response: ResponseHead, method: String?, received: Int64, knownLength: Int64?? = nil) -> Bool
    {
        guard let length = knownLength ?? Self.knownLength(of: response), received < length,
            hasBody(statusCode: response.statusCode, method: method)
        else { return false }
        return true
    }
}
