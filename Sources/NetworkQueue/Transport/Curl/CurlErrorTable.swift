import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The `URLError` each libcurl result code (`CURLcode`) becomes: a pure table, so that a transfer over
/// ``CurlTransport`` fails with the codes a transfer over `URLSession` would give on Apple platforms.
enum CurlErrorTable {
    /// CURLE_RECV_ERROR: a failed receive, or (libcurl 7.88) a chunked body or a head libcurl refused.
    static let receiveError: Int32 = 56
    /// CURLE_COULDNT_RESOLVE_PROXY: the proxy's host did not resolve, or its value could not be parsed.
    static let proxyUnresolved: Int32 = 5
    /// CURLE_PEER_FAILED_VERIFICATION: the server's certificate did not verify.
    static let peerFailedVerification: Int32 = 60

    /// The code for a CURLcode, or nil for `CURLE_OK`. `scheme` is the transfer's URL scheme: curl reports
    /// a malformed status line ("HTTP/0.9 not allowed") as an unsupported protocol, which for an HTTP(S)
    /// URL means a bad server response. `afterResponse` tells whether the final head had arrived;
    /// `osErrno` is CURLINFO_OS_ERRNO, read for CURLE_RECV_ERROR only: 0 there means no system call failed,
    /// so libcurl refused the bytes themselves (broken chunk framing, a head over its size limit).
    /// `connectCode` is CURLINFO_HTTP_CONNECTCODE, a proxy's answer to the tunnel's `CONNECT` (0: none): a
    /// refusal ends the transfer whatever code libcurl gives it (7.88 says CURLE_RECV_ERROR), as
    /// `.userAuthenticationRequired` for a 407 and `.cannotConnectToHost` (the proxy would not connect) otherwise.
    /// `certificateVerifyResult` is CURLINFO_SSL_VERIFYRESULT, read for CURLE_PEER_FAILED_VERIFICATION: OpenSSL's
    /// 10 (expired) and 9 (not yet valid) are the certificate's dates, anything else is a certificate not trusted
    /// (an unknown issuer, another host's name), as Apple's codes tell them apart.
    /// What each code means for a retry follows from the `URLError.Code` (see ``RetryPolicy``): a response
    /// that cannot be framed or decoded is never a lost connection.
    static func code(
        for curlCode: Int32, scheme: String?, afterResponse: Bool = false, osErrno: Int = 0, connectCode: Int = 0,
        certificateVerifyResult: Int = 0
    ) -> URLError.Code? {
        switch curlCode {
        case 0: nil
        case _ where connectCode != 0 && !(200..<300).contains(connectCode):
            connectCode == 407 ? .userAuthenticationRequired : .cannotConnectToHost
        case 1: scheme == "http" || scheme == "https" ? .badServerResponse : .unsupportedURL  // UNSUPPORTED_PROTOCOL
        case 3: .badURL  // URL_MALFORMAT
        case 5, 6: .cannotFindHost  // COULDNT_RESOLVE_PROXY, COULDNT_RESOLVE_HOST
        case 7, 97: .cannotConnectToHost  // COULDNT_CONNECT, PROXY
        case 8: .badServerResponse  // WEIRD_SERVER_REPLY
        case 16, 92: .networkConnectionLost  // HTTP2, HTTP2_STREAM (a reset stream)
        case 18, 52, 55: .networkConnectionLost  // PARTIAL_FILE, GOT_NOTHING, SEND_ERROR
        case receiveError: osErrno == 0 ? .badServerResponse : .networkConnectionLost
        case 25: .networkConnectionLost  // UPLOAD_FAILED
        case 26: .requestBodyStreamExhausted  // READ_ERROR: the request body could not be read
        // OPERATION_TIMEDOUT: the only bound the transport gives libcurl is the connect's (``TimeLimits/connect``), so
        // before a response this is a host that did not answer in time (the name's lookup, the connect, the TLS
        // handshake); the queue keeps every other clock itself.
        case 28: afterResponse ? .timedOut : .cannotConnectToHost
        case 35, 59, 64, 66, 77, 80, 82: .secureConnectionFailed  // SSL_CONNECT_ERROR, SSL_CIPHER, … CRL_BADFILE
        case peerFailedVerification where certificateVerifyResult == 10: .serverCertificateHasBadDate
        case peerFailedVerification where certificateVerifyResult == 9: .serverCertificateNotYetValid
        case 60, 83, 90, 91: .serverCertificateUntrusted  // PEER_FAILED_VERIFICATION, ISSUER, PINNED KEY, STATUS
        case 58: .clientCertificateRejected  // SSL_CERTPROBLEM
        case 98: .clientCertificateRequired  // SSL_CLIENTCERT
        case 42: .cancelled  // ABORTED_BY_CALLBACK
        case 47: .httpTooManyRedirects  // TOO_MANY_REDIRECTS
        case 61: .cannotDecodeContentData  // BAD_CONTENT_ENCODING
        case 63: .dataLengthExceedsMaximum  // FILESIZE_EXCEEDED
        // OUT_OF_MEMORY: before the final head, libcurl 7.88's word for a header line over its 100 KB limit.
        case 27: afterResponse ? .cannotLoadFromNetwork : .badServerResponse
        case 4: .unsupportedURL  // NOT_BUILT_IN: this libcurl lacks what was asked (a proxy type, say)
        case 23: .cannotWriteToFile  // WRITE_ERROR: the body could not be handed on
        case 33, 88: .badServerResponse  // RANGE_ERROR, CHUNK_FAILED
        case 45, 96: .cannotConnectToHost  // INTERFACE_FAILED, QUIC_CONNECT_ERROR
        case 65: .requestBodyStreamExhausted  // SEND_FAIL_REWIND: the body could not be sent again
        case 81, 95, 99: .networkConnectionLost  // AGAIN, HTTP3, UNRECOVERABLE_POLL
        case 94: .userAuthenticationRequired  // AUTH_ERROR
        // BAD_FUNCTION_ARGUMENT before the final head: libcurl 7.88's word for a head whose first field line begins
        // with white space (curl's test 1473). The transport sets every option before the transfer starts.
        case 43 where !afterResponse: .badServerResponse
        // FAILED_INIT, BAD_FUNCTION_ARGUMENT, UNKNOWN_OPTION, RECURSIVE_API_CALL and the codes of protocols this
        // transport never speaks (FTP, SSH, LDAP, ...): a fault of the program, never the network's.
        default: .unknown
        }
    }

    /// The error a transfer ends with: the table's code, with libcurl's own words (and its code under
    /// ``curlCodeKey``) in the user info. The words are for people; the code alone decides.
    static func error(
        for curlCode: Int32, scheme: String?, url: URL?, message: String, afterResponse: Bool = false, osErrno: Int = 0,
        connectCode: Int = 0, certificateVerifyResult: Int = 0
    ) -> URLError? {
        guard
            let code = code(
                for: curlCode, scheme: scheme, afterResponse: afterResponse, osErrno: osErrno, connectCode: connectCode,
                certificateVerifyResult: certificateVerifyResult)
        else { return nil }
        var info: [String: Any] = [NSLocalizedDescriptionKey: message, curlCodeKey: Int(curlCode)]
        if let url { info[NSURLErrorFailingURLErrorKey] = url }
        return URLError(code, userInfo: info)
    }

    /// The user-info key under which a ``CurlTransport`` error keeps libcurl's `CURLcode`.
    static let curlCodeKey = "NetworkQueueCurlCode"
}
