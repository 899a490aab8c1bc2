#if os(Linux)
    import CurlShim
    import Foundation
    import FoundationNetworking
    import Glibc

    extension CurlEngine {
        /// Sets every option of one run of `transfer` on `easy` (a fresh or reset handle) and builds its
        /// header list, which the transfer owns until the run ends.
        func configure(_ easy: OpaquePointer, for transfer: CurlTransfer, isSecure: Bool) {
            let request = transfer.request
            let user = UnsafeRawPointer(Unmanaged.passUnretained(transfer).toOpaque())
            library.set(easy, .url, string: transfer.url.absoluteString)
            library.set(easy, .protocolsString, string: "http,https")
            library.set(easy, .redirectProtocolsString, string: "http,https")
            library.set(easy, .followLocation, 0)
            library.set(easy, .noSignal, 1)
            library.set(easy, .tcpNoDelay, 1)
            // Waiting for a connection that may multiplex helps HTTP/2 only (TLS with ALPN); over plain HTTP
            // it would hold a transfer until another's response arrives.
            if isSecure { library.set(easy, .pipeWait, 1) }
            library.set(easy, .suppressConnectHeaders, 1)
            // Bigger reads than libcurl's 16 KiB default: a quarter as many events (each a lock round trip
            // in the queue) for a big body; small bodies do not notice.
            if let cap = transfer.limiter?.bytesPerSecond {
                // Capped: smaller reads (a thirty-second of the cap, 4–64 KiB) draw in finer steps, and a
                // new connection gets a small kernel receive buffer (see `curlSocketOptions`).
                library.set(easy, .bufferSize, min(Self.receiveBufferSize, max(4 << 10, cap / 32)))
                library.set(easy, .sockOptFunction, pointer: unsafeBitCast(curlSocketOptions, to: UnsafeRawPointer.self))
                library.set(easy, .sockOptData, pointer: user)
            } else {
                library.set(easy, .bufferSize, Self.receiveBufferSize)
            }
            library.set(easy, .errorBuffer, pointer: transfer.errorBuffer)
            library.set(easy, .writeFunction, pointer: unsafeBitCast(curlWrite, to: UnsafeRawPointer.self))
            library.set(easy, .writeData, pointer: user)
            library.set(easy, .headerFunction, pointer: unsafeBitCast(curlHeader, to: UnsafeRawPointer.self))
            library.set(easy, .headerData, pointer: user)
            if let certificates {
                certificates.withUnsafeBytes { bytes in
                    var blob = nq_curl_blob(data: bytes.baseAddress, len: UInt(bytes.count), flags: 1)
                    _ = withUnsafePointer(to: &blob) { library.set(easy, .caInfoBlob, pointer: $0) }
                }
            }
            if let rate = transfer.shared.withLock({ $0.maximumReceiveRate }) {
                library.set(easy, .maxRecvSpeedLarge, offset: Int64(rate))
            }

            let method = (request.httpMethod ?? "GET").uppercased()
            var headers = request.allHTTPHeaderFields ?? [:]
            // libcurl never decodes: it does not check that an encoded stream ended. Asked for, the codings
            // this process can decode are sent and the transfer decodes them itself.
            library.set(easy, .httpContentDecoding, 0)
            let acceptEncoding = headers.first { HeaderName.matches($0.key, lowercased: "accept-encoding") }
            transfer.decodesBody = acceptEncoding != nil
            if let acceptEncoding {
                headers[acceptEncoding.key] = DecoderLibrary.shared.acceptEncoding(acceptEncoding.value)
            } else {
                headers["Accept-Encoding"] = "identity"
            }
            if let cookies = cookieHeader(for: transfer.url) {
                let own = headers.first { HeaderName.matches($0.key, lowercased: "cookie") }
                headers[own?.key ?? "Cookie"] = own.map { "\($0.value); \(cookies)" } ?? cookies
            }
            if method == "HEAD" {
                library.set(easy, .noBody, 1)
            } else if !transfer.body.isEmpty || !["GET", "DELETE", "OPTIONS", "TRACE"].contains(method) {
                library.set(easy, .post, 1)
                library.set(easy, .postFieldSizeLarge, offset: transfer.bodyLength ?? -1)
                library.set(easy, .readFunction, pointer: unsafeBitCast(curlRead, to: UnsafeRawPointer.self))
                library.set(easy, .readData, pointer: user)
                library.set(easy, .seekFunction, pointer: unsafeBitCast(curlSeek, to: UnsafeRawPointer.self))
                library.set(easy, .seekData, pointer: user)
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
            var list: OpaquePointer?
            for (name, value) in headers {
                // "Name:" removes a header libcurl would add; "Name;" sends one with an empty value.
                let isRemoval = value.isEmpty && (name == "Content-Type" || name == "Expect")
                let line = isRemoval ? "\(name):" : value.isEmpty ? "\(name);" : "\(name): \(value)"
                list = line.withCString { library.slistAppend(list, $0) } ?? list
            }
            transfer.headerList = list
            library.set(easy, .httpHeader, pointer: list.map { UnsafeRawPointer($0) })
        }
    }

    // MARK: libcurl callbacks: C functions that find their transfer through the user pointer.

    private let curlWrite: @convention(c) (UnsafeMutableRawPointer?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
        data, size, count, user in
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(user!).takeUnretainedValue()
        return transfer.receivedBody(UnsafeRawBufferPointer(start: data, count: size * count))
    }

    private let curlHeader: @convention(c) (UnsafeMutableRawPointer?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
        data, size, count, user in
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(user!).takeUnretainedValue()
        return transfer.receivedHeader(UnsafeRawBufferPointer(start: data, count: size * count)) ? size * count : 0
    }

    private let curlRead: @convention(c) (UnsafeMutableRawPointer?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
        buffer, size, count, user in
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(user!).takeUnretainedValue()
        return transfer.readBody(into: buffer!, capacity: size * count)
    }

    /// CURLOPT_SOCKOPTFUNCTION, for a capped transfer's new connection: a kernel receive buffer of a sixty-fourth
    /// of the cap (4–256 KiB) keeps the TCP window, and so the wire, close to the cap. CURL_SOCKOPT_OK is 0.
    private let curlSocketOptions: @convention(c) (UnsafeMutableRawPointer?, Int32, Int32) -> Int32 = { user, socket, _ in
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(user!).takeUnretainedValue()
        guard let cap = transfer.limiter?.bytesPerSecond else { return 0 }
        var size = Int32(min(256 << 10, max(4 << 10, cap / 64)))
        _ = setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        return 0
    }

    /// CURLOPT_SEEKFUNCTION: only a rewind to the start is ever needed (CURL_SEEKFUNC_OK 0, CANTSEEK 2).
    private let curlSeek: @convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int32 = { user, offset, origin in
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(user!).takeUnretainedValue()
        guard offset == 0, origin == SEEK_SET, transfer.rewindBody() else { return 2 }
        return 0
    }
#endif
