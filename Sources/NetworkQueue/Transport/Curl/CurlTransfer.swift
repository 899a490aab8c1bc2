#if os(Linux)
    import Foundation
    import FoundationNetworking
    import Glibc
    import Synchronization

    /// One transfer of a ``CurlTransport``, possibly over several easy-handle runs (one per redirect).
    ///
    /// Two kinds of state: what any thread may set (cancelled, paused, the rate cap) is atomic; everything else
    /// belongs to the engine's thread alone, which is the only one that runs libcurl's callbacks and the engine's
    /// loop — hence `@unchecked Sendable`.
    final class CurlTransfer: ThrottlableTransfer, @unchecked Sendable {

        /// A request body, replayable when it is `Data`.
        enum Body {
            case none
            case data(Data, offset: Int)
            case stream(InputStream, declaredLength: Int64?)
        }

        let events: @Sendable (TransferEvent) -> Void
        /// ``isCancelled`` and ``isPaused``, as bits: set from any thread, read by the engine on every callback.
        /// Atomic rather than locked: the engine reads them several times per transfer, and a lock was an object
        /// of its own and a lock round trip each time.
        private let flags = Atomic<UInt8>(0)
        private static let cancelledBit: UInt8 = 1
        private static let pausedBit: UInt8 = 2
        /// ``maximumBytesPerSecond``, 0 for none.
        private let rate: Atomic<Int>
        private let engine: CurlEngine
        /// The shared cap its received bytes are drawn from, and its number there.
        let rateCap: RateCap?
        let consumer: Int
        /// Where the body goes when it is lent from libcurl's buffer rather than reported as `.data` events.
        let lentBody: LentBodyReceiver?
        /// CURLOPT_CONNECTTIMEOUT_MS of each run (0: libcurl's own bound).
        let connectTimeoutMilliseconds: Int

        // The engine thread's state. One thread touches it (the engine's), so no dynamic exclusivity check.
        /// What this run sends when it is a whole `URLRequest` (a redirect's after one); nil for a URL's text alone,
        /// a plain GET.
        @exclusivity(unchecked) var request: URLRequest?
        /// The request's method, uppercased (read once per run: `URLRequest` takes a lock for it).
        @exclusivity(unchecked) var method: String
        /// The run's URL as text: what libcurl is given.
        @exclusivity(unchecked) var urlText: String
        /// ``url``, once something needed it.
        @exclusivity(unchecked) private var parsedURL: URL?
        @exclusivity(unchecked) var easy: OpaquePointer?
        /// The run's header lists: the server's, and the proxy's (a request's own `Proxy-Authorization`).
        @exclusivity(unchecked) var headerLists: (server: OpaquePointer?, proxy: OpaquePointer?) = (nil, nil)
        @exclusivity(unchecked) var parser = ResponseHeadParser()
        /// Set when the final head of this run is a redirect to follow: its body is not reported.
        @exclusivity(unchecked) var redirect: URLRequest?
        /// The status of the head that asked for ``redirect``.
        @exclusivity(unchecked) var redirectStatus = 0
        @exclusivity(unchecked) var redirectCount = 0
        /// True when the run was aborted at a redirect's head, to follow it without reading its body.
        @exclusivity(unchecked) var followsAtHead = false
        @exclusivity(unchecked) var hasResponse = false
        /// True when the transfer ends at its final head (``TransferOptions/endsAtHead``).
        let endsAtHead: Bool
        /// True once the run was aborted at its final head, as asked, before its body: it completes without an error.
        @exclusivity(unchecked) var endedAtHead = false
        /// True once the run was sent again on a new connection (see ``againOnFreshConnection()``): at most once.
        @exclusivity(unchecked) var isOnFreshConnection = false
        /// Set when the caller asked for an encoding: the body is decoded here, not by libcurl (which does
        /// not check that a stream ended).
        @exclusivity(unchecked) var decodesBody = false
        @exclusivity(unchecked) var decoder: ContentDecoder?
        /// Why this transport aborted the run itself, overriding libcurl's code.
        @exclusivity(unchecked) var failure: URLError?
        @exclusivity(unchecked) var body: Body
        @exclusivity(unchecked) var bytesSent: Int64 = 0
        /// Body bytes libcurl handed over in this run, before decoding (engine thread).
        @exclusivity(unchecked) var bytesReceived = 0
        /// True while libcurl holds this transfer's bytes because the rate cap had no tokens for them
        /// (``CurlEngine`` resumes it when it has).
        @exclusivity(unchecked) var isStarved = false
        /// Adds up what libcurl measured of each run, when the queue asked for metrics (engine thread).
        @exclusivity(unchecked) var recorder: CurlMetricsRecorder?
        /// The easy handle of the current run, and the transfer's index in its engine's active set (nil: not
        /// in the multi handle).
        @exclusivity(unchecked) var handle: CurlHandle?
        @exclusivity(unchecked) var activeIndex: Int?

        /// A transfer of `request` (nil: a GET of `urlText` alone), whose URL is `url` when it was parsed already, and
        /// whose URL's text is `urlText` (empty for a request without a URL).
        init(
            _ request: URLRequest?, url: URL?, urlText: String, engine: CurlEngine, rateCap: RateCap? = nil,
            collectsMetrics: Bool = false, connectTimeout: Double? = nil, endsAtHead: Bool = false,
            lentBody: LentBodyReceiver? = nil, events: @escaping @Sendable (TransferEvent) -> Void
        ) {
            self.lentBody = lentBody
            self.endsAtHead = endsAtHead
            connectTimeoutMilliseconds = Self.milliseconds(connectTimeout)
            if collectsMetrics { recorder = CurlMetricsRecorder(startedAt: DispatchTime.now().uptimeNanoseconds) }
            self.request = request
            self.method = request.map { RequestRules.sentMethod($0.httpMethod) } ?? "GET"
            self.urlText = urlText
            self.parsedURL = url
            self.engine = engine
            self.events = events
            self.rateCap = rateCap
            self.consumer = rateCap?.makeConsumer() ?? 0
            self.rate = Atomic(max(0, engine.options.maximumBytesPerSecond ?? 0))
            self.body = request.map(Self.body(of:)) ?? .none
        }

        /// A connect bound in whole milliseconds for libcurl, at least 1 (0: none given, libcurl's own).
        static func milliseconds(_ seconds: Double?) -> Int {
            guard let seconds, seconds.isFinite, seconds > 0 else { return 0 }
            return Int(min((seconds * 1000).rounded(.up), Double(Int32.max)))
        }

        /// The run's URL: parsed from ``urlText`` the first time something needs it (a cookie jar, a redirect, an
        /// error), never for a plain request of the text form.
        var url: URL {
            if let parsedURL { return parsedURL }
            let parsed = URL(string: urlText) ?? URL(fileURLWithPath: "/")
            parsedURL = parsed
            return parsed
        }

        /// True when the run's URL is `https` (read from its text: no URL parsed).
        var isSecure: Bool { Self.isSecure(urlText) }

        /// True when the URL `text` has the scheme `https`, in any case.
        static func isSecure(_ text: String) -> Bool {
            // "https:", each letter compared with its lowercase bit set (the colon has it set already), where the text's
            // bytes are (an iterator over a literal's array cost 200 instructions a request).
            func isSecure<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool where Bytes.Index == Int {
                bytes.count >= 6 && bytes[0] | 0x20 == 0x68 && bytes[1] | 0x20 == 0x74 && bytes[2] | 0x20 == 0x74
                    && bytes[3] | 0x20 == 0x70 && bytes[4] | 0x20 == 0x73 && bytes[5] == 0x3A
            }
            return text.utf8.withContiguousStorageIfAvailable { isSecure($0) } ?? isSecure(Array(text.utf8.prefix(6)))
        }

        static func body(of request: URLRequest) -> Body {
            if let data = request.httpBody { return .data(data, offset: 0) }
            if let stream = request.httpBodyStream {
                let declared = request.value(forHTTPHeaderField: "Content-Length").flatMap { Int64($0) }
                return .stream(stream, declaredLength: declared.flatMap { $0 >= 0 ? $0 : nil })
            }
            return .none
        }

        /// The body's size, when known.
        var bodyLength: Int64? {
            switch body {
            case .none: 0
            case .data(let data, _): Int64(data.count)
            case .stream(_, let declared): declared
            }
        }

        /// True once ``cancel()`` was called.
        var isCancelled: Bool { flags.load(ordering: .acquiring) & Self.cancelledBit != 0 }
        /// True while ``setReceivingPaused(_:)`` holds the transfer's receiving.
        var isPaused: Bool { flags.load(ordering: .acquiring) & Self.pausedBit != 0 }
        /// The transfer's own receive cap (nil: none), as ``setMaximumBytesPerSecond(_:)`` last set it.
        var maximumBytesPerSecond: Int? {
            let rate = rate.load(ordering: .acquiring)
            return rate > 0 ? rate : nil
        }

        // MARK: TransferHandle

        /// Marks the transfer cancelled and asks the engine to drop it; returns at once. Nothing is reported
        /// after this returns but an event whose delivery had already begun; a connection cancelled before
        /// its response ended is closed, never reused.
        func cancel() {
            let before = flags.bitwiseOr(Self.cancelledBit, ordering: .acquiringAndReleasing).oldValue
            if before & Self.cancelledBit == 0 { engine.post(.cancel(self)) }
        }

        func setReceivingPaused(_ paused: Bool) {
            if paused {
                flags.bitwiseOr(Self.pausedBit, ordering: .acquiringAndReleasing)
            } else {
                flags.bitwiseAnd(~Self.pausedBit, ordering: .acquiringAndReleasing)
            }
            engine.post(.update(self))
        }

        func setMaximumBytesPerSecond(_ bytesPerSecond: Int?) {
            rate.store(bytesPerSecond.map { max(1, $0) } ?? 0, ordering: .releasing)
            engine.post(.update(self))
        }

        // MARK: libcurl callbacks (engine thread)

        /// Reports `event` unless the transfer was cancelled.
        func emit(_ event: TransferEvent) {
            guard !isCancelled else { return }
            events(event)
        }

        /// A header line arrived; returns false to abort the transfer (a head that breaks HTTP's framing,
        /// a body coding that cannot be decoded, or a redirect followed at once), with ``failure`` saying why.
        func receivedHeader(_ bytes: UnsafeRawBufferPointer) -> Bool {
            guard let head = parser.feed(bytes: bytes) else {
                guard let violation = parser.violation else { return true }
                failure = URLError(
                    .badServerResponse, userInfo: [NSLocalizedDescriptionKey: "invalid response head: \(violation)"])
                return false
            }
            let hasBody = ResponseRules.hasBody(statusCode: head.statusCode, isHead: method == "HEAD")
            if hasBody, let coding = head.unsupportedTransferCoding {
                // RFC 9112 §6.1: a message whose transfer coding is not understood cannot be read.
                failure = URLError(
                    .cannotDecodeContentData,
                    userInfo: [NSLocalizedDescriptionKey: "unsupported Transfer-Encoding \(coding)"])
                return false
            }
            // Only a head that passed every check stores its cookies.
            engine.storeCookies(head.setCookies, from: self)
            if head.closesConnection { engine.forbidReuse(of: self) }
            if RedirectRules.isFollowed(head.statusCode),
                let next = RedirectRules.next(
                    after: head.statusCode, location: head.value("Location"), request: request ?? URLRequest(url: url),
                    url: url)
            {
                redirect = next
                redirectStatus = head.statusCode
                // Follow at once, as curl does, unless a short body with a known length can be read to keep the
                // connection: a body framed by the connection's close may never end.
                let drains =
                    !hasBody
                    || (head.contentLength.map { $0 <= Self.redirectBodyDrainLimit } == true
                        && head.value("Connection").map { !$0.lowercased().contains("close") } != false)
                if !drains { followsAtHead = true }
                return drains
            }
            hasResponse = true
            emit(
                .head(
                    ResponseHead(
                        address: parsedURL.map(ResponseHead.Address.url) ?? .text(urlText),
                        statusCode: head.statusCode, httpVersion: head.httpVersion, storage: head.storage,
                        contentLength: head.contentLength ?? -1)))
            if endsAtHead, hasBody {
                // Asked to end here: libcurl stops before the body, and the connection is not kept (its body unread).
                endedAtHead = true
                return false
            }
            let contentCodings = decodesBody ? head.value("Content-Encoding").map(FramingRules.codings) ?? [] : []
            guard hasBody, !contentCodings.isEmpty || !head.transferCodings.isEmpty else { return true }
            do {
                decoder = try ContentDecoder(
                    contentCodings: contentCodings, transferCodings: head.transferCodings, library: .shared)
            } catch {
                let codings = (contentCodings + head.transferCodings).joined(separator: ", ")
                failure = URLError(
                    .cannotDecodeContentData,
                    userInfo: [NSLocalizedDescriptionKey: "cannot decode the codings \(codings)"])
                return false
            }
            return true
        }

        /// The largest redirect body read to its end so that its connection can be reused.
        static let redirectBodyDrainLimit: Int64 = 64 << 10

        /// Body bytes arrived; returns what libcurl expects (the count taken, 0 to abort, or
        /// CURL_WRITEFUNC_PAUSE when the rate cap has no tokens for them: libcurl keeps them until the engine
        /// resumes the transfer, and delivers them again then).
        func receivedBody(_ bytes: UnsafeRawBufferPointer) -> Int {
            if isCancelled { return 0 }
            if let rateCap, !bytes.isEmpty, !rateCap.draw(bytes.count, consumer: consumer) {
                isStarved = true
                engine.starve(self)
                return 0x1000_0001
            }
            // A redirect's body, or bytes before any head (never for HTTP/1.x and 2): not the response's.
            guard redirect == nil, hasResponse, !bytes.isEmpty else { return bytes.count }
            bytesReceived += bytes.count
            guard let decoder else {
                // Lent: libcurl's own buffer, written where it is.
                guard let lentBody else {
                    events(.data(Data(bytes)))
                    return bytes.count
                }
                return lentBody(LentBytes(bytes)) ? bytes.count : stopForReceiver()
            }
            var refused = false
            let decoded = decoder.decode(bytes) { piece in
                guard !self.isCancelled else { return false }
                // Lent: the decoder's own buffer, valid until it decodes more.
                guard let lentBody = self.lentBody else {
                    self.events(.data(Data(piece)))
                    return true
                }
                refused = !lentBody(LentBytes(piece))
                return !refused
            }
            guard decoded else {
                if refused { return stopForReceiver() }
                if !isCancelled { failure = URLError(.cannotDecodeContentData) }
                return 0
            }
            return bytes.count
        }

        /// The receiver of the lent body failed the transfer: it is cancelled here, on its engine thread, so that
        /// libcurl reads no more of it (a cancel from the queue's side would land only after this read; a fast server
        /// could send a whole big body meanwhile). Returns 0, libcurl's abort.
        private func stopForReceiver() -> Int {
            cancel()
            return 0
        }

        /// The error this run ends with when libcurl itself saw none: a decoded body whose stream did not end.
        var incompleteBodyError: URLError? {
            guard let decoder, !decoder.isComplete else { return nil }
            return URLError(
                .cannotDecodeContentData,
                userInfo: [NSLocalizedDescriptionKey: "the encoded body ended before its stream did"])
        }

        /// libcurl wants up to `capacity` bytes of the request body; returns the count written, 0 at the
        /// end, or CURL_READFUNC_ABORT.
        func readBody(into buffer: UnsafeMutableRawPointer, capacity: Int) -> Int {
            let abort = 0x1000_0000
            if isCancelled { return abort }
            var count = 0
            switch body {
            case .none:
                return 0
            case .data(let data, let offset):
                count = min(capacity, data.count - offset)
                guard count > 0 else { return 0 }
                data.copyBytes(to: buffer.assumingMemoryBound(to: UInt8.self), from: offset..<(offset + count))
                body = .data(data, offset: offset + count)
            case .stream(let stream, _):
                if stream.streamStatus == .notOpen { stream.open() }
                count = stream.read(buffer.assumingMemoryBound(to: UInt8.self), maxLength: capacity)
                guard count >= 0 else { return abort }
                if count == 0 { return 0 }
            }
            bytesSent += Int64(count)
            emit(.sent(totalBytesSent: bytesSent, totalBytesExpectedToSend: bodyLength))
            return count
        }

        /// libcurl must send the body again (a retried request on a reused connection): only `Data` can.
        func rewindBody() -> Bool {
            guard case .data(let data, _) = body else { return body.isEmpty }
            body = .data(data, offset: 0)
            bytesSent = 0
            return true
        }

        /// The error text libcurl left for the last run, or its generic message for `code`.
        func errorText(for code: Int32, library: CurlLibrary) -> String {
            let detail = handle.map { String(cString: $0.errorBuffer) } ?? ""
            return detail.isEmpty ? library.message(for: code) : detail
        }

        /// Prepares the next run after a redirect; false when the body cannot be sent again.
        /// Readies the same request to be sent again on a new connection, once: a reused connection answered what is
        /// no response (the leftover body of a HEAD a server answered with one, RFC 9110 §9.3.2, or a connection the
        /// server had closed). False when it was sent so already, or its body is a stream that cannot be sent again.
        func againOnFreshConnection() -> Bool {
            guard !isOnFreshConnection else { return false }
            if case .stream = body { return false }
            isOnFreshConnection = true
            if let request { body = Self.body(of: request) }
            bytesSent = 0
            parser = ResponseHeadParser()
            decoder = nil
            redirect = nil
            followsAtHead = false
            return true
        }

        func restart(with next: URLRequest) -> Bool {
            let keepsBody = next.httpBody != nil || next.httpBodyStream != nil
            if keepsBody, case .stream = body { return false }
            request = next
            method = RequestRules.sentMethod(next.httpMethod)
            if let url = next.url {
                urlText = url.absoluteString
                parsedURL = url
            }
            body = Self.body(of: next)
            bytesSent = 0
            parser = ResponseHeadParser()
            decoder = nil
            redirect = nil
            followsAtHead = false
            redirectCount += 1
            return true
        }
    }

    extension CurlTransfer.Body {
        var isEmpty: Bool {
            if case .none = self { return true }
            return false
        }
    }
#endif
