import Foundation

/// A small HTTP/1.1 server on 127.0.0.1 for tests, benchmarks and the Demo, with fault injection.
///
/// It listens on a random free port, serves each connection on its own thread with keep-alive, and
/// counts what it sees. Endpoints (every one also takes `delay=<ms>` before the head,
/// `rate=<bytes per second>` to throttle the body, and `spent=<seconds>` to say in every head that the request
/// budget is spent until then: `X-RateLimit-Remaining: 0`, `X-RateLimit-Reset: <seconds>`):
///
/// | path | response |
/// |---|---|
/// | `/bytes/N` | N bytes (byte i is `i % 256`) with Content-Length and an ETag; HEAD and Range (206 / 416) |
/// | `/nohead/N` | as `/bytes/N`, but HEAD answers 405 |
/// | `/chunked/N` | N bytes, chunked, no length |
/// | `/status/CODE` | that status with a short body |
/// | `/drop/N` | announces N bytes, sends half, closes the connection |
/// | `/upload` | reads the request body and answers with its length in decimal |
/// | `/redirect/K` | K redirects (`code=` 301/302/303/307/308, default 302), then to `to=` (default `/bytes/16`) |
/// | `/bytes/N?etag=&noetag=1&lastModified=&ignoreRange=1&refuseRange=1&badRange=1&dropAt=P&dropAfter=B&dropArrival=N&key=` | N bytes honouring `Range`/`If-Range` against its ETag (`"bytes-N"` or `"<etag>"`), or Last-Modified; the variations ignore or refuse ranges, answer the wrong range, or cut the first GET of a key (the Nth with `dropArrival`) at P% of the file or after B bytes of its body |
/// | `/barrier/N?n=K` | held until K barrier requests have arrived per batch of K (or 10 s; `wait=S`: S s), then N bytes |
/// | `/gzip/N` | N bytes gzip-encoded if the client accepts gzip or `force=1`, else as `/bytes/N`; `fault=truncate` cuts the stream at 60% with a matching Content-Length, `fault=corrupt` breaks its checksum |
/// | `/reset/N` | announces N bytes, sends half, resets the connection (TCP RST) |
/// | `/malformed` | a response with a malformed status line |
/// | `/cookie?value=V` | sets the cookie `session=V` |
/// | `/bytes/N?header=Name:Value` | as `/bytes/N`, with one more header field (a digest, say) |
/// | `/raw/NAME` | a byte-exact hostile response from ``rawResponses`` (conflicting lengths, bare CR/LF/NUL, …) |
/// | `/bighead?cookies=N&size=S` | a head setting N cookies, then a field of S bytes |
/// | `/trickle/N/K/MS` | N bytes in K pieces, MS ms apart, with Content-Length and an ETag; Range (206 from its start); `forever=1`: chunked pieces without end |
/// | `/endless` | a chunked body at full speed without end (`nohead=1`: HEAD answers 405) |
/// | `/shared/N?rate=R&best=B` | N bytes, the route's transfers sharing R bytes/s up to B at once, less beyond (a disk that seeks) |
/// | `/capped/N?rate=R` | N bytes (Range: 206) paced at R bytes/s per response from its first byte: a cap per connection |
/// | `/crowd/N?max=M&ms=L` | 503 when more than M of the route's transfers are in flight, else N bytes after L ms |
/// | `/latency/N?ms=L` | N bytes after L ms (default 100), however many run |
///
/// `/bytes/N?stallAt=P&stall=MS` sends nothing more for MS milliseconds once P% of its body is sent, or until the
/// client hangs up (the request then counts as abandoned); a response cut by `dropAt=` does not stall. `stallByte=B` stalls
/// so at byte B of the whole body, whatever range a response sends; with `stallOnce=1`, only the first GET of its `key=`
/// stalls. With `hold=1` instead of `stall=`, it sends nothing more until ``releaseHeld()`` (``heldResponses`` counts
/// the responses held).
///
/// `/bytes/N?sndbuf=S` sets the connection's kernel send buffer to S bytes first, so that the server's
/// own byte counter (``Statistics/bytesPerSecond``) follows what the client reads.
///
/// Any request with `silent=1` gets no answer at all until its client hangs up (the only way it ends is the client's
/// own time limit).
///
/// Any request with `continue=1` gets an interim `100 Continue` head before its response.
///
/// For HEAD requests only: `headEncoding=<name>` adds a Content-Encoding header, `headStatus=<code>` answers
/// that status instead, and `headDrop=1` closes the connection without answering.
public final class LoopbackServer: Sendable {
    /// What the server has seen since it started or since ``resetStatistics()``.
    public struct Statistics: Sendable, Hashable {
        /// Requests whose head was received.
        public var requests = 0
        /// Requests being served now.
        public var inFlight = 0
        /// The most requests served at once: a request counts from its head until just before the last
        /// byte of its response is written, so a client that waits for one response before starting the
        /// next request is never counted twice.
        public var maxInFlight = 0
        /// Connections accepted.
        public var connections = 0
        /// Every request as `METHOD target`, in arrival order.
        public var log: [String] = []
        /// The headers of every request (names lowercased), in the same order as ``log``.
        public var headers: [[String: String]] = []
        /// When each request's head arrived, in seconds since the Unix epoch, in the same order as ``log``.
        public var arrivals: [Double] = []
        /// Bytes written to clients, heads included.
        public var bytesWritten = 0
        /// Connections open now (accepted and not yet closed by either side).
        public var openConnections = 0
        /// Bytes handed to the kernel in each whole second since the counters started (index 0: the first
        /// second), counted when each write returns: the wire's pace as the server sees it.
        public var bytesPerSecond: [Int] = []
        /// Each request's start and end (its number, whether the event is its end), in order.
        var spans: [Span] = []
        /// The requests whose client hung up before the whole response.
        var abandoned: Set<Int> = []

