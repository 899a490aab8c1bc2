import Foundation
import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Batches of millions over ``InstantTransport``: what a pending request costs, how fast requests are added
/// and drained, and the peak memory of a batch added eagerly against one streamed through
/// `add(contentsOf:)`. Each side runs in a child process, so that its peak RSS is its own.
enum ScaleBenchmark {
    static func run(count: Int, runs: Int) throws -> [Result] {
        var eager: [[Double]] = []
        var streamed: [[Double]] = []
        var paced: [[Double]] = []
        // Alternated, each in a fresh process: this shared machine's speed drifts.
        for _ in 0..<runs {
            eager.append(try runChild(["--scale-child", "eager", "\(count)"]))
            streamed.append(try runChild(["--scale-child", "streamed", "\(count)"]))
            paced.append(try runChild(["--scale-child", "paced", "\(count)"]))
        }
        guard eager.allSatisfy({ $0.count == 5 }), streamed.allSatisfy({ $0.count == 5 }),
            paced.allSatisfy({ $0.count == 5 })
        else {
            throw BenchmarkFailure("scale children said \(eager) \(streamed) \(paced)")
        }
        let pacedBytes = middle(paced, 0)
        func middle(_ runs: [[Double]], _ index: Int) -> Double { median(runs.map { $0[index] }) }
        let bytesPerRequest = middle(eager, 0)
        let addRate = middle(eager, 1)
        let (eagerRate, eagerPeak, eagerDrain) = (middle(eager, 2), middle(eager, 3), middle(eager, 4))
        let (streamedRate, streamedPeak) = (middle(streamed, 2), middle(streamed, 3))
        let mib = 1_048_576.0
        let label = "\(count / 1_000)k requests, instant transport"
        return [
            Result(
                benchmark: "scale \(label): bytes per pending request (eager)", metric: "B",
                networkQueue: bytesPerRequest,
                baselineName: "target", baseline: 512, ratio: 512 / bytesPerRequest, target: "<= 512 B",
                met: bytesPerRequest <= 512,
                runs: runs),
            Result(
                benchmark: "scale \(label): bytes per pending request, 50 servers paced", metric: "B",
                networkQueue: pacedBytes, baselineName: "unpaced", baseline: bytesPerRequest,
                ratio: bytesPerRequest / pacedBytes, target: "<= 512 B", met: pacedBytes <= 512, runs: runs),
            Result(
                benchmark: "scale \(label): adds per second (eager)", metric: "req/s", networkQueue: addRate,
                baselineName: "target",
                baseline: 500_000, ratio: addRate / 500_000, target: ">= 500k/s", met: addRate >= 500_000, runs: runs),
            Result(
                benchmark: "scale \(label): requests per second, streamed vs eager", metric: "req/s",
                networkQueue: streamedRate,
                baselineName: "eager (adds + drain)", baseline: eagerRate, ratio: streamedRate / eagerRate,
                target: "ratio >= 1.0",
                met: streamedRate >= eagerRate, runs: runs),
            Result(
                benchmark: "scale \(label): streamed requests per second vs the eager drain alone", metric: "req/s",
                networkQueue: streamedRate, baselineName: "eager drain (adds excluded)", baseline: eagerDrain,
                ratio: streamedRate / eagerDrain,
                target: "ratio >= 1.0", met: streamedRate >= eagerDrain, runs: runs),
            Result(
                benchmark: "scale \(label): peak RSS growth, streamed", metric: "MiB", networkQueue: streamedPeak / mib,
                baselineName: "eager", baseline: eagerPeak / mib, ratio: eagerPeak / max(streamedPeak, 1),
                target: "<= 64 MiB",
                met: streamedPeak <= 64 * mib, runs: runs),
        ]
    }

    /// The child: `side` is `eager` or `streamed`. Prints `RESULT <bytes per pending request> <adds/s>
    /// <requests/s from the first add to the drain's end> <peak RSS growth bytes> <requests/s from go() to the
    /// drain's end>` (the first two are 0 for the streamed side, whose reading happens during the drain).
    ///
    /// The eager side adds requests made beforehand, each with its own URL (as a batch's list has them), and
    /// measures what they hold while pending; the paced side does the same over 50 servers, each paced to a start a
    /// second, then cancels them (a paced drain would take hours); the streamed side adds a source that makes each
    /// request when it is read.
    static func child(side: String, count: Int) async {
        let queue = NetworkQueue(transport: InstantTransport())
        queue.maxConcurrentRequestCount = 8
        if side == "paced" { queue.hostPacing = HostPacing(interval: 1) }
        let baseline = currentRSS()
        var bytesPerRequest = 0.0
        var addRate = 0.0
        var total = 0.0
        if side == "eager" || side == "paced" {
            let requests = (0..<count).map {
                NetworkRequest(
                    url: URL(
                        string: side == "eager"
                            ? "http://bench.invalid/files/\($0).bin"
                            : "http://h\($0 % 50).bench.invalid/files/\($0).bin")!)
            }
            let adding = await seconds {
                for request in requests { try? queue.add(request) }
            }
            addRate = Double(count) / adding
            // Everything a pending request holds: the request, its URL's text, the queue's record.
            bytesPerRequest = Double(currentRSS() - baseline) / Double(count)
            total = adding
        } else {
            total = await seconds {
                queue.add(contentsOf: RequestCounter(count: count, url: URL(string: "http://bench.invalid/r")!))
            }
        }
        let drain = await seconds {
            queue.go()
            if side == "paced" { queue.cancelAll() }
            await queue.run()
        }
        total += drain
        print(
            "RESULT \(bytesPerRequest) \(addRate) \(Double(count) / total) \(peakRSS() - baseline) \(Double(count) / drain)"
        )
    }
}

/// A source of `count` GET requests for one URL, each made when it is asked for.
struct RequestCounter: AsyncSequence, Sendable {
    let count: Int
    let url: URL

    struct AsyncIterator: AsyncIteratorProtocol {
        var left: Int
        let url: URL
        mutating func next() async -> NetworkRequest? {
            guard left > 0 else { return nil }
            left -= 1
            return NetworkRequest(url: url)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(left: count, url: url) }
}

/// This process's resident set size now, in bytes (`VmRSS`; 0 where /proc is missing).
func currentRSS() -> Int64 {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
        let kilobytes = Int64(line.split(separator: " ", omittingEmptySubsequences: true)[1])
    else { return 0 }
    return kilobytes * 1024
}
