import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The `URLError` each libcurl result code (`CURLcode`) becomes: a pure table, so that a transfer over
/// ``CurlTransport`` fails with the codes a transfer over `URLSession` would give on Apple platforms.
enum CurlErrorTable {
    /// The code for a CURLcode, or nil for `CURLE_OK`. `scheme` is the transfer's URL scheme: curl reports
    /// a malformed status line ("HTTP/0.9 not allowed") as an unsupported protocol, which for an HTTP(S)
    /// URL means a bad server response.
    static func code(for curlCode: Int32, scheme: String?) -> URLError.Code? {
        switch curlCode {
        case 0: nil
        case 1: scheme == "http" || scheme == "https" ? .badServerResponse : .unsupportedURL  // UNSUPPORTED_PROTOCOL
        case 3: .badURL  // URL_MALFORMAT
        case 5, 6: .cannotFindHost  // COULDNT_RESOLVE_PROXY, COULDNT_RESOLVE_HOST
        case 7, 97: .cannotConnectToHost  // COULDNT_CONNECT, PROXY
        case 8: .badServerResponse  // WEIRD_SERVER_REPLY
        case 16, 92: .networkConnectionLost  // HTTP2, HTTP2_STREAM (a reset stream)
        case 18, 52, 55, 56: .networkConnectionLost  // PARTIAL_FILE, GOT_NOTHING, SEND_ERROR, RECV_ERROR
        case 25: .networkConnectionLost  // UPLOAD_FAILED
        case 26: .requestBodyStreamExhausted  // READ_ERROR: the request body could not be read
        case 28: .timedOut  // OPERATION_TIMEDOUT
        case 35, 59, 64, 66, 77, 80, 82: .secureConnectionFailed  // SSL_CONNECT_ERROR, SSL_CIPHER, … CRL_BADFILE
        case 60, 83, 90, 91: .serverCertificateUntrusted  // PEER_FAILED_VERIFICATION, ISSUER, PINNED KEY, STATUS
        case 58: .clientCertificateRejected  // SSL_CERTPROBLEM
        case 98: .clientCertificateRequired  // SSL_CLIENTCERT
        case 42: .cancelled  // ABORTED_BY_CALLBACK
        case 47: .httpTooManyRedirects  // TOO_MANY_REDIRECTS
        case 61: .cannotDecodeContentData  // BAD_CONTENT_ENCODING
        case 63: .dataLengthExceedsMaximum  // FILESIZE_EXCEEDED
        case 27: .cannotLoadFromNetwork  // OUT_OF_MEMORY
        default: .unknown
        }
    }

    /// The error a transfer ends with: the table's code, with libcurl's own words (and its code under
    /// ``curlCodeKey``) in the user info.
    /// `isFramingFailure` (see ``FramingRules/isFramingFailure(libcurlMessage:afterResponse:)``) makes any
    /// failure `.badServerResponse`.
    static func error(for curlCode: Int32, scheme: String?, url: URL?, message: String, isFramingFailure: Bool = false) -> URLError? {
        guard let tableCode = code(for: curlCode, scheme: scheme) else { return nil }
        let code = isFramingFailure ? .badServerResponse : tableCode
        var info: [String: Any] = [NSLocalizedDescriptionKey: message, curlCodeKey: Int(curlCode)]
        if let url { info[NSURLErrorFailingURLErrorKey] = url }
        return URLError(code, userInfo: info)
    }

    /// The user-info key under which a ``CurlTransport`` error keeps libcurl's `CURLcode`.
    static let curlCodeKey = "NetworkQueueCurlCode"
}
