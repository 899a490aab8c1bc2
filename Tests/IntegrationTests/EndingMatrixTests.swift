import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Every per-transfer feature crossed with every way a transfer ends, over both transports (DESIGN 14): no
/// crash, exactly one terminal event, the exact bytes on success, no part or temporary file left when the
/// request ended for good, the part kept while it is paused. A new feature or ending joins by one line in
/// ``MatrixFeature/all`` or ``MatrixEnding/all``.
struct MatrixFeature: Sendable, CustomTestStringConvertible {
    let name: String
    /// Changes the path an ending asks for (nil: the ending's own).
    var path: @Sendable (_ ending: MatrixEnding, _ path: String, _ transport: TransportKind) -> String = { _, path, _ in
        path
    }
    var headers: [String: String] = [:]
    var checksum = false
    var file = false
    /// Added through a streamed source (`add(contentsOf:)`) rather than `add(_:)`.
    var viaSource = false
    /// Added through a source that stays open while its request runs and ends only after it, as a list read
    /// from a pipe does (an `AsyncStream` fed as lines come).
    var viaOpenStream = false
    /// The endings this feature turns into a success (a mirror stands in for a source that broke).
    var survives: Set<String> = []
    /// The name the file is saved as when its response names it (nil: the destination's, `f.bin`).
    var savedName: String? = nil
    /// The folders of a list's line the file goes in, below the cell's folder guarded as an ``OutputFolder`` (made as
    /// the request is added); empty: the file is in the cell's folder, unguarded.
    var folders: [String] = []
    /// True when an earlier version of the file is at the destination, recorded under another entity tag, and the
    /// request revalidates it (issue 64): the server's 200 replaces it; any other ending leaves it as it was.
    var existingFile = false
    /// The file options, given the URL the request asks for (its mirrors are other URLs of the same bytes).
    var fileOptions: @Sendable (URL) -> NetworkRequest.FileOptions = { _ in .init() }
    var configure: @Sendable (NetworkQueue) -> Void = { _ in }
    var testDescription: String { name }

    static let size = 1_000_000

