import Foundation
import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The transport a NetworkQueue side of a benchmark runs on.
enum Side: String, CaseIterable {
    /// NetworkQueue over its default transport (CurlTransport on Linux).
    case queue = "nq"
    /// NetworkQueue over URLSessionTransport.
    case queueOverURLSession = "nq-urlsession"
    /// Raw URLSession delegate data tasks.
    case urlSession = "raw"
    /// The raw libcurl multi loop (Linux).
    case curl = "curl"

    static var available: [Side] {
        #if os(Linux)
            allCases
        #else
            [.queue, .urlSession]
        #endif
    }

    /// `trusted`: a PEM file of CA certificates that NetworkQueue over libcurl also trusts.
    func makeQueue(trusted: URL? = nil) -> NetworkQueue {
        #if os(Linux)
            if self == .queue, let trusted {
                var options = CurlTransport.Options()
                options.additionalTrustedCertificates = trusted
                if let transport = try? CurlTransport(options: options) { return NetworkQueue(transport: transport) }
            }
        #endif
        return self == .queueOverURLSession ? NetworkQueue(transport: URLSessionTransport()) : NetworkQueue()
    }

    /// Fetches `urls`, `window` at once, into memory or `directory`; returns the failures. `trusted`: a PEM
    /// file of CA certificates to trust too (NetworkQueue over libcurl and the raw loop).
    func fetch(_ urls: [URL], window: Int, directory: URL? = nil, trusted: URL? = nil) async -> Int {
        switch self {
        case .queue, .queueOverURLSession:
            let queue = makeQueue(trusted: trusted)
            queue.maxConcurrentRequestCount = window
            // NQ_COMPACT=1: the compact form a list's requests take (the URL alone, as the Demo makes them). NQ_SPLIT=N:
            // each file may be shared over N connections (as the Demo's --split N asks).
            let environment = ProcessInfo.processInfo.environment
            let compact = environment["NQ_COMPACT"] == "1"
            let connections = environment["NQ_SPLIT"].flatMap { Int($0) } ?? 1
            let options = NetworkRequest.FileOptions(maximumConnections: connections)
            for (index, url) in urls.enumerated() {
                let destination: NetworkRequest.Destination =
                    directory.map { .file($0.appendingPathComponent("nq-\(index).bin")) } ?? .memory
                try? queue.add(
                    compact
                        ? NetworkRequest(url: url, destination: destination, fileOptions: options)
                        : NetworkRequest(URLRequest(url: url), destination: destination, fileOptions: options))
            }
            let progress = await queue.run()
            return progress.totalRequestCount - progress.finishedRequestCount
        case .urlSession:
            return await RawClient(urls: urls, window: window, directory: directory).run()
        case .curl:
            #if os(Linux)
                return (try? RawCurl())?.run(urls: urls, window: window, directory: directory, trusted: trusted)
                    ?? urls.count
            #else
                return urls.count
            #endif
        }
    }
}

/// (1) Small requests: NetworkQueue over each transport against raw URLSession and a raw libcurl multi
/// loop, same window, alternating order between runs.
enum SmallRequestsBenchmark {
    static func networkQueue(_ url: URL, count: Int, window: Int) async -> Int {
        await Side.queue.fetch(Array(repeating: url, count: count), window: window)
    }

