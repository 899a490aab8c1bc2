import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What a queue gets without being told: its transport, and the most transfers the system lets it run.
extension NetworkQueue {
    /// This library's version, "0.7.0".
    public static let version = "0.7.0"

    /// The `User-Agent` both transports send by default, `NetworkQueue/<version>` (on Linux and Apple platforms
    /// alike): a request's own `User-Agent` header replaces it, and so does a transport's setting
    /// (``CurlTransport/Options/userAgent``, or a `User-Agent` in the session configuration's
    /// `httpAdditionalHeaders` for ``URLSessionTransport``). Many servers refuse or slow requests that carry none.
    public static let defaultUserAgent = "NetworkQueue/\(version)"

    /// The most transfers any queue runs at once, whatever its ``maxConcurrentRequestCount``: half of the
    /// process's open-file limit (`RLIMIT_NOFILE`, read once) less a reserve of 64 descriptors, at least 16 and
    /// at most 4,096.
    ///
    /// A transfer may hold two descriptors (its connection and its part file), so a queue within this ceiling
    /// never fails a request for want of one, and "unlimited" (0) never means opening every socket at once.
    public static let concurrencyCeiling: Int = {
        var limits = rlimit()
        #if os(Linux)
            let resource = Int32(RLIMIT_NOFILE.rawValue)
        #else
            let resource = RLIMIT_NOFILE
        #endif
        guard getrlimit(resource, &limits) == 0 else { return 4_096 }
        let open = limits.rlim_cur >= UInt64(Int.max) ? Int.max : Int(limits.rlim_cur)
        return min(4_096, max(16, (open - 64) / 2))
    }()

    /// The transport a queue gets by default: on Linux a new ``CurlTransport`` with default options, or a
    /// new ``URLSessionTransport`` when libcurl cannot be loaded (``CurlTransport/isAvailable`` says which);
    /// on Apple platforms a new ``URLSessionTransport``.
    public static func makeDefaultTransport() -> any Transport {
        #if os(Linux)
            if let curl = try? CurlTransport() { return curl }
        #endif
        return URLSessionTransport()
    }

    /// Why ``makeDefaultTransport()`` falls back to ``URLSessionTransport`` on Linux, and what that costs;
    /// nil where it does not fall back (libcurl loads, or an Apple platform, where URLSession is the default).
    ///
    /// Over FoundationNetworking some hostile responses cannot be caught: a server that sends a status line
    /// and closes the connection crashes the process inside Foundation, a bare CR or LF in a header field
    /// cannot be seen, and a gzip stream cut short passes as a short body (see the README's table of
    /// transport differences).
    public static var defaultTransportFallbackReason: String? {
        #if os(Linux)
            switch CurlTransport.loadResult {
            case .success: return nil
            case .failure(let error):
                return "\(error); using URLSessionTransport, where a status line followed by a close crashes "
                    + "FoundationNetworking, bare CR/LF in header fields go undetected and a truncated gzip body "
                    + "passes as a short one"
            }
        #else
            return nil
        #endif
    }
}