    static let all: [MatrixFeature] = [
        MatrixFeature(name: "plain"),
        MatrixFeature(name: "checksum", checksum: true),
        MatrixFeature(
            name: "server digest", path: { _, path, _ in IntegrityTests.path(path, header: "Repr-Digest", digest) }),
        MatrixFeature(name: "file", file: true),
        MatrixFeature(name: "file + checksum", checksum: true, file: true),
        MatrixFeature(
            // A truncated gzip stream reads as a short success through Foundation's own decoding (a documented
            // URLSession limit): over URLSession the dropped body is an identity one.
            name: "gzip",
            path: { ending, path, transport in
                transport == .urlSession && ending.name == "dropped mid-body" ? path : ending.gzipPath ?? path
            }, headers: ["Accept-Encoding": "gzip"]),
        MatrixFeature(name: "rate cap", configure: { $0.maximumBytesPerSecond = 200_000_000 }),
        MatrixFeature(name: "metrics", configure: { $0.collectsMetrics = true }),
        // Each server's level found by the queue (issue 75): a 503, a reset or a timeout lowers it, and the request
        // ends as without it.
        MatrixFeature(name: "adaptive concurrency", configure: { $0.adaptiveConcurrency = AdaptiveConcurrency() }),
        // A HEAD first (its window of the rolling preflights), then the GET.
        MatrixFeature(name: "accurate progress", configure: { $0.showsAccurateProgress = true }),
        MatrixFeature(name: "streamed source", file: true, viaSource: true),
        MatrixFeature(name: "list from a pipe", file: true, viaOpenStream: true),
        // A body that comes in pieces under 64 KiB and fits in one chunk of the file's buffer: on Linux its part has no
        // name until it is linked into place whole, or kept (named then) while it is paused.
        MatrixFeature(name: "file in small pieces", path: { _, path, _ in paced(path) }, file: true),
        // One file over four connections (issue 36): paced at 1 MB/s a connection, so that the first one, alone for
        // its first 10 ms, finds the file worth sharing.
        // A cut at half the file falls past the range its first connection kept once the file was shared: the
        // other connections fetch the rest, and the file is whole.
        MatrixFeature(
            name: "segmented", path: { _, path, _ in paced(path) }, file: true, survives: ["dropped mid-body"],
            fileOptions: { _ in .init(maximumConnections: 4, minimumSegmentSize: 64 << 10) }),
        // Three connections over the URL and two mirrors of it (the same bytes under other URLs).
        MatrixFeature(
            name: "mirrors", path: { _, path, _ in paced(path) }, file: true, survives: ["dropped mid-body"],
            fileOptions: { url in
                .init(
                    maximumConnections: 3,
                    mirrors: [
                        url.appending(queryItems: [.init(name: "mirror", value: "1")]),
                        url.appending(queryItems: [.init(name: "mirror", value: "2")]),
                    ],
                    minimumSegmentSize: 64 << 10)
            }),
        // The same over a server that answers every range with the whole file (issue 50): the first connection's
        // stream goes on alone, taking each range, and the source takes no more ranges; a stream cut short is
        // followed by a new one, which skips what is on disk.
        MatrixFeature(
            name: "split fallback", path: { _, path, _ in wrongRanges(paced(path)) }, file: true,
            survives: ["dropped mid-body"],
            fileOptions: { _ in .init(maximumConnections: 4, minimumSegmentSize: 64 << 10) }),
        // A file that may use four connections, whose answer is not one to share on (too small for two of its
        // segments): the connection that got it carries it as it comes (issue 73), and every ending is a file of one
        // connection's (its part kept under its validator while paused).
        MatrixFeature(
            name: "carried by one connection", path: { _, path, _ in paced(path) }, file: true,
            fileOptions: { _ in .init(maximumConnections: 4, minimumSegmentSize: 1 << 30) }),
        // The URL and a mirror whose every connection sends its head and then waits 3 s (issue 50): at the end of
        // the file a free connection races a range that brought nothing (issue 62), and the mirror loses the race;
        // when the mirror is the last source left it is waited for, as without mirrors.
        MatrixFeature(
            name: "stalled mirror", path: { _, path, _ in paced(path) }, file: true, survives: ["dropped mid-body"],
            fileOptions: { url in
                .init(
                    maximumConnections: 3,
                    mirrors: [
                        url.appending(queryItems: [
                            .init(name: "stallAt", value: "0"), .init(name: "stall", value: "3000"),
                        ])
                    ],
                    minimumSegmentSize: 64 << 10)
            }),
        // The URL and a mirror that sends other bytes under the same length and entity tag, with the file's checksum
        // (issue 62): the file that fails its checksum is fetched again from the URL alone, in the same attempt.
        MatrixFeature(
            name: "lying mirror", path: { _, path, _ in paced(path) }, checksum: true, file: true,
            survives: ["dropped mid-body"],
            fileOptions: { url in
                .init(
                    maximumConnections: 3, mirrors: [url.appending(queryItems: [.init(name: "seed", value: "7")])],
                    minimumSegmentSize: 64 << 10)
            }),
        // A Metalink's stale first location (issue 85): the request's URL serves other bytes under the same length and
        // entity tag (and meets the ending), its first mirror is dead (nothing listens on port 1), its second serves the
        // file. The file that fails its checksum is fetched again from the next location alone, past the dead one, in
        // the same attempt.
        MatrixFeature(
            name: "lying first location", path: { _, path, _ in lying(path) }, checksum: true, file: true,
            fileOptions: { url in
                .init(mirrors: [URL(string: "http://127.0.0.1:1/f.bin")!, honest(url)])
            }),
        // Starts to the server spaced 50 ms apart (issue 53): a retry or a resume waits its turn.
        MatrixFeature(name: "paced", configure: { $0.hostPacing = HostPacing(interval: 0.05) }),
        // Every response says the server's budget is spent for a second (issue 53): the server is held, and a retry
        // or a resume waits for the hold's end; the request itself runs on.
        MatrixFeature(
            name: "held",
            path: { _, path, _ in path + (path.contains("?") ? "&" : "?") + "spent=1" }),
        // The response names the file (issue 54): saved as `named.bin` beside the destination. A folder made where the
        // destination goes is in no one's way then: the file is saved under its own name, the folder kept.
        MatrixFeature(
            name: "named by response",
            path: { _, path, _ in
                path.hasPrefix("/bytes/")
                    ? path + (path.contains("?") ? "&" : "?")
                        + "header=Content-Disposition:attachment%3B%20filename%3Dnamed.bin"
                    : path
            }, file: true, survives: ["folder at the file mid-body"],
            savedName: "named.bin", fileOptions: { _ in .init(namesFileFromResponse: true) }),
        // A list's line with its folder (issue 60): the destination below a guarded output folder, its folders made as
        // the request is added, the file recording its origin.
        MatrixFeature(name: "in a line's folder", file: true, folders: ["line", "folder"]),
        // An earlier version of the file is there, saved under another entity tag (issue 64): the conditional GET's
        // 200 replaces it through the part. The file cannot become a folder mid-body, being there already.
        MatrixFeature(
            name: "revalidated file", file: true, survives: ["folder at the file mid-body"], existingFile: true,
            fileOptions: { _ in .init(existingFile: .revalidate) }),
        MatrixFeature(
            name: "redirect",
            path: { _, path, _ in
                "/redirect/1?to=" + path.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            }),
    ]