    static func run(url: URL, count: Int, window: Int, runs: Int) async throws -> [Result] {
        let sides = Side.available
        var samples: [Side: [(seconds: Double, cpu: Double)]] = [:]
        let urls = Array(repeating: url, count: count)
        // One uncounted warm-up of each side: first-use costs (connections, lazy initialisation) would
        // otherwise land on whichever side happens to go first.
        for side in sides { _ = await side.fetch(Array(urls.prefix(200)), window: window) }
        for run in 0..<runs {
            // Rotate which side goes first, so none always gets the warmer machine.
            for offset in 0..<sides.count {
                let side = sides[(run + offset) % sides.count]
                let cpuBefore = cpuSeconds()
                var failures = 0
                let elapsed = await seconds { failures = await side.fetch(urls, window: window) }
                guard failures == 0 else { throw BenchmarkFailure("\(failures) small requests failed (\(side))") }
                samples[side, default: []].append((elapsed, cpuSeconds() - cpuBefore))
            }
        }
        func rate(_ side: Side) -> Double { Double(count) / median(samples[side, default: []].map(\.seconds)) }
        func cpu(_ side: Side) -> Double { median(samples[side, default: []].map(\.cpu)) / Double(count) * 1e6 }
        let name = "small \(count) x 1 KB, \(window) at once"
        var results: [Result] = []
        #if os(Linux)
            results += [
                Result(
                    benchmark: name + ", curl", metric: "req/s", networkQueue: rate(.queue), baselineName: "URLSession",
                    baseline: rate(.urlSession), ratio: rate(.queue) / rate(.urlSession), target: "ratio >= 5",
                    met: rate(.queue) / rate(.urlSession) >= 5, runs: runs),
                Result(
                    benchmark: name + ", curl", metric: "req/s", networkQueue: rate(.queue),
                    baselineName: "raw libcurl",
                    baseline: rate(.curl), ratio: rate(.queue) / rate(.curl), target: "ratio >= 0.7",
                    met: rate(.queue) / rate(.curl) >= 0.7, runs: runs),
                Result(
                    benchmark: name + ", curl, CPU", metric: "us/req", networkQueue: cpu(.queue),
                    baselineName: "raw libcurl",
                    baseline: cpu(.curl), ratio: cpu(.curl) / cpu(.queue), target: "-", met: nil, runs: runs),
            ]
        #endif
        let session: Side = Side.available.contains(.queueOverURLSession) ? .queueOverURLSession : .queue
        results += [
            Result(
                benchmark: name + ", URLSession", metric: "req/s", networkQueue: rate(session),
                baselineName: "URLSession",
                baseline: rate(.urlSession), ratio: rate(session) / rate(.urlSession), target: "ratio >= 0.95",
                met: rate(session) / rate(.urlSession) >= 0.95, runs: runs),
            Result(
                benchmark: name + ", URLSession, CPU", metric: "us/req", networkQueue: cpu(session),
                baselineName: "URLSession",
                baseline: cpu(.urlSession), ratio: cpu(.urlSession) / cpu(session), target: "-", met: nil, runs: runs),
        ]
        return results
    }
}

/// (3) Big bodies to files, each side in its own child process so peak RSS is its own.
enum BigBodyBenchmark {
    /// The child's work for one ``Side``. Prints `RESULT <seconds> <peak RSS bytes>`.
    static func child(side: String, url: URL, count: Int, concurrency: Int) async throws {
        guard let side = Side(rawValue: side) else { throw BenchmarkFailure("unknown side \(side)") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nq-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var failures = 0
        let elapsed = await seconds {
            failures = await side.fetch(Array(repeating: url, count: count), window: concurrency, directory: directory)
        }
        guard failures == 0 else { throw BenchmarkFailure("\(failures) big transfers failed") }
        print("RESULT \(elapsed) \(peakRSS())")
    }

    static func run(server: ServerProcess, size: Int, count: Int, concurrency: Int, runs: Int) throws -> [Result] {
        let url = server.url("/bytes/\(size)")
        let sides = Side.available
        var samples: [Side: [[Double]]] = [:]
        for run in 0..<runs {
            for offset in 0..<sides.count {
                let side = sides[(run + offset) % sides.count]
                samples[side, default: []].append(
                    try runChild(["--child-big", side.rawValue, url.absoluteString, "\(count)", "\(concurrency)"]))
            }
        }
        let bytes = Double(size * count)
        func throughput(_ side: Side) -> Double { bytes / median(samples[side, default: []].map { $0[0] }) / 1e6 }
        func rss(_ side: Side) -> Double { median(samples[side, default: []].map { $0[1] }) / 1_048_576 }
        let name =
            count == 1
            ? "big 1 x \(size / 1_000_000) MB" : "big \(count) x \(size / 1_000_000) MB, \(concurrency) at once"
        var results: [Result] = []
        #if os(Linux)
            results += [
                Result(
                    benchmark: name + ", curl", metric: "MB/s", networkQueue: throughput(.queue),
                    baselineName: "raw libcurl",
                    baseline: throughput(.curl), ratio: throughput(.queue) / throughput(.curl),
                    target: count == 1 ? "ratio >= 0.9" : "-",
                    met: count == 1 ? throughput(.queue) / throughput(.curl) >= 0.9 : nil,
                    runs: runs),
                Result(
                    benchmark: name + ", curl, peak RSS", metric: "MiB", networkQueue: rss(.queue),
                    baselineName: "raw libcurl",
                    baseline: rss(.curl), ratio: rss(.curl) / rss(.queue), target: "<= 64 MiB", met: rss(.queue) <= 64,
                    runs: runs),
            ]
        #endif
        let session: Side = Side.available.contains(.queueOverURLSession) ? .queueOverURLSession : .queue
        results += [
            Result(
                benchmark: name + ", URLSession", metric: "MB/s", networkQueue: throughput(session),
                baselineName: "URLSession",
                baseline: throughput(.urlSession), ratio: throughput(session) / throughput(.urlSession), target: "-",
                met: nil,
                runs: runs),
            Result(
                benchmark: name + ", URLSession, peak RSS", metric: "MiB", networkQueue: rss(session),
                baselineName: "URLSession",
                baseline: rss(.urlSession), ratio: rss(.urlSession) / rss(session), target: "-", met: nil, runs: runs),
        ]
        return results
    }
}

/// (5) Cancel latency: from `cancel()` of a running download to its didFail, on each transport.
enum CancelLatencyBenchmark {
    /// Cancels at its headers and measures the time to the terminal event.
    final class Probe: NetworkQueueDelegate, @unchecked Sendable {
        private let lock = NSLock()
        private var cancelledAt: UInt64 = 0
        private(set) var latency: Double?

