#if os(Linux)
    /// One easy handle and what stays with it from run to run: the user pointer every callback gets (set once,
    /// see ``CurlEngine/prepare(_:)``), the buffer libcurl writes its error text into, and the transfer whose run
    /// it carries (engine thread only).
    final class CurlHandle {
        let easy: OpaquePointer
        /// libcurl writes its detailed error text here (CURL_ERROR_SIZE is 256); cleared for each run.
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: 256)
        /// The transfer of the current run; nil between runs. Not retained: the transfer holds its handle
        /// while it runs, and the engine's active set holds the transfer.
        unowned(unsafe) var transfer: CurlTransfer?
        /// Set when the handle's last run was a plain GET (no header, body, cookie, cap or rate of its own) and nothing
        /// changed its options since: the next plain GET with the same security sets only its URL (see
        /// ``CurlEngine/configure(_:for:isSecure:)``). The value is the run's `isSecure`.
        var plainGet: Bool?
        /// True while CURLOPT_FRESH_CONNECT is set on the handle (a run sent again on a new connection).
        var freshConnect = false
        /// CURLOPT_CONNECTTIMEOUT_MS as last set on the handle (0: libcurl's own bound).
        var connectTimeoutMilliseconds = 0

        init(_ easy: OpaquePointer) {
            self.easy = easy
            errorBuffer.initialize(repeating: 0, count: 256)
        }

        deinit { errorBuffer.deallocate() }
    }
#endif