    /// `path` paced at 1 MB/s a connection, unless it has a pace of its own.
    static func paced(_ path: String) -> String {
        path.contains("rate=") || !path.hasPrefix("/bytes/")
            ? path : path + (path.contains("?") ? "&" : "?") + "rate=1000000"
    }

    /// `path` serving other bytes under the same length and entity tag (a `/bytes/` path; others as they are).
    static func lying(_ path: String) -> String {
        path.hasPrefix("/bytes/") ? path + (path.contains("?") ? "&" : "?") + "seed=7" : path
    }

    /// A mirror of `url` that serves the file's own bytes without the ending's faults (a `/bytes/` URL without its
    /// query; others as they are): the ending happens to the lying location, and the mirror is a good one.
    static func honest(_ url: URL) -> URL {
        guard url.path.hasPrefix("/bytes/"), var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return url
        }
        parts.query = nil
        return parts.url ?? url
    }

    /// `path` answering its ranges with the whole file (a `/bytes/` path; others as they are).
    static func wrongRanges(_ path: String) -> String {
        path.hasPrefix("/bytes/") ? path + (path.contains("?") ? "&" : "?") + "rangeFault=whole" : path
    }

    static let digest = "sha-256=:\(IntegrityTests.base64(IntegrityTests.sha256(0..<size))):"
}

struct MatrixEnding: Sendable, CustomTestStringConvertible {
    enum Action: Sendable {
        case none, cancelAtHead, cancelMidBody, pauseThenResume, pauseThenCancel
        /// A folder is made where the file goes once body bytes have come (a body in memory goes on).
        case folderMidBody
        /// The server is stopped once body bytes have come (its connections closed, its port refusing), and started
        /// again on the same port when the queue says it holds the server.
        case restartMidBody
    }
    enum End: Sendable, Equatable { case finished, failed, cancelled }

    let name: String
    /// The path asked for, given a key unique to the test case.
    let path: @Sendable (_ key: String) -> String
    var gzipPath: String? = nil
    var action = Action.none
    var timeout: TimeInterval = 30
    var retries = false
    var sizeCap: Int64? = nil
    var timeLimits: TimeLimits? = nil
    /// Where the request goes instead of the test's server (and the route's): a server that is down.
    var base: URL? = nil
    /// The queue's dead-server policy for this ending (nil: the default).
    var deadHosts: DeadHosts? = nil
    /// The queue's retry policy for this ending (nil: as ``retries`` says).
    var retryPolicy: RetryPolicy? = nil
    let end: End
    /// How a body going to memory ends, when it ends otherwise than a file (nil: as ``end``).
    var memoryEnd: End? = nil
    var testDescription: String { name }

    static let size = MatrixFeature.size
    /// Slow enough for a control to land mid-body (half a second: a control lands on the first coalesced progress
    /// report, which a clean-clone run under the address sanitizer, eight suites at once, delivered after a quarter
    /// second's body had ended twice), fast enough for the matrix.
    static let slow = "/bytes/\(size)?rate=2000000"
    /// A body that stalls at its middle until the client hangs up: a control that must land before the end (a
    /// cancel, a pause then a cancel) lands there however late a loaded run delivers the head or the first progress
    /// report (at half a second's body, clean-clone runs delivered them after the body had ended).
    static let stalled = "/bytes/\(size)?stallByte=\(size / 2)&stall=10000"

