import Foundation
import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// (1) Small requests: NetworkQueue over URLSessionTransport against raw URLSession delegate data tasks,
/// same window, same session settings, alternating runs.
enum SmallRequestsBenchmark {
    static func networkQueue(_ url: URL, count: Int, window: Int) async -> Int {
        let queue = NetworkQueue()
        queue.maxConcurrentRequestCount = window
        let requests = (0..<count).map { _ in NetworkRequest(url: url) }
        for request in requests { try? queue.add(request) }
        let progress = await queue.run()
        return progress.totalRequestCount - progress.finishedRequestCount
    }

    static func run(url: URL, count: Int, window: Int, runs: Int) async throws -> [Result] {
        var ours: [(seconds: Double, cpu: Double)] = []
        var theirs: [(seconds: Double, cpu: Double)] = []
        // One uncounted warm-up of each side: first-use costs (connections, lazy initialisation) would
        // otherwise land on whichever side happens to go first.
        _ = await networkQueue(url, count: min(count, 200), window: window)
        _ = await RawClient(urls: Array(repeating: url, count: min(count, 200)), window: window).run()
        for run in 0..<runs {
            // Alternate which side goes first, so neither always gets the warmer machine.
            for side in run % 2 == 0 ? [0, 1] : [1, 0] {
                let cpuBefore = cpuSeconds()
                var failures = 0
                let elapsed = await seconds {
                    failures =
                        side == 0
                        ? await networkQueue(url, count: count, window: window)
                        : await RawClient(urls: Array(repeating: url, count: count), window: window).run()
                }
                guard failures == 0 else { throw BenchmarkFailure("\(failures) small requests failed") }
                let sample = (elapsed, cpuSeconds() - cpuBefore)
                if side == 0 { ours.append(sample) } else { theirs.append(sample) }
            }
        }
        let rate = Double(count) / median(ours.map(\.seconds))
        let baseline = Double(count) / median(theirs.map(\.seconds))
        let cpu = median(ours.map(\.cpu)) / Double(count) * 1e6
        let baselineCPU = median(theirs.map(\.cpu)) / Double(count) * 1e6
        return [
            Result(
                benchmark: "small \(count) x 1 KB, \(window) at once", metric: "req/s", networkQueue: rate,
                baselineName: "URLSession", baseline: baseline, ratio: rate / baseline, target: "ratio >= 0.95",
                met: rate / baseline >= 0.95, runs: runs),
            Result(
                benchmark: "small \(count) x 1 KB, CPU", metric: "us/req", networkQueue: cpu, baselineName: "URLSession",
                baseline: baselineCPU, ratio: baselineCPU / cpu, target: "-", met: nil, runs: runs),
        ]
    }
}

/// (3) Big bodies to files, each side in its own child process so peak RSS is its own.
enum BigBodyBenchmark {
    /// The child's work: `side` is "nq" or "raw". Prints `RESULT <seconds> <peak RSS bytes>`.
    static func child(side: String, url: URL, count: Int, concurrency: Int) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nq-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var failures = 0
        let elapsed = await seconds {
            if side == "nq" {
                let queue = NetworkQueue()
                queue.maxConcurrentRequestCount = concurrency
                for index in 0..<count {
                    let file = directory.appendingPathComponent("nq-\(index).bin")
                    try? queue.add(NetworkRequest(URLRequest(url: url), destination: .file(file)))
                }
                let progress = await queue.run()
                failures = progress.totalRequestCount - progress.finishedRequestCount
            } else {
                failures = await RawClient(urls: Array(repeating: url, count: count), window: concurrency, directory: directory).run()
            }
        }
        guard failures == 0 else { throw BenchmarkFailure("\(failures) big transfers failed") }
        print("RESULT \(elapsed) \(peakRSS())")
    }

    static func run(server: ServerProcess, size: Int, count: Int, concurrency: Int, runs: Int) throws -> [Result] {
        let url = server.url("/bytes/\(size)")
        var ours: [[Double]] = []
        var theirs: [[Double]] = []
        for run in 0..<runs {
            for side in run % 2 == 0 ? ["nq", "raw"] : ["raw", "nq"] {
                let values = try runChild([
                    "--child-big", side, url.absoluteString, "\(count)", "\(concurrency)",
                ])
                if side == "nq" { ours.append(values) } else { theirs.append(values) }
            }
        }
        let bytes = Double(size * count)
        let throughput = bytes / median(ours.map { $0[0] }) / 1e6
        let baseline = bytes / median(theirs.map { $0[0] }) / 1e6
        let rss = median(ours.map { $0[1] }) / 1_048_576
        let baselineRSS = median(theirs.map { $0[1] }) / 1_048_576
        let name = count == 1 ? "big 1 x \(size / 1_000_000) MB" : "big \(count) x \(size / 1_000_000) MB, \(concurrency) at once"
        return [
            Result(
                benchmark: name, metric: "MB/s", networkQueue: throughput, baselineName: "URLSession", baseline: baseline,
                ratio: throughput / baseline, target: "-", met: nil, runs: runs),
            Result(
                benchmark: name + ", peak RSS", metric: "MiB", networkQueue: rss, baselineName: "URLSession",
                baseline: baselineRSS, ratio: baselineRSS / rss, target: "<= 64 MiB", met: rss <= 64, runs: runs),
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
                benchmark: "accurate progress, \(count) x \(size / 1_000_000) MB", metric: "s", networkQueue: median(with),
                baselineName: "without HEADs", baseline: median(without), ratio: ratio, target: "time ratio <= 1.10",
                met: ratio <= 1.10, runs: runs)
        ]
    }
}