        /// The most requests served at once, not counting those whose client hung up before the whole response. A
        /// client frees a request's slot when it cancels it, and the server notices the closed connection a little
        /// later (at its next write or wake): ``maxInFlight`` counts those twice.
        public var maxInFlightKept: Int {
            var running = 0
            var most = 0
            var started: Set<Int> = []
            for span in spans where !abandoned.contains(span.id) {
                if span.isEnd {
                    if started.remove(span.id) != nil { running -= 1 }
                } else {
                    started.insert(span.id)
                    running += 1
                    most = max(most, running)
                }
            }
            return most
        }

        struct Span: Sendable, Hashable {
            let id: Int
            let isEnd: Bool
        }
    }

    struct State {
        var statistics = Statistics()
        var openConnections: Set<Int32> = []
        var barrierArrivals = 0
        /// Transfers in flight per load-shaped route and key (`/shared`, `/crowd`), and the `/crowd` 503s.
        var inFlight: [String: Int] = [:]
        /// The most in flight at once per `/crowd` key.
        var peakInFlight: [String: Int] = [:]
        var refusedCrowd = 0
        /// Responses held by `hold=1` now, and whether ``releaseHeld()`` let them go on.
        var held = 0
        var heldReleased = false
        /// Requests seen per `/flaky` key.
        var flakyArrivals: [String: Int] = [:]
        /// Requests seen per `resets` key (see ``respond(to:reader:with:)``).
        var resetArrivals: [String: Int] = [:]
        /// Every `n`-th connection is reset as it is accepted (0: none); see ``resetConnections(every:)``.
        var resetEvery = 0
        var isStopped = false
        /// The number of the last request received (never reset: the spans' ids).
        var serial = 0
        /// When the counters started, in uptime nanoseconds.
        var epoch = DispatchTime.now().uptimeNanoseconds

        /// Counts `bytes` written now in ``Statistics/bytesPerSecond``.
        mutating func noteWritten(_ bytes: Int) {
            let second = Int((DispatchTime.now().uptimeNanoseconds &- epoch) / 1_000_000_000)
            if second >= statistics.bytesPerSecond.count {
                statistics.bytesPerSecond += repeatElement(0, count: second + 1 - statistics.bytesPerSecond.count)
            }
            statistics.bytesPerSecond[second] += bytes
        }
    }

    /// The port the server listens on.
    public let port: UInt16
    private let listener: Int32
    let state = Protected(State())

    /// Starts a server on 127.0.0.1 at a free port. The first server of a process raises its soft limit of open
    /// files to the hard limit (at most 65,536): a test run holds hundreds of servers and thousands of
    /// connections at once, past the 1,024 many systems start a process with.
    /// - Throws: ``Socket/Failure`` when the socket cannot be created or bound.
    public convenience init() throws { try self.init(preferredPort: 0) }

    /// Starts a server on 127.0.0.1 at `preferredPort` when it is free, else at a free port (0: any free port): the
    /// Demo's built-in set keeps its URLs from run to run, so that a rerun finds the files it saved as its own (each
    /// records the URL it came from).
    public init(preferredPort: UInt16) throws {
        _ = Self.raisedDescriptorLimit
        (listener, port) = try (preferredPort == 0 ? nil : try? Socket.listen(port: preferredPort)) ?? Socket.listen()
        startAccepting()
    }

    /// Starts a server on the port `held` holds (made `sharedWithServers`): stopped, and started again on the same
    /// port, it is a server restarted (its port refuses connects between, and no other server can take it).
    /// - Throws: ``Socket/Failure`` when the socket cannot be created or bound (`held` not shared with servers).
    public init(on held: RefusingPort) throws {
        _ = Self.raisedDescriptorLimit
        (listener, port) = try Socket.listen(port: held.port, sharingPort: true)
        startAccepting()
    }

    /// Starts the thread that accepts connections.
    private func startAccepting() {
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "LoopbackServer.accept"
        thread.start()
    }

