#if os(Linux)
    import CurlShim
    import Foundation
    import FoundationNetworking
    import Glibc

    /// One libcurl multi handle driven by one dedicated thread: `curl_multi_perform`, then
    /// `curl_multi_poll`, woken by `curl_multi_wakeup` when another thread posts work.
    ///
    /// Only the engine's thread calls libcurl; other threads only post to the inbox. The engine-thread
    /// state below is touched by that thread alone, hence `@unchecked Sendable`.
    final class CurlEngine: @unchecked Sendable {
        enum Work {
            case start(CurlTransfer)
            case cancel(CurlTransfer)
            case update(CurlTransfer)
        }

        private struct Inbox {
            var work: [Work] = []
            var isWakePending = false
            var isStopping = false
            /// The multi handle is gone: nobody may wake it any more.
            var isClosed = false
            var engineThread: pthread_t?
        }

        let library: CurlLibrary
        let options: CurlTransport.Options
        private let multi: OpaquePointer
        private let share: OpaquePointer?
        private let inbox = Locked(Inbox())
        /// The extra CA certificates with the system's, as one PEM blob, when asked for.
        private let certificates: Data?

        // The engine thread's state.
        private var active: [OpaquePointer: CurlTransfer] = [:]
        private var spareHandles: [OpaquePointer] = []
        private static let maximumSpareHandles = 16
        static let receiveBufferSize = 64 << 10

        init(library: CurlLibrary, options: CurlTransport.Options, certificates: Data?) throws(CurlTransport.LoadError) {
            guard let multi = library.multiInit() else { throw .initializationFailed }
            self.library = library
            self.options = options
            self.multi = multi
            self.certificates = certificates
            // CURLMOPT_MAXCONNECTS: connections kept open for reuse.
            library.setMulti(multi, 6, max(1, options.maximumCachedConnections))
            if options.cookies == .ephemeral, let share = library.shareInit() {
                // CURLSHOPT_SHARE = 1, CURL_LOCK_DATA_COOKIE = 2: one cookie store for every transfer. The
                // engine's single thread is the only user, so no lock callbacks are needed.
                library.setShare(share, 1, 2)
                self.share = share
            } else {
                self.share = nil
            }
        }

        /// Numbers engine threads, so that each has a name of its own.
        private static let serial = Locked(0)

        /// Starts the engine's thread; it keeps the engine alive until ``stop()``. Returns its name.
        func start() -> String {
            let number = Self.serial.withLock { serial in
                serial += 1
                return serial
            }
            // Linux keeps 15 characters of a thread's name.
            let name = "nq-curl-\(number % 1_000_000)"
            let thread = Thread { [self] in
                nq_name_current_thread(name)
                self.run()
            }
            thread.name = name
            thread.qualityOfService = .userInitiated
            thread.start()
            return name
        }

        /// Asks the thread to end: transfers still running end with `.cancelled`.
        func stop() {
            inbox.withLock { inbox in
                inbox.isStopping = true
                if !inbox.isClosed { _ = library.multiWakeup(multi) }
            }
        }

        /// Hands work to the engine's thread; never blocks on libcurl.
        /// The wake-up is sent under the inbox's lock, which the engine's thread takes to close the multi
        /// handle: a handle cancelled after its transport is gone never touches a freed multi handle.
        func post(_ work: Work) {
            inbox.withLock { inbox in
                guard !inbox.isClosed else { return }
                inbox.work.append(work)
                // The engine's own thread checks the inbox before it polls again: no wake-up needed.
                if let engine = inbox.engineThread, pthread_equal(engine, pthread_self()) != 0 { return }
                guard !inbox.isWakePending else { return }
                inbox.isWakePending = true
                _ = library.multiWakeup(multi)
            }
        }

        // MARK: The loop (engine thread)

        private func run() {
            inbox.withLock { $0.engineThread = pthread_self() }
            var running: Int32 = 0
            while true {
                let (work, isStopping) = inbox.withLock { inbox in
                    defer {
                        inbox.work.removeAll(keepingCapacity: true)
                        inbox.isWakePending = false
                    }
                    return (inbox.work, inbox.isStopping)
                }
                if isStopping { return shutDown() }
                for item in work { apply(item) }
                _ = library.multiPerform(multi, &running)
                collectCompleted()
                let hasWork = inbox.withLock { !$0.work.isEmpty || $0.isStopping }
                if !hasWork { _ = library.multiPoll(multi, nil, 0, 1000, nil) }
            }
        }

        private func apply(_ work: Work) {
            switch work {
            case .start(let transfer):
                guard !transfer.isCancelled else { return }
                begin(transfer)
            case .cancel(let transfer):
                // Removing a transfer before its end closes its HTTP/1 connection (an HTTP/2 stream is reset).
                guard let easy = transfer.easy, active.removeValue(forKey: easy) != nil else { return }
                _ = library.multiRemove(multi, easy)
                finish(transfer, easy: easy)
            case .update(let transfer):
                guard let easy = transfer.easy, active[easy] != nil else { return }
                let (paused, rate) = transfer.shared.withLock { ($0.isPaused, $0.maximumReceiveRate) }
                library.set(easy, .maxRecvSpeedLarge, offset: Int64(rate ?? 0))
                // CURLPAUSE_RECV = 1, CURLPAUSE_CONT = 0.
                _ = library.easyPause(easy, paused ? 1 : 0)
            }
        }

        /// Configures an easy handle for the transfer's current request and adds it to the multi handle.
        private func begin(_ transfer: CurlTransfer) {
            if !library.supportsTLS, transfer.url.scheme?.lowercased() == "https" {
                // A libcurl without TLS would call this an unsupported protocol: say it plainly.
                return transfer.emit(.completed(URLError(.secureConnectionFailed, userInfo: [
                    NSLocalizedDescriptionKey: "this libcurl (\(library.version)) was built without TLS support"
                ])))
            }
            guard let easy = spareHandles.popLast() ?? library.easyInit() else {
                return transfer.emit(.completed(URLError(.cannotLoadFromNetwork)))
            }
            transfer.easy = easy
            configure(easy, for: transfer)
            active[easy] = transfer
            guard library.multiAdd(multi, easy) == 0 else {
                active[easy] = nil
                finish(transfer, easy: easy)
                return transfer.emit(.completed(URLError(.cannotLoadFromNetwork)))
            }
            // Paused before it began (or across a redirect): stays paused.
            if transfer.shared.withLock({ $0.isPaused }) { _ = library.easyPause(easy, 1) }
        }

        private func configure(_ easy: OpaquePointer, for transfer: CurlTransfer) {
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
            if transfer.url.scheme?.lowercased() == "https" { library.set(easy, .pipeWait, 1) }
            library.set(easy, .suppressConnectHeaders, 1)
            // Bigger reads than libcurl's 16 KiB default: a quarter as many events (each a lock round trip
            // in the queue) for a big body; small bodies do not notice.
            library.set(easy, .bufferSize, Self.receiveBufferSize)
            library.set(easy, .errorBuffer, pointer: transfer.errorBuffer)
            library.set(easy, .writeFunction, pointer: unsafeBitCast(curlWrite, to: UnsafeRawPointer.self))
            library.set(easy, .writeData, pointer: user)
            library.set(easy, .headerFunction, pointer: unsafeBitCast(curlHeader, to: UnsafeRawPointer.self))
            library.set(easy, .headerData, pointer: user)
            if let share {
                library.set(easy, .cookieFile, string: "")
                library.set(easy, .shareHandle, pointer: UnsafeRawPointer(share))
            }
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
            let acceptEncoding = headers.first { Self.isNamed($0.key, "accept-encoding") }
            if let acceptEncoding {
                // Asked for: libcurl sends this value and decodes what it supports, like URLSession.
                headers[acceptEncoding.key] = nil
                library.set(easy, .acceptEncoding, string: acceptEncoding.value)
            } else {
                headers["Accept-Encoding"] = "identity"
                library.set(easy, .httpContentDecoding, 0)
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
                for name in headers.keys where Self.isNamed(name, "content-length") {
                    headers[name] = nil
                }
                // libcurl would add a form Content-Type and an `Expect: 100-continue` wait: send neither.
                if !headers.keys.contains(where: { Self.isNamed($0, "content-type") }) {
                    headers["Content-Type"] = ""
                }
                if !headers.keys.contains(where: { Self.isNamed($0, "expect") }) {
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

        /// Whether the header `name` is `lowercased` (ASCII, without Foundation's locale-aware comparison).
        private static func isNamed(_ name: String, _ lowercased: String) -> Bool {
            name.utf8.count == lowercased.utf8.count
                && zip(name.utf8, lowercased.utf8).allSatisfy { ((65...90).contains($0) ? $0 + 32 : $0) == $1 }
        }

        /// Reads libcurl's finished transfers: follows a redirect, or reports the end.
        private func collectCompleted() {
            var remaining: Int32 = 0
            while let message = library.multiInfoRead(multi, &remaining) {
                // struct CURLMsg: CURLMSG msg (CURLMSG_DONE = 1), CURL *easy_handle, union { CURLcode result }.
                guard message.load(as: Int32.self) == 1 else { continue }
                let easy = message.load(fromByteOffset: 8, as: OpaquePointer.self)
                let code = message.load(fromByteOffset: 16, as: Int32.self)
                _ = library.multiRemove(multi, easy)
                guard let transfer = active.removeValue(forKey: easy) else { continue }
                complete(transfer, easy: easy, code: code)
            }
        }

        private func complete(_ transfer: CurlTransfer, easy: OpaquePointer, code: Int32) {
            if code == 0, let next = transfer.redirect {
                switch options.redirects.decide(from: transfer.url, to: next) {
                case .refuse(let error):
                    finish(transfer, easy: easy)
                    transfer.emit(.completed(error))
                case .follow(let followed):
                    freeHeaders(of: transfer)
                    guard transfer.restart(with: followed) else {
                        finish(transfer, easy: easy)
                        return transfer.emit(.completed(URLError(.requestBodyStreamExhausted)))
                    }
                    guard transfer.redirectCount <= options.maximumRedirects else {
                        finish(transfer, easy: easy)
                        return transfer.emit(.completed(URLError(.httpTooManyRedirects)))
                    }
                    library.easyReset(easy)
                    transfer.easy = nil
                    spareHandles.append(easy)
                    guard !transfer.isCancelled else { return }
                    begin(transfer)
                }
                return
            }
            let scheme = transfer.url.scheme?.lowercased()
            var error = CurlErrorTable.error(
                for: code, scheme: scheme, url: transfer.url, message: transfer.errorText(for: code, library: library))
            if error == nil, !transfer.hasResponse {
                // Only a redirect past the limit ends without a head of ours.
                error = URLError(transfer.redirect != nil ? .httpTooManyRedirects : .badServerResponse)
            }
            finish(transfer, easy: easy)
            transfer.emit(.completed(error))
        }

        /// Releases what a transfer holds of libcurl: its header list and its easy handle (kept for reuse).
        private func finish(_ transfer: CurlTransfer, easy: OpaquePointer) {
            freeHeaders(of: transfer)
            transfer.easy = nil
            library.easyReset(easy)
            if spareHandles.count < Self.maximumSpareHandles {
                spareHandles.append(easy)
            } else {
                library.easyCleanup(easy)
            }
        }

        private func freeHeaders(of transfer: CurlTransfer) {
            library.slistFreeAll(transfer.headerList)
            transfer.headerList = nil
        }

        private func shutDown() {
            inbox.withLock { $0.isClosed = true }
            for (easy, transfer) in active {
                _ = library.multiRemove(multi, easy)
                finish(transfer, easy: easy)
                transfer.emit(.completed(URLError(.cancelled)))
            }
            active = [:]
            for easy in spareHandles { library.easyCleanup(easy) }
            spareHandles = []
            _ = library.multiCleanup(multi)
            if let share { _ = library.shareCleanup(share) }
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
        transfer.receivedHeader(UnsafeRawBufferPointer(start: data, count: size * count))
        return size * count
    }

    private let curlRead: @convention(c) (UnsafeMutableRawPointer?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
        buffer, size, count, user in
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(user!).takeUnretainedValue()
        return transfer.readBody(into: buffer!, capacity: size * count)
    }

    /// CURLOPT_SEEKFUNCTION: only a rewind to the start is ever needed (CURL_SEEKFUNC_OK 0, CANTSEEK 2).
    private let curlSeek: @convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int32 = { user, offset, origin in
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(user!).takeUnretainedValue()
        guard offset == 0, origin == SEEK_SET, transfer.rewindBody() else { return 2 }
        return 0
    }
#endif
