#if os(Linux)
    import CurlShim
    import Foundation
    import FoundationNetworking
    import Glibc
    import Synchronization

    /// One libcurl multi handle driven by one dedicated thread: `curl_multi_perform`, then
    /// `curl_multi_poll`, woken by `curl_multi_wakeup` when another thread posts work.
    ///
    /// Only the engine's thread calls libcurl; other threads only post to the inbox. The engine-thread
    /// state below is touched by that thread alone, hence `@unchecked Sendable`.
    final class CurlEngine: @unchecked Sendable {
        /// What another thread posts to the engine's thread: a transfer, and what to do with it.
        ///
        /// A struct, not an enum with the transfer in each case: Swift would keep the case in the reference's spare
        /// bits, where LeakSanitizer cannot read the pointer, and a transfer whose last reference was a posted cancel
        /// (a split file's connection stopped as the file finished) looked leaked when the process exited then (the
        /// Demo's split test, 3 runs in 14 under the address sanitizer).
        struct Work {
            enum Kind {
                case start, cancel, update
            }
            let kind: Kind
            let transfer: CurlTransfer

            static func start(_ transfer: CurlTransfer) -> Work { Work(kind: .start, transfer: transfer) }
            static func cancel(_ transfer: CurlTransfer) -> Work { Work(kind: .cancel, transfer: transfer) }
            static func update(_ transfer: CurlTransfer) -> Work { Work(kind: .update, transfer: transfer) }
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
        let multi: OpaquePointer
        private let inbox = Locked(Inbox())
        /// Transfers posted to this engine and not ended yet: the transport gives a new transfer to the
        /// engine with the fewest. Posting adds one; the engine's thread subtracts those that left its
        /// transfers in each pass.
        private let loadCount = Atomic<Int>(0)
        /// The extra CA certificates with the system's, when asked for.
        let certificates: InMemoryPEM?
        /// True when servers are checked against a CA bundle file alone, without libcurl's built-in folder of
        /// certificates beside it (see ``CurlTransport/caFolderIsLeftOut``).
        let leavesOutCAFolder: Bool
        /// The client certificate and key shown to servers that ask, when given.
        let client: ClientFiles?
        /// The proxies the environment named when the transport was created.
        let proxies: ProxyRoutes

        // The engine thread's state (its extensions in other files touch it on that thread only, so no dynamic
        // exclusivity check).
        /// The transfers whose run is in the multi handle, each knowing its index here (engine thread).
        @exclusivity(unchecked) private(set) var active: [CurlTransfer] = []
        @exclusivity(unchecked) private var spareHandles: [CurlHandle] = []
        /// The transport's cookie jar, shared by its engines (nil: cookies off).
        let cookieJar: Locked<CookieJar>?
        /// Transfers held because their rate cap had no tokens, in the order they were refused.
        @exclusivity(unchecked) var starved: [CurlTransfer] = []
        /// The transport's `User-Agent` and `Accept-Encoding: identity`: the header list of every request without
        /// headers of its own, made once (engine thread).
        @exclusivity(unchecked) private var plainHeaderList: OpaquePointer?
        /// The transport's shared DNS cache and pinned hosts (nil: none), held until the engine's handles are freed.
        let names: CurlNames?
        private static let maximumSpareHandles = 16
        /// CURLOPT_BUFFERSIZE of an uncapped transfer (see `configure`).
        static let receiveBufferSize = 256 << 10

        init(
            library: CurlLibrary, options: CurlTransport.Options, certificates: InMemoryPEM?,
            leavesOutCAFolder: Bool = false,
            client: ClientFiles? = nil,
            cookieJar: Locked<CookieJar>?, proxies: ProxyRoutes, names: CurlNames? = nil
        ) throws(CurlTransport.LoadError) {
            self.proxies = proxies
            self.names = names
            guard let multi = library.multiInit() else { throw .initializationFailed }
            self.library = library
            self.options = options
            userAgentLine = options.userAgent.flatMap { $0.isEmpty ? nil : "User-Agent: \($0)" }
            self.multi = multi
            self.certificates = certificates
            self.leavesOutCAFolder = leavesOutCAFolder
            self.client = client
            // CURLMOPT_MAXCONNECTS: connections kept open for reuse.
            library.setMulti(multi, 6, max(1, options.maximumCachedConnections))
            self.cookieJar = cookieJar
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

        /// The engine thread's id, once it runs (0 before).
        private let threadID = Atomic<UInt>(0)
        /// What this pass's transfers owe their queues, handed in when the pass ends (engine thread only).
        private let wake = EngineWake()
        /// Transfers this pass has taken out of the running set so far, each subtracted from the load as it left
        /// (engine thread only).
        @exclusivity(unchecked) var leftThisPass = 0

        /// Transfers posted to this engine and not ended yet (a hint: read without a lock). A transfer libcurl
        /// finished stops counting before its end is reported, so that the next request of whoever heard it (on
        /// this thread or another) finds this engine as free as it is, and its connection to reuse.
        var load: Int { loadCount.load(ordering: .relaxed) }

        /// A transfer left the running set at libcurl's end of it (engine thread).
        func leave() {
            leftThisPass += 1
            loadCount.subtract(1, ordering: .relaxed)
        }

        /// Whether the caller runs on this engine's thread.
        var isCurrent: Bool { threadID.load(ordering: .relaxed) == UInt(pthread_self()) }

        /// Hands work to the engine's thread; never blocks on libcurl.
        /// The wake-up is sent under the inbox's lock, which the engine's thread takes to close the multi
        /// handle: a handle cancelled after its transport is gone never touches a freed multi handle.
        func post(_ work: Work) {
            inbox.withLock { inbox in
                guard !inbox.isClosed else { return }
                if work.kind == .start { loadCount.add(1, ordering: .relaxed) }
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
            threadID.store(UInt(pthread_self()), ordering: .relaxed)
            EngineWake.install(wake)
            defer { EngineWake.install(nil) }
            var running: Int32 = 0
            var wasActive = 0
            while true {
                let (work, isStopping) = inbox.withLock { inbox in
                    defer {
                        inbox.work.removeAll(keepingCapacity: true)
                        inbox.isWakePending = false
                    }
                    // Closed in the same critical section as the last take: no work can be posted after it
                    // and left in the inbox (work holds its transfer, which holds this engine: a cycle).
                    if inbox.isStopping { inbox.isClosed = true }
                    return (inbox.work, inbox.isStopping)
                }
                if isStopping {
                    shutDown(leftover: work)
                    return wake.flush()
                }
                var started = 0
                for item in work {
                    if item.kind == .start { started += 1 }
                    apply(item)
                }
                _ = library.multiPerform(multi, &running)
                collectCompleted()
                // Those counted and not running now have ended (cancelled, or failed to begin), but those that left
                // at their end (subtracted then; one followed or sent again is running, and counts again).
                let ended = wasActive + started - active.count - leftThisPass
                if ended != 0 { loadCount.subtract(ended, ordering: .relaxed) }
                wasActive = active.count
                leftThisPass = 0
                // After the reads: a transfer refused during them is resumed, or waited for, at once.
                let wait = starved.isEmpty ? 1.0 : feedStarved()
                // One lock round trip per queue for everything this pass's transfers did (their starts, if any, land
                // in the inbox: taken at once, without a poll).
                wake.flush()
                let hasWork = inbox.withLock { !$0.work.isEmpty || $0.isStopping }
                if !hasWork { _ = library.multiPoll(multi, nil, 0, Int32((wait * 1000).rounded(.up)), nil) }
            }
        }

        private func apply(_ work: Work) {
            let transfer = work.transfer
            switch work.kind {
            case .start:
                guard !transfer.isCancelled else { return }
                begin(transfer)
            case .cancel:
                // Removing a transfer before its end closes its HTTP/1 connection (an HTTP/2 stream is reset).
                guard let easy = transfer.easy, removeActive(transfer) else { return }
                _ = library.multiRemove(multi, easy)
                finish(transfer, easy: easy)
            case .update:
                guard let easy = transfer.easy, transfer.activeIndex != nil else { return }
                let (paused, rate) = (transfer.isPaused, transfer.maximumBytesPerSecond)
                transfer.handle?.plainGet = nil
                library.set(easy, .maxRecvSpeedLarge, offset: Int64(rate ?? 0))
                // CURLPAUSE_RECV = 1, CURLPAUSE_CONT = 0. A transfer held for tokens stays held: the cap resumes it.
                guard paused || !transfer.isStarved else { return }
                _ = library.easyPause(easy, paused ? 1 : 0)
            }
        }

        /// Configures an easy handle for the transfer's current request and adds it to the multi handle.
        func begin(_ transfer: CurlTransfer) {
            let isSecure = transfer.isSecure
            if !library.supportsTLS, isSecure {
                // A libcurl without TLS would call this an unsupported protocol: say it plainly.
                let reason = "this libcurl (\(library.version)) was built without TLS support"
                return transfer.emit(
                    .completed(URLError(.secureConnectionFailed, userInfo: [NSLocalizedDescriptionKey: reason])))
            }
            guard let handle = spareHandles.popLast() ?? newHandle() else {
                return transfer.emit(.completed(URLError(.cannotLoadFromNetwork)))
            }
            let easy = handle.easy
            transfer.easy = easy
            transfer.handle = handle
            handle.transfer = transfer
            transfer.recorder?.runBegan(at: DispatchTime.now().uptimeNanoseconds)
            configure(easy, for: transfer, isSecure: isSecure)
            transfer.activeIndex = active.count
            active.append(transfer)
            guard library.multiAdd(multi, easy) == 0 else {
                _ = removeActive(transfer)
                finish(transfer, easy: easy)
                return transfer.emit(.completed(URLError(.cannotLoadFromNetwork)))
            }
            // Paused before it began (or across a redirect): stays paused.
            if transfer.isPaused { _ = library.easyPause(easy, 1) }
        }

        /// The engine's list holding the transport's `User-Agent` (if any) and `Accept-Encoding: identity` (made on
        /// first use, freed at shutdown).
        func plainHeaders() -> OpaquePointer? {
            if plainHeaderList == nil {
                let first = userAgentLine.flatMap { line in line.withCString { library.slistAppend(nil, $0) } }
                plainHeaderList = library.slistAppend(first, "Accept-Encoding: identity") ?? first
            }
            return plainHeaderList
        }

        /// The transport's `User-Agent` as a header line, sent in a request's header list rather than through
        /// CURLOPT_USERAGENT: libcurl formats a listed field once, the option's twice (once before every run, sent or
        /// not), one character at a time, at about 100 instructions a character (3k of a small request's cost). The
        /// option is set only where a proxy's CONNECT may need it; a listed field keeps libcurl from adding the
        /// option's.
        let userAgentLine: String?

        /// A new easy handle with the options every run shares.
        private func newHandle() -> CurlHandle? {
            guard let easy = library.easyInit() else { return nil }
            let handle = CurlHandle(easy)
            prepare(handle)
            return handle
        }

        /// Takes `transfer` out of ``active`` (the last one takes its place); false when it was not there.
        func removeActive(_ transfer: CurlTransfer) -> Bool {
            guard let index = transfer.activeIndex else { return false }
            let last = active.removeLast()
            if last !== transfer {
                active[index] = last
                last.activeIndex = index
            }
            transfer.activeIndex = nil
            return true
        }

        /// Releases what a transfer holds of libcurl: its header list and its easy handle (kept for reuse).
        func finish(_ transfer: CurlTransfer, easy: OpaquePointer) {
            // A handle that was paused keeps libcurl's pause state: it is not used again.
            var reusable = !transfer.isPaused
            if transfer.isStarved {
                transfer.isStarved = false
                starved.removeAll { $0 === transfer }
                reusable = false
            }
            transfer.rateCap?.leave(transfer.consumer)
            // The handle keeps its options for the next run (see `prepare`), but nothing of this transfer's: a plain
            // run's header list is the engine's, kept.
            if transfer.headerLists.server != nil || transfer.headerLists.proxy != nil {
                library.set(easy, .httpHeader, pointer: nil)
                library.set(easy, .proxyHeader, pointer: nil)
            }
            library.slistFreeAll(transfer.headerLists.server)
            library.slistFreeAll(transfer.headerLists.proxy)
            transfer.headerLists = (nil, nil)
            transfer.easy = nil
            guard let handle = transfer.handle else { return library.easyCleanup(easy) }
            transfer.handle = nil
            handle.transfer = nil
            if reusable, spareHandles.count < Self.maximumSpareHandles {
                spareHandles.append(handle)
            } else {
                library.easyCleanup(easy)
            }
        }

        /// Ends every transfer still here with `.cancelled` — those running and those posted but never begun
        /// (`leftover`, the inbox's last take) — and frees libcurl's handles. The inbox is closed already.
        private func shutDown(leftover: [Work]) {
            for work in leftover where work.kind == .start && work.transfer.easy == nil {
                work.transfer.emit(.completed(URLError(.cancelled)))
            }
            let running = active
            active = []
            for transfer in running {
                transfer.activeIndex = nil
                guard let easy = transfer.easy else { continue }
                _ = library.multiRemove(multi, easy)
                finish(transfer, easy: easy)
                transfer.emit(.completed(URLError(.cancelled)))
            }
            for handle in spareHandles { library.easyCleanup(handle.easy) }
            library.slistFreeAll(plainHeaderList)
            plainHeaderList = nil
            spareHandles = []
            _ = library.multiCleanup(multi)
        }
    }
#endif