    static let all: [MatrixEnding] = [
        MatrixEnding(name: "success", path: { _ in "/bytes/\(size)" }, gzipPath: "/gzip/\(size)", end: .finished),
        MatrixEnding(name: "bad status", path: { _ in "/status/500" }, end: .failed),
        MatrixEnding(
            name: "dropped mid-body", path: { key in "/bytes/\(size)?dropAt=50&key=\(key)" },
            gzipPath: "/gzip/\(size)?fault=truncate",
            end: .failed),
        // The second GET of the request (a split file's first range; nothing else asks twice) is cut after 100,000
        // bytes of its body: a split file asks for the rest of that range again; every other request is not touched.
        MatrixEnding(
            name: "a range dropped mid-body",
            path: { key in "/bytes/\(size)?dropAfter=100000&dropArrival=2&key=\(key)" }, end: .finished),
        // Every response stalls at the middle of the body, so that a split file's end game (a new connection racing the
        // stalled range) meets the same stall. A 10 s stall for a 0.4 s idle timeout: a loaded machine whose timer fires a second late still finds the
        // transfer idle (at 1.5 s, a CI run's timers were late enough for the body to resume first). The request
        // ends at the timeout, and the server's stall ends when the client hangs up.
        MatrixEnding(
            name: "idle timeout", path: { _ in "/bytes/\(size)?stallByte=\(size / 2)&stall=10000" }, timeout: 0.4,
            end: .failed),
        MatrixEnding(name: "cancel at head", path: { _ in stalled }, action: .cancelAtHead, end: .cancelled),
        MatrixEnding(name: "cancel mid-body", path: { _ in stalled }, action: .cancelMidBody, end: .cancelled),
        // A pause that comes late finds the body ended, and the request finished, as a resume would have.
        MatrixEnding(name: "pause, resume", path: { _ in slow }, action: .pauseThenResume, end: .finished),
        MatrixEnding(name: "pause, cancel", path: { _ in stalled }, action: .pauseThenCancel, end: .cancelled),
        // The file refuses its body (a folder is never replaced), wherever its part is: unnamed, named, split.
        MatrixEnding(
            name: "folder at the file mid-body", path: { _ in slow }, action: .folderMidBody, end: .failed,
            memoryEnd: .finished),
        MatrixEnding(
            name: "retried, then success", path: { key in "/bytes/\(size)?dropAt=50&key=\(key)" }, retries: true,
            end: .finished),
        // The request's first connection (its HEAD, with accurate progress) is reset once its request is read: a
        // HEAD is an attempt (semantics 8), a split file's location is asked again (issue 71), and the file comes.
        MatrixEnding(
            name: "first connection reset (HEAD failed once)", path: { key in "/bytes/\(size)?resets=1&key=\(key)" },
            retries: true, end: .finished),
        // The server stops mid-body and comes back once the queue holds it (semantics 24): the request resumes.
        MatrixEnding(
            name: "server restarted mid-request", path: { _ in slow }, action: .restartMidBody,
            deadHosts: DeadHosts(failuresInARow: 1),
            retryPolicy: RetryPolicy(maximumAttempts: 4, backoff: .init(initialDelay: 0.1, jitter: false)),
            end: .finished),
        MatrixEnding(
            name: "size cap", path: { _ in "/bytes/\(size)" }, gzipPath: "/gzip/\(size)", sizeCap: Int64(size / 2),
            end: .failed),
        // 50 kB/s where 200 kB/s is the least over 0.3 s: too slow, and too slow again when retried (a file's
        // retry continues its part); nothing is left.
        MatrixEnding(
            name: "too slow", path: { _ in "/bytes/\(size)?rate=50000" }, retries: true,
            timeLimits: TimeLimits(lowestSpeed: LowestSpeed(bytesPerSecond: 200_000, over: 0.3)), end: .failed),
        // 10 s of body where the deadline is 0.5 s (a HEAD first has a deadline of its own).
        MatrixEnding(
            name: "past deadline", path: { _ in "/bytes/\(size)?rate=100000" }, retries: true,
            timeLimits: TimeLimits(deadline: 0.5), end: .failed),
        // Nobody listens on port 1: the connect is refused, and one refusal makes the server down (issue 64). A
        // request with mirrors (here on the same server) tries them and fails as they do.
        MatrixEnding(
            name: "host down", path: { _ in "/bytes/\(size)" }, base: URL(string: "http://127.0.0.1:1/"),
            deadHosts: DeadHosts(failuresInARow: 1), end: .failed),
    ]
}

