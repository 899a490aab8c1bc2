/// Which pending requests get a HEAD when ``NetworkQueue/showsAccurateProgress`` is on.
///
/// A HEAD pays where a body is big: it learns a size long before the body ends. For a small body it costs as much as
/// the GET (a round trip, and under pacing a whole start), so a batch of small files would ask twice. The queue asks
/// the first ``samplesPerServer`` HEADs of each server (scheme, host and port), and from what they say decides for
/// the rest of its requests: where the mean size is at least ``smallestSizeWorthAHead`` every request keeps its HEAD;
/// below it (or where the HEADs say no size) the rest go without one, each weighing the mean size learned so far
/// (``QueueProgress/isEstimated``) until its own response's head says its size. While a server's sampled HEADs run,
/// its other HEADs wait; other servers' requests do not.
///
/// A paced server (``NetworkQueue/hostPacing``) is decided by its first answer, its other HEADs waiting for it: each of
/// its HEADs costs a paced start. A HEAD that checks an existing file (``NetworkRequest/ExistingFile/skipIfUnchanged``) is
/// always asked.
public struct PreflightPolicy: Sendable, Hashable {
    /// The HEADs of each server asked before its sizes decide; default 4. Values below 1 count as 1.
    public var samplesPerServer: Int
    /// The mean size, in bytes, from which every request of a server keeps its HEAD; default 1 MiB (1,048,576).
    public var smallestSizeWorthAHead: Int64

    /// A policy; the defaults are ``default``'s.
    public init(samplesPerServer: Int = 4, smallestSizeWorthAHead: Int64 = 1 << 20) {
        self.samplesPerServer = max(1, samplesPerServer)
        self.smallestSizeWorthAHead = max(0, smallestSizeWorthAHead)
    }

    /// The first 4 HEADs of each server decide; 1 MiB and up keep theirs.
    public static let `default` = PreflightPolicy()

    /// A HEAD before every GET, whatever the sizes (the behaviour before version 0.7).
    public static let everyRequest = PreflightPolicy(samplesPerServer: .max, smallestSizeWorthAHead: 0)
}

/// The per-server books of ``PreflightPolicy``: what each server's HEADs said, and whether its next request gets
/// one. Pure; servers are the scheduler's host numbers.
struct PreflightSampler {
    /// What a server's requests get.
    enum Verdict: Equatable {
        /// Its first HEADs are being asked: a HEAD each, up to the samples in flight at once.
        case sampling
        /// Its sizes are big: every request keeps its HEAD.
        case asksEach
        /// Its sizes are small, or its HEADs say none: no more HEADs.
        case estimates
    }

    private struct Server {
        /// HEADs started and not ended.
        var inFlight: Int32 = 0
        /// HEADs whose final head arrived.
        var answered: Int32 = 0
        /// Of those, the ones that gave a size, and the sizes' sum.
        var sized: Int32 = 0
        var bytes: Int64 = 0
        var verdict = Verdict.sampling
        /// True when the server is paced: its first answer decides, so one sample runs at a time.
        var isPaced = false
    }

    var policy = PreflightPolicy.default
    private var servers: [Server] = []

    /// What `host`'s next request gets.
    func verdict(of host: Int) -> Verdict { host < servers.count ? servers[host].verdict : .sampling }

    /// True while `host`'s HEADs must wait: its samples, answered or running, are as many as the policy asks for (one
    /// that failed without an answer makes room for another). A server whose sizes are small so gets exactly the
    /// policy's samples.
    func waits(_ host: Int) -> Bool {
        // Only while a sample runs: its end (or answer) frees the others, so they never wait on nothing.
        guard host < servers.count, servers[host].verdict == .sampling, servers[host].inFlight > 0 else { return false }
        let samples = servers[host].isPaced && policy.samplesPerServer != .max ? 1 : policy.samplesPerServer
        return Int(servers[host].answered) + Int(servers[host].inFlight) >= samples
    }

    /// A HEAD of `host` started; `paced`: the server is paced (one sample at a time, its first answer decides).
    mutating func started(_ host: Int, paced: Bool = false) {
        grow(to: host)
        servers[host].inFlight += 1
        servers[host].isPaced = paced
    }

    /// A HEAD of `host` ended (answered or not).
    mutating func ended(_ host: Int) {
        guard host < servers.count, servers[host].inFlight > 0 else { return }
        servers[host].inFlight -= 1
    }

    /// A HEAD of `host` answered, with the body's size when it said one; `paced`: the server is paced. Returns the
    /// server's verdict when this answer changed it.
    mutating func answered(_ host: Int, size: Int64?, paced: Bool) -> Verdict? {
        grow(to: host)
        var server = servers[host]
        server.answered += 1
        if let size, size >= 0 {
            server.sized += 1
            server.bytes = server.bytes.addingReportingOverflow(size).overflow ? .max : server.bytes + size
        }
        let before = server.verdict
        let mean = server.sized > 0 ? server.bytes / Int64(server.sized) : nil
        let isBig = mean.map { $0 >= policy.smallestSizeWorthAHead } ?? false
        if paced && policy.samplesPerServer != .max {
            // Each HEAD costs a paced start: one answer decides.
            server.verdict = isBig ? .asksEach : .estimates
        } else if isBig {
            server.verdict = .asksEach
        } else if Int(server.answered) >= policy.samplesPerServer {
            server.verdict = .estimates
        }
        servers[host] = server
        return server.verdict == before ? nil : server.verdict
    }

    /// Forgets every server (the queue numbers them anew).
    mutating func forget() { servers.removeAll(keepingCapacity: true) }

    private mutating func grow(to host: Int) {
        if host >= servers.count {
            servers.append(contentsOf: repeatElement(Server(), count: host + 1 - servers.count))
        }
    }
}
