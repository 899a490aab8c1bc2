import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What libcurl's words say when its code is gone: Foundation on Linux keeps a failure's text and reports
/// `-1` (`.unknown`) for most of what libcurl names, so ``URLSessionTransport`` reads the text (lowercased) to
/// give the code a transfer over ``CurlTransport`` gives (which decides by libcurl's code, never by words).
/// Pure; tested alone.
enum LibcurlWords {
    /// The code for libcurl's words about a failure before the final head, or nil when they name nothing
    /// known (the failure stays `.unknown`).
    static func codeBeforeResponse(_ text: String) -> URLError.Code? {
        // More codings than libcurl takes; a head Foundation or libcurl could not read ("Failed writing header",
        // "Header without colon", "Too large response headers", and 7.88's "Out of memory" for a long line).
        if text.contains("encoding") { return .cannotDecodeContentData }
        if text.contains("header") || text == "out of memory" { return .badServerResponse }
        // libcurl 7.88's words for a head whose first field line begins with white space (curl's test 1473).
        if text.contains("bad argument") { return .badServerResponse }
        // A proxy that would not open the tunnel ("CONNECT tunnel failed, response 407").
        if text.contains("connect tunnel failed") || text.contains("proxy connect aborted") {
            return text.contains("response 407") ? .userAuthenticationRequired : .cannotConnectToHost
        }
        // Any other words about the proxy (its value could not be parsed or resolved) stay unknown: they may quote
        // a proxy whose name holds "ssl" or "tls", and ProxyRoutes.refine tells an unusable setting by them.
        if text.contains("proxy") { return nil }
        // The server's certificate (OpenSSL's verify words after "SSL certificate problem: ", and libcurl's own
        // host-name check).
        if text.contains("certificate has expired") { return .serverCertificateHasBadDate }
        if text.contains("certificate is not yet valid") { return .serverCertificateNotYetValid }
        if text.contains("ssl certificate problem") || text.contains("subject name")
            || text.contains("does not match target host")
        {
            return .serverCertificateUntrusted
        }
        // Any other TLS failure ("OpenSSL SSL_connect: ...", "error:0A000...", "SSL_ERROR_SYSCALL").
        if text.contains("ssl") || text.contains("tls") { return .secureConnectionFailed }
        // libcurl's code 7 ("Failed to connect to H port P after N ms: Couldn't connect to server"), which Foundation
        // leaves at -1 when the server reset the connection as it accepted it: a failed connect, as CurlTransport says
        // it, so that it is retried and counted toward a down server alike.
        if text.contains("couldn't connect to server") || text.hasPrefix("failed to connect to") {
            return .cannotConnectToHost
        }
        // libcurl's codes 52, 55 and 56 before a head: the connection closed or broke before the server answered.
        if text.contains("empty reply from server") || text.hasPrefix("send failure") || text.hasPrefix("recv failure")
        {
            return .networkConnectionLost
        }
        // libcurl's code 6.
        if text.contains("could not resolve host") || text.contains("couldn't resolve host") { return .cannotFindHost }
        return nil
    }
}