        func networkQueue(_ queue: NetworkQueue, didReceiveHeaders request: NetworkRequest, head: ResponseHead) {
            lock.withLock { cancelledAt = DispatchTime.now().uptimeNanoseconds }
            queue.cancel(request)
        }

        func networkQueue(_ queue: NetworkQueue, didFail request: NetworkRequest, error: NetworkQueueError) {
            let now = DispatchTime.now().uptimeNanoseconds
            lock.withLock { latency = Double(now - cancelledAt) / 1e6 }
        }
    }

    static func once(_ url: URL, side: Side) async -> Double? {
        let queue = side.makeQueue()
        let probe = Probe()
        queue.delegate = probe
        try? queue.add(NetworkRequest(url: url))
        await queue.run()
        return probe.latency
    }

    static func run(server: ServerProcess, count: Int) async -> [Result] {
        let url = server.url("/bytes/50000000?rate=50000000")
        let sides: [Side] = Side.available.contains(.queueOverURLSession) ? [.queue, .queueOverURLSession] : [.queue]
        var samples: [Side: [Double]] = [:]
        for run in 0..<count {
            for side in run % 2 == 0 ? sides : sides.reversed() {
                if let latency = await once(url, side: side) { samples[side, default: []].append(latency) }
            }
        }
        let ours = median(samples[.queue, default: [.nan]])
        let session = median(samples[.queueOverURLSession, default: [.nan]])
        return [
            Result(
                benchmark: "cancel to didFail, median of \(count)", metric: "ms", networkQueue: ours,
                baselineName: "over URLSession", baseline: session, ratio: session / ours, target: "< 5 ms",
                met: ours < 5,
                runs: count)
        ]
    }
}

/// (4) The cost of accurate progress: the same batch with and without the HEAD preflight.
enum AccurateProgressBenchmark {
    static func once(_ url: URL, count: Int, accurate: Bool) async throws -> Double {
        let queue = NetworkQueue()
        queue.showsAccurateProgress = accurate
        for _ in 0..<count { try queue.add(NetworkRequest(url: url)) }
        var progress = QueueProgress.zero
        let elapsed = await seconds { progress = await queue.run() }
        guard progress.finishedRequestCount == count else { throw BenchmarkFailure("accurate-progress run failed") }
        return elapsed
    }

    static func run(server: ServerProcess, count: Int, size: Int, runs: Int) async throws -> [Result] {
        let url = server.url("/bytes/\(size)")
        var with: [Double] = []
        var without: [Double] = []
        for run in 0..<runs {
            for accurate in run % 2 == 0 ? [true, false] : [false, true] {
                let elapsed = try await once(url, count: count, accurate: accurate)
                if accurate { with.append(elapsed) } else { without.append(elapsed) }
            }
        }
        let ratio = median(with) / median(without)
        return [
            Result(
                benchmark: "accurate progress, \(count) x \(size / 1_000_000) MB", metric: "s",
                networkQueue: median(with),
                baselineName: "without HEADs", baseline: median(without), ratio: ratio, target: "time ratio <= 1.10",
                met: ratio <= 1.10, runs: runs)
        ]
    }
}
