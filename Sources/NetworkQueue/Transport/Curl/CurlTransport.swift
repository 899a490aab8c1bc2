import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if os(Linux)
    /// A ``Transport`` over libcurl's multi interface: the default transport on Linux.
    ///
    /// - **Loading**: libcurl is opened at run time (`dlopen("libcurl.so.4")`, the library
    ///   FoundationNetworking itself links), version 7.68 or later; no header, package or link flag is
    ///   needed. When it cannot be loaded, ``init(options:)`` throws a ``LoadError`` and
    ///   `NetworkQueue()` falls back to ``URLSessionTransport``.
    /// - **Engine threads**: ``Options/engineThreads`` threads (by default one per active processor, at
    ///   most 4), each with its own multi handle and connection cache. Each new transfer goes to the engine
    ///   with the fewest transfers (the earliest of them on a tie) and stays there, across its redirects;
    ///   transfers are added, cancelled, paused and throttled by posting to their engine's thread
    ///   (`curl_multi_wakeup`), so no call of this type blocks on the network. Connections are kept alive
    ///   and reused within an engine (HTTP/1.1), and HTTP/2 is used and multiplexed when a TLS server offers
    ///   it, so a host may have a connection per engine. There is no per-host connection limit: the
    ///   queue's limit decides. Cookies are one jar for all engines.
    /// - **Events** are delivered on the transfer's engine thread, one transfer's in order, and libcurl reads
    ///   no more of a transfer until its event returns: a slow consumer (a file written inside the event)
    ///   slows the server down instead of filling memory (back-pressure). Keep event handlers short.
    /// - **Semantics** as ``URLSessionTransport``: one ``TransferEvent/head(_:)`` for the final head (never a
    ///   1xx or a redirect's; a second one only when the transfer restarted), `.data` (a body going to a file is
    ///   lent to the queue instead), `.sent`, exactly one `.completed` last. Redirects are followed by the
    ///   transport itself (at most ``Options/maximumRedirects``): 303 → GET, 301/302 turn POST into GET,
    ///   307/308 keep method and body, and the ``RedirectPolicy`` keeps credentials on their origin.
    ///   Without an `Accept-Encoding` header a request is sent with `Accept-Encoding: identity`; with one,
    ///   the codings this process can decode are sent (gzip, deflate, br where `libbrotlidec.so.1` exists)
    ///   and the transport decodes the body itself: an encoded stream that does not end fails with
    ///   `.cannotDecodeContentData`. TLS peers are verified against the system's CA store (plus
    ///   ``Options/additionalTrustedCertificates``); proxies come from ``Options/proxy``: by default the
    ///   environment's (`http_proxy`, `https_proxy`, `all_proxy`, `no_proxy`) as curl reads them, read once when
    ///   the transport is created. A request body never gets a `Content-Type` or
    ///   `Expect: 100-continue` the caller did not set.
    /// - **Strict framing**: differing `Content-Length` values, a bare CR, bare LF or NUL in a header line
    ///   fail with `.badServerResponse` before anything of the head is used (no cookie, no redirect) and the
    ///   connection is closed; a length beside `Transfer-Encoding` is ignored and the connection closed.
    /// - **Rate cap**: a transfer started with a ``RateCap`` (the queue's
    ///   ``NetworkQueue/maximumBytesPerSecond``) draws from it before it hands bytes on and stops reading while
    ///   it has no tokens (`CURL_WRITEFUNC_PAUSE`, resumed with `curl_easy_pause` by its engine thread),
    ///   and its new connection gets a small kernel receive buffer: the cap holds from the first byte. Over HTTP/2
    ///   it paces what the queue receives, not the wire: libcurl reads a paused stream on into its window.
    /// - **Cookies** live in the transport's own jar (``Options/cookies``), stored only from valid heads.
    /// - **Cancel** returns at once; nothing is reported after it but an event already being delivered;
    ///   a connection cancelled mid-response is closed, not reused.
    /// - **Sockets** are opened close-on-exec (`SOCK_CLOEXEC`): a program the app starts inherits no connection,
    ///   so a cancelled or ended connection closes when the transport closes it. (libcurl before 8.17 leaves
    ///   that to the caller; Foundation's URLSession on Linux does not do it.)
    /// - **Timeouts** are the queue's: the transport sets none.
    public final class CurlTransport: Transport {
        /// Why libcurl could not be used.
        public enum LoadError: Error, Equatable, CustomStringConvertible {
            /// `dlopen` found no `libcurl.so.4`.
            case libraryNotFound(reason: String)
            /// The library lacks a function this transport calls.
            case missingFunction(String)
            /// The library is older than 7.68.0 (no `curl_multi_poll` / `curl_multi_wakeup`).
            case tooOld(version: String)
            /// `curl_global_init`, `curl_multi_init` or the like failed.
            case initializationFailed
            /// ``Options/additionalTrustedCertificates`` could not be read, or holds no PEM certificate.
            case unreadableCertificates(path: String, reason: String)
            /// A file of ``Options/clientCertificate`` could not be read, or holds no PEM certificate (or key).
            case unreadableClientCertificate(path: String, reason: String)
            /// ``Options/proxy`` names a proxy that cannot be used.
            case invalidProxy(Proxy.Problem)

            /// One line saying what is wrong, for logs and error messages.
            public var description: String {
                switch self {
                case .libraryNotFound(let reason): "libcurl could not be loaded: \(reason)"
                case .missingFunction(let name): "libcurl lacks \(name)"
                case .tooOld(let version): "libcurl \(version) is too old: 7.68.0 or later is needed"
                case .initializationFailed: "libcurl failed to initialise"
                case .unreadableCertificates(let path, let reason): "cannot read CA certificates at \(path): \(reason)"
                case .unreadableClientCertificate(let path, let reason):
                    "cannot read the client certificate or key at \(path): \(reason)"
                case .invalidProxy(let problem): problem.description
                }
            }
        }

        /// Where cookies that servers set are kept.
        public enum CookiePolicy: Sendable, Hashable {
            /// One in-memory jar per transport: cookies set by a response that passed every framing check
            /// go back, by RFC 6265's domain, path, `Secure` and expiry rules, on later requests of this
            /// transport; nothing is written to disk. The default.
            case ephemeral
            /// No cookie engine: only a `Cookie` header you set is sent.
            case disabled
            /// The jar of `store`, which the program holds (filled from a cookie file, say, and written back after
            /// the batch): used as the ephemeral jar is; several transports may share it.
            case store(CookieStore)
        }

        /// A transport's settings; every property has a default.
        public struct Options: Sendable {
            /// How redirects are followed; default ``RedirectPolicy/default``.
            public var redirects: RedirectPolicy = .default
            /// Redirects followed per transfer before it fails with `.httpTooManyRedirects`; default 20.
            public var maximumRedirects = 20
            /// The `User-Agent` sent with every request that sets none of its own; default
            /// ``NetworkQueue/defaultUserAgent`` (`NetworkQueue/<version>`). nil sends none.
            public var userAgent: String? = NetworkQueue.defaultUserAgent
            /// Default ``CookiePolicy/ephemeral``.
            public var cookies: CookiePolicy = .ephemeral
            /// A PEM file of CA certificates trusted in addition to the system's; default nil. Read once, when the
            /// transport is created: the system's bundle and this file are handed to libcurl together, as an
            /// in-memory file it opens by path (so its parsed store is reused, not rebuilt per transfer). With it, as
            /// without it when the system's bundle file can be read, servers are checked against that bundle alone, not
            /// also against libcurl's built-in folder of CA certificates (`/etc/ssl/certs` on Debian), which the
            /// system's tools keep with the same certificates: libcurl then keeps the store it parsed for every
            /// connection of an engine, where with the folder it parsed the bundle again for each (20–40 ms of CPU).
            public var additionalTrustedCertificates: URL?
            /// The certificate and key shown to a server that asks for one (TLS client authentication); default nil:
            /// none. Read once, when the transport is created (see ``ClientCertificate``); shown to servers only,
            /// never to an HTTPS proxy.
            public var clientCertificate: ClientCertificate?
            /// Whether a server's certificate chain and name are verified; default true. false (curl's `--insecure`)
            /// accepts any certificate from a server, so anyone on the path can read and change the transfer: for a
            /// test server's throwaway certificate, never for data that matters. An HTTPS proxy is verified either way.
            public var verifiesServerCertificates = true
            /// A receive-rate cap for each transfer in bytes per second (nil: none, the default). A transfer's
            /// own cap can be changed while it runs.
            public var maximumBytesPerSecond: Int?
            /// Idle connections kept open for reuse, by each engine thread; default 64.
            public var maximumCachedConnections = 64
            /// Where requests go: ``Proxy/Setting/environment`` (the default: `http_proxy`, `https_proxy`,
            /// `all_proxy` and `no_proxy` as curl reads them, once, when the transport is created),
            /// ``Proxy/Setting/direct``, or ``Proxy/Setting/through(_:)`` a proxy set in code. A request's own
            /// `Proxy-Authorization` header goes to a proxy only (never to a server, tunnelled or not).
            public var proxy: Proxy.Setting = .environment
            /// Threads that run transfers, each with its own libcurl multi handle and connections; default
            /// the active processor count, at most 4. Values below 1 mean 1. More threads use more cores for
            /// many transfers at once (bodies are written to files, hashed and decoded on these threads);
            /// each keeps its own connections, so a host sees up to one connection set per thread.
            public var engineThreads = min(4, max(1, ProcessInfo.processInfo.activeProcessorCount))
            /// Hosts whose connections go to the addresses given, their names never looked up (curl's `--resolve`);
            /// default none. The engine threads share one DNS cache either way: a name is looked up once for them all.
            public var pinnedAddresses: [PinnedAddress] = []

            /// Creates options with the defaults.
            public init() {}
        }

        /// The libcurl version in use, e.g. "7.88.1".
        public let libraryVersion: String
        /// Whether the loaded libcurl can use HTTP/2.
        public let supportsHTTP2: Bool
        /// The name of the transport's first engine thread, `nq-curl-<n>`, unique in the process (as
        /// profilers and debuggers show it). The threads end when the transport is released.
        public var threadName: String { threadNames[0] }
        /// The names of the transport's engine threads (``Options/engineThreads`` of them), in order.
        public let threadNames: [String]
        /// The redirect policy of the options given at creation (``Options/redirects``).
        public let redirectPolicy: RedirectPolicy
        private let engines: [CurlEngine]
        /// Each engine's transfers posted and not ended yet, in order (for tests that place transfers).
        var engineLoads: [Int] { engines.map(\.load) }

        /// Whether libcurl can be loaded in this process.
        public static var isAvailable: Bool {
            if case .success = loadResult { return true }
            return false
        }

        /// Loading libcurl's outcome: success, or the ``LoadError`` that says why it cannot be used.
        static var loadResult: Result<Void, LoadError> { CurlLibrary.shared.map { _ in () } }

        /// Loads libcurl (once per process) and starts the transport's engine threads.
        /// - Throws: ``LoadError`` when libcurl is missing or too old, the extra certificates cannot be read, or
        ///   ``Options/proxy`` names a proxy that cannot be used.
        public init(options: Options = Options()) throws(LoadError) {
            let library = try CurlLibrary.shared.get()
            var certificates: InMemoryPEM?
            if let extra = options.additionalTrustedCertificates {
                certificates = InMemoryPEM(pem: try Self.bundle(adding: extra, library: library))
            }
            // A bundle given as a blob (no in-memory file could be made) keeps the folder: libcurl keeps no store of a
            // blob's.
            let leavesOutCAFolder = certificates.map { $0.path != nil } ?? Self.systemBundleIsReadable(library)
            caFolderIsLeftOut = leavesOutCAFolder
            let client = try options.clientCertificate.map { (client) throws(LoadError) in
                try ClientFiles(client)
            }
            // Our own jar, not libcurl's cookie engine: libcurl stores a cookie as its line arrives, before the
            // head is known to be valid (and leaked memory with every reuse of a handle).
            let cookieJar: Locked<CookieJar>? =
                switch options.cookies {
                case .ephemeral: Locked(CookieJar())
                case .store(let store): store.jar
                case .disabled: nil
                }
            let count = max(1, options.engineThreads)
            if case .through(let proxy) = options.proxy {
                do throws(Proxy.Problem) { try proxy.validate() } catch { throw .invalidProxy(error) }
            }
            let proxies = ProxyRoutes(options.proxy, environment: ProcessInfo.processInfo.environment)
            let names = CurlNames(library: library, engines: count, pinned: options.pinnedAddresses)
            var engines: [CurlEngine] = []
            for _ in 0..<count {
                engines.append(
                    try CurlEngine(
                        library: library, options: options, certificates: certificates,
                        leavesOutCAFolder: leavesOutCAFolder, client: client,
                        cookieJar: cookieJar, proxies: proxies, names: names))
            }
            self.engines = engines
            redirectPolicy = options.redirects
            libraryVersion = library.version
            supportsHTTP2 = library.supportsHTTP2
            threadNames = engines.map { $0.start() }
        }

        deinit { for engine in engines { engine.stop() } }

        /// The engine with the fewest transfers, on a tie the caller's own (a transfer that ended on an engine thread
        /// starts the next there, without waking another thread), else the earliest. Small transfers are spread too:
        /// one engine thread was the bottleneck of a batch of small files (20,000 × 4 KB: 0.84–0.85× the wall time on
        /// two engines, for 1.08× the CPU), and the user waits for the wall clock.
        private func leastLoadedEngine() -> CurlEngine {
            guard engines.count > 1 else { return engines[0] }
            var chosen = engines[0]
            var fewest = Int.max
            for engine in engines {
                let load = engine.load
                if load < fewest || (load == fewest && engine.isCurrent) { (chosen, fewest) = (engine, load) }
            }
            return chosen
        }

        /// Starts `request` on one of the transport's engine threads. Its received bytes are drawn from
        /// `options.rateCap` from the first (nil: uncapped): while the rate cap has no tokens the transfer reads
        /// nothing, so its TCP window closes, and a connection opened for a capped transfer gets a small kernel
        /// receive buffer (a sixty-fourth of the cap, 4–256 KiB) so that the wire, not just the delivery,
        /// follows the cap. With `options.collectsMetrics` it reports ``TransferEvent/metrics(_:)`` before it
        /// completes, every field filled from libcurl (a transfer that never reached libcurl, such as one with
        /// no URL, reports none).
        public func startTransfer(
            _ request: URLRequest, options: TransferOptions, events: @escaping @Sendable (TransferEvent) -> Void
        ) -> any TransferHandle {
            start(request, options: options, lentBody: nil, events: events)
        }

        /// As ``startTransfer(_:options:events:)``, taking a URL's text as it is, and with `body`, each body piece
        /// lent to it from libcurl's (or the decoder's) buffer instead of copied into a `.data` event.
        func startTransfer(
            _ request: OutgoingRequest, options: TransferOptions, lendingBodyTo body: LentBodyReceiver?,
            events: @escaping @Sendable (TransferEvent) -> Void
        ) -> any TransferHandle {
            start(request, options: options, lentBody: body, events: events)
        }

        private func start(
            _ request: URLRequest, options: TransferOptions, lentBody: LentBodyReceiver?,
            events: @escaping @Sendable (TransferEvent) -> Void
        ) -> any TransferHandle {
            start(.request(request), options: options, lentBody: lentBody, events: events)
        }

        private func start(
            _ request: OutgoingRequest, options: TransferOptions, lentBody: LentBodyReceiver?,
            events: @escaping @Sendable (TransferEvent) -> Void
        ) -> any TransferHandle {
            let engine = leastLoadedEngine()
            let (whole, url, text): (URLRequest?, URL?, String?)
            switch request {
            case .get(let urlText): (whole, url, text) = (nil, nil, urlText)
            case .request(let request):
                let parsed = request.url
                (whole, url, text) = (request, parsed, parsed?.absoluteString)
            }
            guard let text else {
                let failed = CurlTransfer(whole, url: nil, urlText: "", engine: engine, events: events)
                DispatchQueue.global().async { failed.emit(.completed(URLError(.badURL))) }
                return failed
            }
            let transfer = CurlTransfer(
                whole, url: url, urlText: text, engine: engine, rateCap: options.rateCap,
                collectsMetrics: options.collectsMetrics, connectTimeout: options.connectTimeout,
                endsAtHead: options.endsAtHead, lentBody: lentBody, events: events)
            engine.post(.start(transfer))
            return transfer
        }

        /// True when servers' certificates are checked against a CA bundle file alone, not also against libcurl's
        /// built-in folder of CA certificates (`CURLOPT_CAPATH`, `/etc/ssl/certs` on Debian): the system's bundle
        /// (libcurl's built-in file), when it can be read, or that bundle with
        /// ``Options/additionalTrustedCertificates`` as an in-memory file (as a blob, where none could be made, the
        /// folder stays: libcurl keeps no store parsed from a blob). libcurl (7.87 and later) keeps a store parsed from
        /// a file alone for the next connections of its engine; with the folder beside it, every TLS connection parsed
        /// the bundle again, twice, 20–40 ms of CPU each time: a fifth of the CPU of 5,000 small files over HTTP/2 from a server
        /// that closes a connection after 1,000 requests (and the whole cost of a batch over many hosts). The
        /// system's tools (`update-ca-certificates`, `update-ca-trust`) write the bundle and the folder together.
        let caFolderIsLeftOut: Bool

        /// True when libcurl's built-in CA bundle file can be read.
        private static func systemBundleIsReadable(_ library: CurlLibrary) -> Bool {
            guard let easy = library.easyInit() else { return false }
            defer { library.easyCleanup(easy) }
            guard let path = library.defaultCABundle(easy) else { return false }
            return access(path, R_OK) == 0
        }

        /// The system's CA bundle followed by the PEM file at `extra`.
        private static func bundle(adding extra: URL, library: CurlLibrary) throws(LoadError) -> Data {
            let added: Data
            switch ClientCertificate.read(extra, holding: .certificate) {
            case .success(let bytes): added = bytes
            case .failure(let problem): throw .unreadableCertificates(path: extra.path, reason: problem.description)
            }
            var system = Data()
            var candidates = [
                "/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem",
            ]
            if let easy = library.easyInit() {
                if let path = library.defaultCABundle(easy) { candidates.insert(path, at: 0) }
                library.easyCleanup(easy)
            }
            for path in candidates {
                if let data = FileManager.default.contents(atPath: path) {
                    system = data
                    break
                }
            }
            return system + Data("\n".utf8) + added
        }
    }

    extension CurlTransport: LendingTransport {}

    /// A ``ClientCertificate``'s files, read once into in-memory files libcurl opens by path.
    struct ClientFiles: Sendable {
        let certificate: InMemoryPEM
        /// nil: the key is in the certificate's file.
        let key: InMemoryPEM?
        let keyPassword: String?

        init(_ client: ClientCertificate) throws(CurlTransport.LoadError) {
            func read(_ url: URL, _ part: ClientCertificate.Part) throws(CurlTransport.LoadError) -> InMemoryPEM {
                switch ClientCertificate.read(url, holding: part) {
                case .success(let bytes): return InMemoryPEM(pem: bytes, name: "nq-client-\(part)")
                case .failure(let problem):
                    throw .unreadableClientCertificate(path: url.path, reason: problem.description)
                }
            }
            certificate = try read(client.certificate, .certificate)
            if let keyFile = client.key {
                key = try read(keyFile, .key)
            } else {
                guard certificate.pem.contains(Array("PRIVATE KEY-----".utf8)) else {
                    throw .unreadableClientCertificate(
                        path: client.certificate.path,
                        reason: "no PEM private key in it, and no key file given")
                }
                key = nil
            }
            keyPassword = client.keyPassword
        }
    }
#endif
