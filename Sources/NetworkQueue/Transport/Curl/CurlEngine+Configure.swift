#if os(Linux)
    import CurlShim
    import Foundation
    import FoundationNetworking
    import Glibc

    extension CurlEngine {
        /// Sets the options every run of this transport shares, once per easy handle: handles are kept
        /// configured between runs (never `curl_easy_reset`), and ``configure(_:for:isSecure:)`` sets each
        /// option a run may change, every time. The CA bundle is copied into libcurl here, once per handle.
        func prepare(_ handle: CurlHandle) {
            let easy = handle.easy
            // Every callback finds its transfer through the handle, which outlives the handle's runs.
            let user = UnsafeRawPointer(Unmanaged.passUnretained(handle).toOpaque())
            for option in [CurlOption.writeData, .headerData, .readData, .seekData, .sockOptData, .privateData] {
                library.set(easy, option, pointer: user)
            }
            library.set(easy, .errorBuffer, pointer: handle.errorBuffer)
            names?.prepare(easy)
            // The proxies as options (an empty one means none): libcurl reads no variable then. A code-set
            // proxy's credentials are options of their own; an HTTPS proxy is checked against the same CAs.
            library.set(easy, .noProxy, string: proxies.noProxy)
            if proxies.http == proxies.https { library.set(easy, .proxy, string: proxies.http) }
            if let credentials = proxies.credentials {
                library.set(easy, .proxyUsername, string: credentials.user)
                library.set(easy, .proxyPassword, string: credentials.password)
            }
            // CURLHEADER_SEPARATE: the request's headers go to the server, the proxy list to the proxy alone.
            library.set(easy, .headerOpt, 1)
            library.set(easy, .protocolsString, string: "http,https")
            library.set(easy, .redirectProtocolsString, string: "http,https")
            library.set(easy, .followLocation, 0)
            library.set(easy, .noSignal, 1)
            library.set(easy, .tcpNoDelay, 1)
            library.set(easy, .suppressConnectHeaders, 1)
            // The transport's User-Agent goes to the server in each request's header list (``userAgentLine``), where
            // a request's own header replaces it. The option is set only for a proxy's CONNECT, which does not see the
            // list: libcurl formats the option's field before every run, whether it sends it or not.
            if let userAgent = options.userAgent, !userAgent.isEmpty, !proxies.http.isEmpty || !proxies.https.isEmpty {
                library.set(easy, .userAgent, string: userAgent)
            }
            // libcurl never decodes: it does not check that an encoded stream ended. Asked for, the codings
            // this process can decode are sent and the transfer decodes them itself.
            library.set(easy, .httpContentDecoding, 0)
            library.set(easy, .writeFunction, pointer: unsafeBitCast(curlWrite, to: UnsafeRawPointer.self))
            library.set(easy, .headerFunction, pointer: unsafeBitCast(curlHeader, to: UnsafeRawPointer.self))
            library.set(easy, .readFunction, pointer: unsafeBitCast(curlRead, to: UnsafeRawPointer.self))
            library.set(easy, .seekFunction, pointer: unsafeBitCast(curlSeek, to: UnsafeRawPointer.self))
            library.set(easy, .openSocketFunction, pointer: unsafeBitCast(curlOpenSocket, to: UnsafeRawPointer.self))
            prepareIdentity(easy)
            if let path = certificates?.path {
                library.set(easy, .caInfo, string: path)
                if proxies.isTLSProxy { library.set(easy, .proxyCAInfo, string: path) }
            } else if let pem = certificates?.pem {
                pem.withUnsafeBytes { bytes in
                    var blob = nq_curl_blob(data: bytes.baseAddress, len: UInt(bytes.count), flags: 1)
                    _ = withUnsafePointer(to: &blob) { library.set(easy, .caInfoBlob, pointer: $0) }
                    if proxies.isTLSProxy {
                        _ = withUnsafePointer(to: &blob) { library.set(easy, .proxyCAInfoBlob, pointer: $0) }
                    }
                }
            }
            // A bundle file alone, no folder of certificates beside it (libcurl's built-in one): libcurl keeps the store
            // it parsed for the next connections (see ``CurlTransport/caFolderIsLeftOut``).
            if leavesOutCAFolder { library.set(easy, .caPath, pointer: nil) }
        }

        /// The client certificate (by path to its in-memory file, a blob where none could be made) and whether
        /// servers' certificates are verified: the same for every handle, so connections stay reusable among them.
        private func prepareIdentity(_ easy: OpaquePointer) {
            if !options.verifiesServerCertificates {
                library.set(easy, .sslVerifyPeer, 0)
                library.set(easy, .sslVerifyHost, 0)
            }
            guard let client else { return }
            func set(_ pem: InMemoryPEM, _ path: CurlOption, _ blob: CurlOption) {
                if let file = pem.path {
                    library.set(easy, path, string: file)
                } else {
                    pem.pem.withUnsafeBytes { bytes in
                        var value = nq_curl_blob(data: bytes.baseAddress, len: UInt(bytes.count), flags: 1)
                        _ = withUnsafePointer(to: &value) { library.set(easy, blob, pointer: $0) }
                    }
                }
            }
            set(client.certificate, .sslCert, .sslCertBlob)
            set(client.key ?? client.certificate, .sslKey, .sslKeyBlob)
            if let password = client.keyPassword { library.set(easy, .keyPassword, string: password) }
        }

        /// Sets every option of one run of `transfer` on `easy` (a handle ``prepare(_:)`` set up, fresh or used
        /// before: each option a run may change is set here, every time) and builds its header list, which the
        /// transfer owns until the run ends.
        func configure(_ easy: OpaquePointer, for transfer: CurlTransfer, isSecure: Bool) {
            transfer.handle?.errorBuffer[0] = 0
            if let handle = transfer.handle, handle.freshConnect != transfer.isOnFreshConnection {
                library.set(easy, .freshConnect, transfer.isOnFreshConnection ? 1 : 0)
                handle.freshConnect = transfer.isOnFreshConnection
            }
            library.set(easy, .url, string: transfer.urlText)
            if let handle = transfer.handle, handle.connectTimeoutMilliseconds != transfer.connectTimeoutMilliseconds {
                library.set(easy, .connectTimeoutMilliseconds, transfer.connectTimeoutMilliseconds)
                handle.connectTimeoutMilliseconds = transfer.connectTimeoutMilliseconds
            }
            if proxies.http != proxies.https {
                library.set(easy, .proxy, string: isSecure ? proxies.https : proxies.http)
            }
            let method = transfer.method
            var headers = transfer.request?.allHTTPHeaderFields ?? [:]
            let cookies = cookieHeader(for: transfer)
            // The common case: only the User-Agent and `Accept-Encoding: identity` are added.
            let isPlain =
                headers.isEmpty && cookies == nil && transfer.body.isEmpty && (method == "GET" || method == "HEAD")
            let isPlainGet =
                isPlain && method == "GET" && transfer.rateCap?.maximumBytesPerSecond == nil
                && transfer.maximumBytesPerSecond == nil
            if isPlainGet, let handle = transfer.handle, handle.plainGet == isSecure {
                // The handle's last run was the same: every other option already has this run's value (a batch's
                // runs are nearly all alike, and setting each again cost about ten calls into libcurl a run).
                transfer.decodesBody = false
                transfer.headerLists = (nil, nil)
                return
            }
            transfer.handle?.plainGet = isPlainGet ? isSecure : nil
            // Waiting for a connection that may multiplex helps HTTP/2 only (TLS with ALPN); over plain HTTP
            // it would hold a transfer until another's response arrives.
            library.set(easy, .pipeWait, isSecure ? 1 : 0)
            library.set(easy, .forbidReuse, 0)  // a previous run's framing failure may have set it
            // Bigger reads than libcurl's 16 KiB default (256 KiB, half libcurl's largest): a sixteenth as many
            // events (each a lock round trip in the queue) for a big body; small bodies do not notice. One
            // 200 MB body to a file went from 0.81–0.87x the raw libcurl loop at 64 KiB to 1.0–1.2x.
            if let cap = transfer.rateCap?.maximumBytesPerSecond {
                // Capped: smaller reads (a thirty-second of the cap, 4–64 KiB) draw in finer steps, and a
                // new connection gets a small kernel receive buffer (see `curlSocketOptions`).
                library.set(easy, .bufferSize, min(64 << 10, max(4 << 10, cap / 32)))
                library.set(
                    easy, .sockOptFunction, pointer: unsafeBitCast(curlSocketOptions, to: UnsafeRawPointer.self))
            } else if transfer.endsAtHead {
                // Ends at its head: small reads, and a new connection's small kernel receive buffer, so that a server
                // streaming a body nobody reads fills little before the connection closes.
                library.set(easy, .bufferSize, 16 << 10)
                library.set(
                    easy, .sockOptFunction, pointer: unsafeBitCast(curlSocketOptions, to: UnsafeRawPointer.self))
            } else {
                library.set(easy, .bufferSize, Self.receiveBufferSize)
                library.set(easy, .sockOptFunction, pointer: nil)
            }
            let rate = transfer.maximumBytesPerSecond
            library.set(easy, .maxRecvSpeedLarge, offset: Int64(rate ?? 0))

            // A GET without a custom method, then what this run needs: a used handle may carry a HEAD's or a
            // POST's settings.
            library.set(easy, .httpGet, 1)
            library.set(easy, .customRequest, pointer: nil)
            if method == "HEAD" {
                library.set(easy, .noBody, 1)
            } else if !transfer.body.isEmpty || !["GET", "DELETE", "OPTIONS", "TRACE"].contains(method) {
                library.set(easy, .post, 1)
                library.set(easy, .postFieldSizeLarge, offset: transfer.bodyLength ?? -1)
                if method != "POST" { library.set(easy, .customRequest, string: method) }
                // The length goes in CURLOPT_POSTFIELDSIZE_LARGE; libcurl writes the header itself.
                for name in headers.keys where HeaderName.matches(name, lowercased: "content-length") {
                    headers[name] = nil
                }
                // libcurl would add a form Content-Type and an `Expect: 100-continue` wait: send neither.
                if !headers.keys.contains(where: { HeaderName.matches($0, lowercased: "content-type") }) {
                    headers["Content-Type"] = ""
                }
                if !headers.keys.contains(where: { HeaderName.matches($0, lowercased: "expect") }) {
                    headers["Expect"] = ""
                }
            } else if method != "GET" {
                library.set(easy, .customRequest, string: method)
            }
            if isPlain {
                // From one list the engine keeps.
                transfer.decodesBody = false
                transfer.headerLists = (nil, nil)
                library.set(easy, .httpHeader, pointer: UnsafeRawPointer(plainHeaders()))
                return
            }
            // A request's own proxy credentials go to the proxy alone (nowhere when there is none): never to the
            // server, in a tunnel or not.
            if let proxyAuthorization = headers.first(where: {
                HeaderName.matches($0.key, lowercased: "proxy-authorization")
            }) {
                headers[proxyAuthorization.key] = nil
                let line = "\(proxyAuthorization.key): \(proxyAuthorization.value)"
                transfer.headerLists.proxy = line.withCString { library.slistAppend(nil, $0) }
                library.set(easy, .proxyHeader, pointer: transfer.headerLists.proxy.map { UnsafeRawPointer($0) })
            }
            let acceptEncoding = headers.first { HeaderName.matches($0.key, lowercased: "accept-encoding") }
            transfer.decodesBody = acceptEncoding != nil
            if let acceptEncoding {
                headers[acceptEncoding.key] = DecoderLibrary.shared.acceptEncoding(acceptEncoding.value)
            } else {
                headers["Accept-Encoding"] = "identity"
            }
            if let cookies {
                let own = headers.first { HeaderName.matches($0.key, lowercased: "cookie") }
                headers[own?.key ?? "Cookie"] = own.map { "\($0.value); \(cookies)" } ?? cookies
            }
            var list: OpaquePointer?
            if let line = userAgentLine,
                !headers.keys.contains(where: { HeaderName.matches($0, lowercased: "user-agent") })
            {
                list = line.withCString { library.slistAppend(nil, $0) }
            }
            for (name, value) in headers {
                // "Name:" removes a header libcurl would add; "Name;" sends one with an empty value.
                let isRemoval = value.isEmpty && (name == "Content-Type" || name == "Expect")
                let line = isRemoval ? "\(name):" : value.isEmpty ? "\(name);" : "\(name): \(value)"
                list = line.withCString { library.slistAppend(list, $0) } ?? list
            }
            transfer.headerLists.server = list
            library.set(easy, .httpHeader, pointer: list.map { UnsafeRawPointer($0) })
        }

        // MARK: Cookies and connections (engine thread)

        /// The `Cookie` header the jar has for the URL of `transfer`'s run, if any (its URL is parsed only when the jar
        /// holds a cookie: a batch's jar is most often empty, and parsing cost about 1% of the engine thread's time).
        func cookieHeader(for transfer: CurlTransfer) -> String? {
            guard let cookieJar, !cookieJar.withLock({ $0.cookies.isEmpty }) else { return nil }
            let url = transfer.url
            return cookieJar.withLock { $0.header(for: url, now: Date()) }
        }

        /// Stores the cookies of a head that passed every check, set by the URL of `transfer`'s run.
        func storeCookies(_ setCookies: [String], from transfer: CurlTransfer) {
            guard !setCookies.isEmpty, let cookieJar else { return }
            let url = transfer.url
            cookieJar.withLock { $0.store(setCookies, from: url, now: Date()) }
        }

        /// Closes the transfer's connection when its run ends instead of keeping it for reuse: the response
        /// was framed two ways (RFC 9112 §6.3), so what follows it on the connection cannot be trusted.
        func forbidReuse(of transfer: CurlTransfer) {
            guard let easy = transfer.easy else { return }
            transfer.handle?.plainGet = nil
            library.set(easy, .forbidReuse, 1)
        }
    }

    // MARK: libcurl callbacks: C functions that find their transfer through the handle, the user pointer.

    private let curlWrite: @convention(c) (UnsafeMutableRawPointer?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
        data, size, count, user in
        let transfer = Unmanaged<CurlHandle>.fromOpaque(user!).takeUnretainedValue().transfer!
        return transfer.receivedBody(UnsafeRawBufferPointer(start: data, count: size * count))
    }

    private let curlHeader: @convention(c) (UnsafeMutableRawPointer?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
        data, size, count, user in
        let transfer = Unmanaged<CurlHandle>.fromOpaque(user!).takeUnretainedValue().transfer!
        return transfer.receivedHeader(UnsafeRawBufferPointer(start: data, count: size * count)) ? size * count : 0
    }

    private let curlRead: @convention(c) (UnsafeMutableRawPointer?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
        buffer, size, count, user in
        let transfer = Unmanaged<CurlHandle>.fromOpaque(user!).takeUnretainedValue().transfer!
        return transfer.readBody(into: buffer!, capacity: size * count)
    }

    /// CURLOPT_SOCKOPTFUNCTION, for a capped transfer's new connection: a kernel receive buffer of a sixty-fourth
    /// of the cap (4–256 KiB) keeps the TCP window, and so the wire, close to the cap; for a transfer that ends at its
    /// head, 16 KiB. CURL_SOCKOPT_OK is 0.
    private let curlSocketOptions: @convention(c) (UnsafeMutableRawPointer?, Int32, Int32) -> Int32 = {
        user, socket, _ in
        let transfer = Unmanaged<CurlHandle>.fromOpaque(user!).takeUnretainedValue().transfer!
        let wanted = transfer.rateCap?.maximumBytesPerSecond.map { min(256 << 10, max(4 << 10, $0 / 64)) }
        guard let bytes = wanted ?? (transfer.endsAtHead ? 16 << 10 : nil) else { return 0 }
        var size = Int32(bytes)
        _ = setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        return 0
    }

    /// CURLOPT_OPENSOCKETFUNCTION: every connection's socket is opened close-on-exec (`SOCK_CLOEXEC`, at once, so no
    /// process started meanwhile gets it). libcurl before 8.17 opens them without it: a program the app starts
    /// would inherit every open connection and hold it open while it lives, so that a cancelled transfer's server
    /// never saw it close and kept sending. The address is libcurl's `struct curl_sockaddr`, whose first three
    /// fields are `int`s: family, type and protocol. Returns the socket, or CURL_SOCKET_BAD (-1).
    private let curlOpenSocket:
        @convention(c) (UnsafeMutableRawPointer?, Int32, UnsafeMutablePointer<Int32>?) -> Int32 =
            { _, _, address in
                guard let address else { return -1 }
                return socket(address[0], address[1] | Int32(SOCK_CLOEXEC.rawValue), address[2])
            }

    /// CURLOPT_SEEKFUNCTION: only a rewind to the start is ever needed (CURL_SEEKFUNC_OK 0, CANTSEEK 2).
    private let curlSeek: @convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int32 = { user, offset, origin in
        let transfer = Unmanaged<CurlHandle>.fromOpaque(user!).takeUnretainedValue().transfer!
        guard offset == 0, origin == SEEK_SET, transfer.rewindBody() else { return 2 }
        return 0
    }
#endif