    deinit { stop() }

    /// The soft limit of open files after raising it (once per process; unchanged if it cannot be raised).
    private static let raisedDescriptorLimit: UInt64 = {
        var limits = rlimit()
        #if os(Linux)
            let resource = Int32(RLIMIT_NOFILE.rawValue)
        #else
            let resource = RLIMIT_NOFILE
        #endif
        guard getrlimit(resource, &limits) == 0 else { return 0 }
        let wanted = min(UInt64(limits.rlim_max), 65_536)
        if UInt64(limits.rlim_cur) < wanted {
            limits.rlim_cur = rlim_t(wanted)
            if setrlimit(resource, &limits) == 0 { return wanted }
        }
        return UInt64(limits.rlim_cur)
    }()

    /// `http://127.0.0.1:<port>`.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// The URL of `path` (which may include a query) on this server.
    public func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    /// A snapshot of the counters.
    public var statistics: Statistics {
        state.with { state in
            var statistics = state.statistics
            statistics.openConnections = state.openConnections.count
            return statistics
        }
    }

    /// Zeroes the counters and the barrier.
    public func resetStatistics() {
        state.with { state in
            state.statistics = Statistics(inFlight: state.statistics.inFlight)
            state.barrierArrivals = 0
            state.refusedCrowd = 0
            state.epoch = DispatchTime.now().uptimeNanoseconds
        }
    }

    /// How many responses `hold=1` holds now (each at its `stallAt=` or `stallByte=`, its head and first bytes sent).
    public var heldResponses: Int { state.with { $0.held } }

    /// Lets every response `hold=1` holds, and every later one, go on.
    public func releaseHeld() {
        state.with { $0.heldReleased = true }
    }

    /// Resets every `n`-th connection as it is accepted, before reading anything (0: none): a server whose accepts
    /// break now and then.
    public func resetConnections(every n: Int) {
        state.with { $0.resetEvery = max(0, n) }
    }

    /// Stops accepting and closes every connection. Safe to call more than once.
    public func stop() {
        let wasStopped = state.with { state in
            defer { state.isStopped = true }
            if !state.isStopped { for fd in state.openConnections { Socket.shutdown(fd) } }
            return state.isStopped
        }
        guard !wasStopped else { return }
        // Wakes the accept loop, which closes the listener itself: closed here, its descriptor number could
        // be reused by another server's listener while the loop still calls accept() on it, and the loop
        // would take (and drop) that server's connections.
        Socket.shutdown(listener)
    }

    private func acceptLoop() {
        defer { Socket.close(listener) }
        while true {
            let fd = Socket.accept(listener)
            if fd < 0 {
                if state.with({ $0.isStopped }) { return }
                continue
            }
            let accepted: Bool? = state.with { state in
                guard !state.isStopped else { return false }
                state.statistics.connections += 1
                if state.resetEvery > 0, state.statistics.connections % state.resetEvery == 0 { return nil }
                state.openConnections.insert(fd)
                return true
            }
            guard let accepted else {
                Socket.reset(fd)
                Socket.close(fd)
                continue
            }
            guard accepted else {
                Socket.close(fd)
                return
            }
            let thread = Thread { [self] in serve(fd) }
            thread.stackSize = 256 * 1024
            thread.start()
        }
    }

    /// Serves requests on one connection until either side closes it.
    private func serve(_ fd: Int32) {
        var reader = RequestReader(fd: fd)
        defer {
            state.with { _ = $0.openConnections.remove(fd) }
            Socket.close(fd)
        }
        while true {
            guard let request = try? reader.nextHead() else { return }
            let id = state.with { state in
                state.statistics.requests += 1
                state.statistics.inFlight += 1
                state.statistics.maxInFlight = max(state.statistics.maxInFlight, state.statistics.inFlight)
                state.statistics.log.append("\(request.method) \(request.target)")
                state.statistics.headers.append(request.headers)
                state.statistics.arrivals.append(Date().timeIntervalSince1970)
                state.serial += 1
                state.statistics.spans.append(.init(id: state.serial, isEnd: false))
                return state.serial
            }
            let response = Response(fd: fd, id: id, server: self)
            response.isHead = request.method == "HEAD"
            // `spent=S` on any route: the response says the request budget is spent for S seconds.
            if let spent = request.query["spent"] {
                response.extraHeaders = ["X-RateLimit-Remaining": "0", "X-RateLimit-Reset": spent]
            }
            let keepAlive = respond(to: request, reader: &reader, with: response)
            response.finishRequest()
            guard keepAlive, !request.wantsClose else { return }
        }
    }

    func requestFinished(_ id: Int, abandoned: Bool) {
        state.with { state in
            state.statistics.inFlight -= 1
            state.statistics.spans.append(.init(id: id, isEnd: true))
            if abandoned { state.statistics.abandoned.insert(id) }
        }
    }
}
