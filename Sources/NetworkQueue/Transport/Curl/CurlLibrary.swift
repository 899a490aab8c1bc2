#if os(Linux)
    import CurlShim
    import Foundation
    import Glibc

    /// libcurl, opened at run time with `dlopen("libcurl.so.4")`: the library FoundationNetworking itself
    /// links, so wherever `URLSession` works it is installed. No header, no -dev package, no link flag.
    ///
    /// Immutable once loaded (function pointers only), hence `@unchecked Sendable`.
    final class CurlLibrary: @unchecked Sendable {
        typealias Handle = OpaquePointer

        let easyInit: @convention(c) () -> Handle?
        let easyCleanup: @convention(c) (Handle?) -> Void
        let easyReset: @convention(c) (Handle?) -> Void
        let easyPause: @convention(c) (Handle?, Int32) -> Int32
        let easyStrerror: @convention(c) (Int32) -> UnsafePointer<CChar>?
        let slistAppend: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> OpaquePointer?
        let slistFreeAll: @convention(c) (OpaquePointer?) -> Void
        let multiInit: @convention(c) () -> Handle?
        let multiCleanup: @convention(c) (Handle?) -> Int32
        let multiAdd: @convention(c) (Handle?, Handle?) -> Int32
        let multiRemove: @convention(c) (Handle?, Handle?) -> Int32
        let multiPerform: @convention(c) (Handle?, UnsafeMutablePointer<Int32>?) -> Int32
        let multiPoll:
            @convention(c) (Handle?, UnsafeMutableRawPointer?, UInt32, Int32, UnsafeMutablePointer<Int32>?) -> Int32
        let multiWakeup: @convention(c) (Handle?) -> Int32
        let multiInfoRead: @convention(c) (Handle?, UnsafeMutablePointer<Int32>?) -> UnsafeMutableRawPointer?
        let shareInit: @convention(c) () -> Handle?
        let shareCleanup: @convention(c) (Handle?) -> Int32
        /// curl_share_setopt, called through the shim (``shareDNS(_:locks:)``).
        private let shareSetopt: UnsafeMutableRawPointer
        private let easySetopt: UnsafeMutableRawPointer
        private let easyGetinfo: UnsafeMutableRawPointer
        private let multiSetopt: UnsafeMutableRawPointer

        /// The version found, e.g. "7.88.1".
        let version: String
        /// Whether this libcurl can speak HTTP/2 (ALPN on TLS connections).
        let supportsHTTP2: Bool
        /// Whether this libcurl was built with TLS (CURL_VERSION_SSL): without it, `https` cannot work.
        let supportsTLS: Bool

        /// The oldest libcurl used: `curl_multi_poll` and `curl_multi_wakeup` came in 7.68.0.
        static let minimumVersion: UInt32 = 0x07_44_00

        /// The library, loaded on first use; the same answer for the life of the process.
        static let shared: Result<CurlLibrary, CurlTransport.LoadError> = {
            do throws(CurlTransport.LoadError) {
                return .success(try CurlLibrary())
            } catch {
                return .failure(error)
            }
        }()

        private init() throws(CurlTransport.LoadError) {
            guard let library = SharedLibrary.open(["libcurl.so.4", "libcurl.so"]) else {
                throw .libraryNotFound(reason: dlerror().map { String(cString: $0) } ?? "dlopen failed")
            }
            func symbol(_ name: String) throws(CurlTransport.LoadError) -> UnsafeMutableRawPointer {
                guard let pointer = dlsym(library, name) else { throw .missingFunction(name) }
                return pointer
            }
            func function<F>(_ name: String, as type: F.Type) throws(CurlTransport.LoadError) -> F {
                unsafeBitCast(try symbol(name), to: type)
            }
            let globalInit = try function("curl_global_init", as: (@convention(c) (Int) -> Int32).self)
            let versionInfo = try function(
                "curl_version_info", as: (@convention(c) (Int32) -> UnsafePointer<nq_curl_version_info>?).self)
            // CURLVERSION_FOURTH is enough for the leading fields read here; every later version has them.
            guard let info = versionInfo(3)?.pointee else { throw .missingFunction("curl_version_info") }
            version = info.version.map { String(cString: $0) } ?? "unknown"
            guard info.version_num >= Self.minimumVersion else { throw .tooOld(version: version) }
            supportsHTTP2 = info.features & (1 << 16) != 0
            supportsTLS = info.features & (1 << 2) != 0
            // CURL_GLOBAL_ALL. Thread-safe from 7.84 on; FoundationNetworking has usually called it already.
            guard globalInit(3) == 0 else { throw .initializationFailed }

            easyInit = try function("curl_easy_init", as: (@convention(c) () -> Handle?).self)
            easyCleanup = try function("curl_easy_cleanup", as: (@convention(c) (Handle?) -> Void).self)
            easyReset = try function("curl_easy_reset", as: (@convention(c) (Handle?) -> Void).self)
            easyPause = try function("curl_easy_pause", as: (@convention(c) (Handle?, Int32) -> Int32).self)
            easyStrerror = try function(
                "curl_easy_strerror", as: (@convention(c) (Int32) -> UnsafePointer<CChar>?).self)
            slistAppend = try function(
                "curl_slist_append", as: (@convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> OpaquePointer?).self
            )
            slistFreeAll = try function("curl_slist_free_all", as: (@convention(c) (OpaquePointer?) -> Void).self)
            multiInit = try function("curl_multi_init", as: (@convention(c) () -> Handle?).self)
            multiCleanup = try function("curl_multi_cleanup", as: (@convention(c) (Handle?) -> Int32).self)
            multiAdd = try function("curl_multi_add_handle", as: (@convention(c) (Handle?, Handle?) -> Int32).self)
            multiRemove = try function(
                "curl_multi_remove_handle", as: (@convention(c) (Handle?, Handle?) -> Int32).self)
            multiPerform = try function(
                "curl_multi_perform", as: (@convention(c) (Handle?, UnsafeMutablePointer<Int32>?) -> Int32).self)
            multiPoll = try function(
                "curl_multi_poll",
                as: (@convention(c) (Handle?, UnsafeMutableRawPointer?, UInt32, Int32, UnsafeMutablePointer<Int32>?) ->
                    Int32)
                    .self)
            multiWakeup = try function("curl_multi_wakeup", as: (@convention(c) (Handle?) -> Int32).self)
            multiInfoRead = try function(
                "curl_multi_info_read",
                as: (@convention(c) (Handle?, UnsafeMutablePointer<Int32>?) -> UnsafeMutableRawPointer?).self)
            shareInit = try function("curl_share_init", as: (@convention(c) () -> Handle?).self)
            shareCleanup = try function("curl_share_cleanup", as: (@convention(c) (Handle?) -> Int32).self)
            shareSetopt = try symbol("curl_share_setopt")
            easySetopt = try symbol("curl_easy_setopt")
            easyGetinfo = try symbol("curl_easy_getinfo")
            multiSetopt = try symbol("curl_multi_setopt")
        }

        // MARK: Variadic calls, through the C shim

        @discardableResult
        func set(_ easy: Handle, _ option: CurlOption, _ value: Int) -> Int32 {
            nq_setopt_long(easySetopt, UnsafeMutableRawPointer(easy), option.rawValue, value)
        }

        @discardableResult
        func set(_ easy: Handle, _ option: CurlOption, pointer value: UnsafeRawPointer?) -> Int32 {
            nq_setopt_pointer(easySetopt, UnsafeMutableRawPointer(easy), option.rawValue, value)
        }

        @discardableResult
        func set(_ easy: Handle, _ option: CurlOption, offset value: Int64) -> Int32 {
            nq_setopt_offset(easySetopt, UnsafeMutableRawPointer(easy), option.rawValue, value)
        }

        /// Sets a string option; libcurl copies strings it is given, so the Swift string may go.
        @discardableResult
        func set(_ easy: Handle, _ option: CurlOption, string value: String) -> Int32 {
            value.withCString { nq_setopt_pointer(easySetopt, UnsafeMutableRawPointer(easy), option.rawValue, $0) }
        }

        /// Makes `share` share the DNS cache, with the shim's lock callbacks over `locks`; false when libcurl refused.
        func shareDNS(_ share: Handle, locks: UnsafeMutableRawPointer) -> Bool {
            nq_share_dns(shareSetopt, UnsafeMutableRawPointer(share), locks) == 0
        }

        @discardableResult
        func setMulti(_ multi: Handle, _ option: Int32, _ value: Int) -> Int32 {
            nq_setopt_long(multiSetopt, UnsafeMutableRawPointer(multi), option, value)
        }

        /// CURLINFO_OS_ERRNO of a finished run: the system's error number behind a failed receive, 0 when
        /// libcurl itself refused what it received.
        func osErrno(_ easy: Handle) -> Int {
            var number = 0
            _ = nq_getinfo(easyGetinfo, UnsafeMutableRawPointer(easy), 0x20_0000 + 25, &number)
            return number
        }

        /// CURLINFO_NUM_CONNECTS of a finished run: the connections it opened (0: it ran on a reused one).
        func newConnections(_ easy: Handle) -> Int {
            var number = 0
            _ = nq_getinfo(easyGetinfo, UnsafeMutableRawPointer(easy), 0x20_0000 + 26, &number)
            return number
        }

        /// CURLINFO_SSL_VERIFYRESULT of a finished run: OpenSSL's verify result for the server's certificate
        /// (`X509_V_ERR_*`: 9 not yet valid, 10 expired; 0 when it verified or was not checked).
        func certificateVerifyResult(_ easy: Handle) -> Int {
            var number = 0
            _ = nq_getinfo(easyGetinfo, UnsafeMutableRawPointer(easy), 0x20_0000 + 13, &number)
            return number
        }

        /// CURLINFO_HTTP_CONNECTCODE of a finished run: the proxy's answer to its `CONNECT` (0: none was sent).
        func connectCode(_ easy: Handle) -> Int {
            var number = 0
            _ = nq_getinfo(easyGetinfo, UnsafeMutableRawPointer(easy), 0x20_0000 + 22, &number)
            return number
        }

        /// What libcurl measured of the run that just ended on `easy` (CURLINFO_*_TIME_T, sizes, version, peer).
        func runInfo(_ easy: Handle) -> CurlRunInfo {
            let handle = UnsafeMutableRawPointer(easy)
            func offset(_ info: Int32) -> Int64 {
                var value: Int64 = 0
                return nq_getinfo(easyGetinfo, handle, 0x60_0000 + info, &value) == 0 ? value : 0
            }
            func long(_ info: Int32) -> Int {
                var value = 0
                return nq_getinfo(easyGetinfo, handle, 0x20_0000 + info, &value) == 0 ? value : 0
            }
            var address: UnsafePointer<CChar>?
            let hasAddress = nq_getinfo(easyGetinfo, handle, 0x10_0000 + 32, &address) == 0
            return CurlRunInfo(
                lookupEnded: offset(51), connectEnded: offset(52), handshakeEnded: offset(56), firstByte: offset(54),
                connections: long(26), headerBytes: long(11), requestBytes: long(12), uploadedBytes: offset(7),
                downloadedBytes: offset(8), httpVersion: long(46),
                remoteAddress: hasAddress ? address.flatMap { $0.pointee == 0 ? nil : String(cString: $0) } : nil,
                remotePort: long(40))
        }

        /// CURLINFO_CAINFO (7.84+): the CA bundle this libcurl was built to use, if any.
        func defaultCABundle(_ easy: Handle) -> String? {
            var path: UnsafePointer<CChar>?
            guard nq_getinfo(easyGetinfo, UnsafeMutableRawPointer(easy), 0x10_0000 + 61, &path) == 0, let path else {
                return nil
            }
            return String(cString: path)
        }

        /// The pointer set with CURLOPT_PRIVATE (CURLINFO_PRIVATE is CURLINFO_STRING + 21).
        func privateData(_ easy: Handle) -> UnsafeMutableRawPointer? {
            var pointer: UnsafeMutableRawPointer?
            guard nq_getinfo(easyGetinfo, UnsafeMutableRawPointer(easy), 0x10_0000 + 21, &pointer) == 0 else {
                return nil
            }
            return pointer
        }

        /// libcurl's one-line text for a CURLcode.
        func message(for code: Int32) -> String {
            easyStrerror(code).map { String(cString: $0) } ?? "curl error \(code)"
        }
    }

    /// The `CURLoption` values used, from libcurl's documented option numbers (type base + number).
    enum CurlOption: Int32 {
        case writeData = 10_001
        case privateData = 10_103
        case url = 10_002
        case proxy = 10_004
        case noProxy = 10_177
        case proxyUsername = 10_175
        case proxyPassword = 10_176
        case proxyHeader = 10_228
        case headerOpt = 229
        case proxyCAInfo = 10_246
        case proxyCAInfoBlob = 40_310
        case readData = 10_009
        case errorBuffer = 10_010
        case writeFunction = 20_011
        case readFunction = 20_012
        case httpHeader = 10_023
        case headerData = 10_029
        case customRequest = 10_036
        case userAgent = 10_018
        case noProgress = 43
        case noBody = 44
        case post = 47
        case followLocation = 52
        case sslVerifyPeer = 64
        case freshConnect = 74
        case forbidReuse = 75
        case headerFunction = 20_079
        case httpGet = 80
        case sslVerifyHost = 81
        case httpVersion = 84
        case noSignal = 99
        case bufferSize = 98
        case acceptEncoding = 10_102
        case postFieldSizeLarge = 30_120
        case tcpNoDelay = 121
        case maxRecvSpeedLarge = 30_146
        case connectTimeoutMilliseconds = 156
        case httpTransferDecoding = 157
        case httpContentDecoding = 158
        case pipeWait = 237
        case protocolsString = 10_318
        case redirectProtocolsString = 10_319
        case seekFunction = 20_167
        case seekData = 10_168
        case suppressConnectHeaders = 265
        case sockOptFunction = 20_148
        case openSocketFunction = 20_163
        case sockOptData = 10_149
        case caInfoBlob = 40_309
        case caInfo = 10_065
        case caPath = 10_097
        case sslCert = 10_025
        case keyPassword = 10_026
        case sslKey = 10_087
        case sslCertBlob = 40_291
        case sslKeyBlob = 40_292
        case share = 10_100
        case resolve = 10_203
    }
#endif