/// Hears the ends and performs an ending's control at the head.
private final class MatrixDelegate: NetworkQueueDelegate {
    let terminals = Box(0)
    let drains = Box(0)
    let cancelsAtHead: Bool
    /// Hears the queue hold a server.
    let onHold: @Sendable () -> Void
    init(cancelsAtHead: Bool, onHold: @escaping @Sendable () -> Void = {}) {
        self.cancelsAtHead = cancelsAtHead
        self.onHold = onHold
    }

    func networkQueue(_ queue: NetworkQueue, serverHoldChanged hold: ServerHold) {
        if hold.change == .held { onHold() }
    }

    func networkQueue(_ queue: NetworkQueue, didReceiveHeaders request: NetworkRequest, head: ResponseHead) {
        if cancelsAtHead { queue.cancel(request) }
    }
    func networkQueue(_ queue: NetworkQueue, didFinish request: NetworkRequest, response: NetworkResponse) {
        terminals.with { $0 += 1 }
    }
    func networkQueue(_ queue: NetworkQueue, didFail request: NetworkRequest, error: NetworkQueueError) {
        terminals.with { $0 += 1 }
    }
    func networkQueueDidFinish(_ queue: NetworkQueue) { drains.with { $0 += 1 } }
}

/// A path of the real network a request may take to the loopback server, over CurlTransport (URLSession on
/// Linux takes no proxy in code and trusts no test CA).
enum MatrixRoute: String, Sendable, CaseIterable {
    /// Through tinyproxy, set in code.
    case proxy
    /// Over HTTP/2 and TLS, through nginx in front of the server.
    case http2
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct EndingMatrixTests {
    static let keys = Box(0)
    /// The cells whose server was restarted mid-body.
    static let restarts = Box(0)

    #if os(Linux)
        /// Every ending, for a body in memory and a file, through a real proxy and over HTTP/2 (nginx passing
        /// the server's bytes on as they come).
        @Test(
            .enabled(if: RealProxy.runs(.tinyproxy), "needs tinyproxy (apt-get install tinyproxy)"),
            .enabled(if: NginxServer.runs, "needs nginx (apt-get install nginx)"),
            arguments: MatrixRoute.allCases, MatrixFeature.all.filter { ["plain", "file"].contains($0.name) })
        func everyEndingIsSafeOnTheRealNetworksPaths(_ route: MatrixRoute, _ feature: MatrixFeature) async throws {
            let server = try LoopbackServer()
            // A restart behind a proxy or nginx is their 502, not a refused connect: not this path's question.
            let endings = MatrixEnding.all.filter { $0.action != .restartMidBody }
            switch route {
            case .proxy:
                try await RealProxy.with(.tinyproxy) { proxy in
                    var options = CurlTransport.Options()
                    options.proxy = .through(proxy.proxy(.http))
                    for ending in endings {
                        try await run(feature, ending, .curl, server) { try CurlTransport(options: options) }
                    }
                }
            case .http2:
                try await NginxServer.with(files: [:], upstream: server.port) { nginx in
                    var options = CurlTransport.Options()
                    options.additionalTrustedCertificates = nginx.caFile
                    for ending in endings {
                        try await run(feature, ending, .curl, server, base: nginx.url("/")) {
                            try CurlTransport(options: options)
                        }
                    }
                }
            }
        }
    #endif

    @Test(arguments: TransportKind.allCases, MatrixFeature.all)
    func everyEndingIsSafeForThisFeature(_ transport: TransportKind, _ feature: MatrixFeature) async throws {
        let server = try LoopbackServer()
        for ending in MatrixEnding.all {
            try await run(feature, ending, transport, server)
        }
    }

    /// One cell: `feature` ending as `ending` over `transport` (made by `makeTransport` when given), asking `base`
    /// (default: the server itself) for the ending's path.
    private func run(
        _ feature: MatrixFeature, _ ending: MatrixEnding, _ transport: TransportKind, _ server: LoopbackServer,
        base: URL? = nil, makeTransport: (() throws -> any Transport)? = nil
    ) async throws {
        let routedBase = base
        // The ending's own server when it restarts one, on a port kept for it.
        let site = ending.action == .restartMidBody ? try TransientFaultTests.Restartable() : nil
        let base = ending.base ?? site.map { $0.reservation.url("/") } ?? base
        let cell = "\(feature.name) × \(ending.name) over \(base.map { "\($0)" } ?? "\(transport)")"
        let top = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: top) }
        let output = feature.folders.isEmpty ? nil : try OutputFolder(path: top.path)
        let directory = feature.folders.reduce(top) { $0.appendingPathComponent($1) }
        let file = directory.appendingPathComponent("f.bin")
        let number = Self.keys.with {
            $0 += 1
            return $0
        }
        let key = "matrix-\(number)"
        let queue = NetworkQueue(transport: try makeTransport?() ?? transport.make())
        queue.retryPolicy =
            ending.retryPolicy
            ?? (ending.retries
                ? RetryPolicy(maximumAttempts: 2, backoff: .init(initialDelay: 0, jitter: false)) : .never)
        feature.configure(queue)
        if let deadHosts = ending.deadHosts { queue.deadHosts = deadHosts }
        let delegate = MatrixDelegate(cancelsAtHead: ending.action == .cancelAtHead) { site?.start() }
        queue.delegate = delegate
        let path = feature.path(ending, ending.path(key), transport)
        var urlRequest = URLRequest(
            url: base.map { URL(string: $0.absoluteString.dropLast() + path)! } ?? server.url(path))
        urlRequest.timeoutInterval = ending.timeout
        for (name, value) in feature.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        let controlled = Box(false)
        let action = ending.action
        let isFile = feature.file
        let earlier = Data(repeating: 7, count: 1_000)
        if feature.existingFile {
            try earlier.write(to: file)
            try RevalidationIntegrationTests.recordTag("\"earlier\"", at: file.path)
        }
        let (stream, feed) = AsyncStream<NetworkRequest>.makeStream()
        var fileOptions = feature.fileOptions(urlRequest.url!)
        fileOptions.outputFolder = output
        let request = NetworkRequest(
            urlRequest,
            destination: feature.file ? .file(file) : .memory,
            validation: .init(maximumResponseSize: ending.sizeCap.map { .bytes($0) } ?? .automatic),
            integrity: .init(checksum: feature.checksum ? IntegrityTests.sha256(0..<MatrixFeature.size) : nil),
            fileOptions: fileOptions,
            timeLimits: ending.timeLimits,
            handlers: .init(
                onDownloadProgress: { [weak queue] progress in
                    guard progress.completedBytes > 0, let queue, action != .none, action != .cancelAtHead else {
                        return
                    }
                    let isFirst = controlled.with { done in
                        defer { done = true }
                        return !done
                    }
                    guard isFirst else { return }
                    if action == .restartMidBody { return site?.stop() ?? () }
                    if action == .folderMidBody {
                        guard isFile else { return }
                        try? FileManager.default.createDirectory(at: file, withIntermediateDirectories: false)
                        try? Data("keep me".utf8).write(to: file.appendingPathComponent("inside.txt"))
                        return
                    }
                    for request in queue.requests {
                        if action == .cancelMidBody { queue.cancel(request) } else { queue.pause(request) }
                    }
                },
                // The pipe's writer closes it once the request it gave has ended.
                onCompletion: { _ in feed.finish() }))
        if feature.viaOpenStream {
            feed.yield(request)
            queue.add(contentsOf: stream)
        } else if feature.viaSource {
            queue.add(contentsOf: [request])
        } else {
            feed.finish()
            try queue.add(request)
        }
        switch ending.action {
        case .pauseThenResume, .pauseThenCancel:
            queue.go()
            await eventually { request.state == .paused || request.state == .finished }
            if request.state == .paused {
                if feature.file {
                    #expect(
                        FileManager.default.fileExists(atPath: file.path + ".part"),
                        "\(cell): the part is kept while paused")
                }
                if ending.action == .pauseThenResume { queue.resume(request) } else { queue.cancel(request) }
            }
            await queue.run()
        default:
            await queue.run()
        }
        await eventually { delegate.drains.current >= 1 }
        if let site {
            // Stopped at the first progress report, once, and started again once held. Under a sanitizer the report
            // may come after the body ended: the request finished before the stop, and no hold restarts the server.
            #expect(site.stops <= 1 && site.restarts <= site.stops, "\(cell): \(site.stops) stops")
            if site.restarts == 1 { Self.restarts.with { $0 += 1 } }
        }
        #expect(delegate.terminals.current == 1, "\(cell): one terminal event")
        #expect(delegate.drains.current == 1, "\(cell): one drain")
        let end: MatrixEnding.End =
            switch request.state {
            case .finished: .finished
            case .cancelled: .cancelled
            default: .failed
            }
        let expected: MatrixEnding.End =
            if feature.survives.contains(ending.name) {
                .finished
            } else {
                feature.file ? ending.end : ending.memoryEnd ?? ending.end
            }
        #expect(end == expected, "\(cell): \(String(describing: request.failure))")
        switch (ending.name, request.failure) {
        case ("too slow", .tooSlow?), ("past deadline", .deadlineExceeded?): break
        case ("too slow", _), ("past deadline", _):
            Issue.record("\(cell): ended with \(String(describing: request.failure))")
        // Straight to the server (a proxy answers for it), without mirrors to try: the server is down.
        case ("host down", .hostDown(let host, 1)?): #expect(host == "http://127.0.0.1:1", "\(cell)")
        case ("host down", _) where routedBase == nil && makeTransport == nil && fileOptions.mirrors.isEmpty:
            Issue.record("\(cell): ended with \(String(describing: request.failure))")
        default: break
        }
        let left = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        if ending.action == .folderMidBody, feature.file, feature.savedName == nil, !feature.existingFile {
            // Refused before the part's link or rename, the folder is left as it was, and nothing beside it. The
            // reason is the refusal's ("is a directory") for a part without a name, `rename`'s ("Is a directory") for
            // a named one: a split part, or a part that took its name ahead of its end.
            guard case .fileError(let path, let reason)? = request.failure else {
                Issue.record("\(cell): ended with \(String(describing: request.failure))")
                return
            }
            #expect(path == file.path && reason.lowercased() == "is a directory", "\(cell): \(reason) at \(path)")
            #expect(left == ["f.bin"], "\(cell): \(left)")
            #expect(
                try Data(contentsOf: file.appendingPathComponent("inside.txt")) == Data("keep me".utf8),
                "\(cell): the folder kept")
        } else if end == .finished {
            if feature.file {
                let saved = feature.savedName ?? "f.bin"
                // A folder made at the destination mid-body is kept beside a file the response named.
                let expected = ending.action == .folderMidBody && saved != "f.bin" ? ["f.bin", saved] : [saved]
                #expect(left.sorted() == expected, "\(cell): \(left)")
                let savedFile = file.deletingLastPathComponent().appendingPathComponent(saved)
                #expect(try Data(contentsOf: savedFile) == pattern(0..<MatrixFeature.size), "\(cell): the file's bytes")
                #expect(request.response?.fileURL?.lastPathComponent == saved, "\(cell): the response's file")
                // Every saved file says where it came from (issue 60).
                #expect(
                    FileOrigin.recorded(atPath: savedFile.path) == .url(FileOrigin.text(of: urlRequest.url!)),
                    "\(cell): the file's origin")
            } else {
                #expect(left.isEmpty, "\(cell): \(left)")
                #expect(
                    (try? request.result?.get())?.body == pattern(0..<MatrixFeature.size), "\(cell): the body's bytes")
            }
        } else if feature.existingFile {
            // The earlier version stays as it was, and nothing beside it.
            #expect(left == ["f.bin"], "\(cell): \(left)")
            #expect(try Data(contentsOf: file) == earlier, "\(cell): the earlier file kept")
        } else {
            #expect(left.isEmpty, "\(cell): nothing left behind, found \(left)")
        }
    }
}
