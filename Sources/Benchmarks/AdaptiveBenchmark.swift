import Foundation
import LoopbackServer
import NetworkQueue

/// `--only adaptive`: ``NetworkQueue/adaptiveConcurrency`` against the best fixed level on three loopback
/// servers shaped by load (a total rate that saturates at 4 transfers and falls beyond; 503 above 6 in flight; 100 ms
/// of latency and no limit). Reports each run's time, the level it settled at, and the 503s of its second half.
enum AdaptiveBenchmark {
    struct Scenario {
        let name: String
        let path: (Int) -> String
        let count: Int
        let fixed: [Int]
        let best: String
    }

    /// One run: its seconds, the last level the log announced, and the 503s after its first half.
    static func run(
        _ scenario: Scenario, server: LoopbackServer, level: Int?, cap: Int
    ) async throws -> (seconds: Double, settled: Int?, lateRefusals: Int) {
        let queue = NetworkQueue()
        queue.showsAccurateProgress = false
        queue.retryPolicy = RetryPolicy(
            maximumAttempts: 50, backoff: RetryPolicy.Backoff(initialDelay: 0.05, maximumDelay: 0.5))
        if let level {
            queue.maxConcurrentRequestCount = level
        } else {
            queue.maxConcurrentRequestCount = cap
            queue.adaptiveConcurrency = AdaptiveConcurrency(maximum: cap)
        }
        let last = Locked<Int?>(nil)
        queue.logHandler = { record in
            guard record.event == .concurrencyChanged, record.message.hasPrefix("http"),
                let arrow = record.message.range(of: " → ")
            else { return }
            let level = Int(record.message[arrow.upperBound...].prefix { $0.isNumber })
            last.withLock { $0 = level }
        }
        for index in 0..<scenario.count { try queue.add(NetworkRequest(url: server.url(scenario.path(index)))) }
        let before = server.refusedCrowd
        let began = Date()
        // The 503s counted when half the requests had ended: what came after is the settled level's.
        let half = Locked<Int?>(nil)
        let halfCount = scenario.count / 2
        let watcher = Task {
            while !Task.isCancelled {
                try? await Task.sleep(nanoseconds: 20_000_000)
                if queue.progress.endedRequestCount >= halfCount {
                    half.withLock { $0 = $0 ?? server.refusedCrowd }
                }
            }
        }
        _ = await queue.run()
        watcher.cancel()
        let seconds = Date().timeIntervalSince(began)
        let late = server.refusedCrowd - (half.withLock { $0 } ?? before)
        return (seconds, level ?? last.withLock { $0 } ?? 4, late)
    }

    static func run(quick: Bool) async throws -> [Result] {
        let server = try LoopbackServer()
        defer { server.stop() }
        let scale = quick ? 1 : 2
        let scenarios = [
            Scenario(
                name: "saturates at 4", path: { "/shared/400000?rate=40000000&best=4&key=s&i=\($0)" },
                count: 150 * scale,
                fixed: [2, 4, 6, 8], best: "4"),
            Scenario(
                name: "503 above 6", path: { "/crowd/20000?max=6&ms=50&i=\($0)" }, count: 600 * scale, fixed: [4, 6],
                best: "6 or less"),
            Scenario(
                name: "100 ms latency", path: { "/latency/2000?ms=100&i=\($0)" }, count: 3000 * scale, fixed: [32],
                best: "the cap, 32"),
        ]
        var results: [Result] = []
        for scenario in scenarios {
            var bestFixed = (level: 0, seconds: Double.infinity)
            for level in scenario.fixed {
                let run = try await run(scenario, server: server, level: level, cap: 32)
                print("adaptive  \(scenario.name): fixed \(level): \(String(format: "%.2f", run.seconds)) s")
                if run.seconds < bestFixed.seconds { bestFixed = (level, run.seconds) }
            }
            let auto = try await run(scenario, server: server, level: nil, cap: 32)
            print(
                "adaptive  \(scenario.name): auto: \(String(format: "%.2f", auto.seconds)) s, settled at "
                    + "\(auto.settled.map(String.init) ?? "?"), 503s in its second half: \(auto.lateRefusals)")
            results.append(
                Result(
                    benchmark:
                        "adaptive concurrency, \(scenario.name) (settled at \(auto.settled.map(String.init) ?? "?"); "
                        + "best \(scenario.best); late 503s \(auto.lateRefusals))",
                    metric: "seconds", networkQueue: auto.seconds, baselineName: "best fixed (\(bestFixed.level))",
                    baseline: bestFixed.seconds, ratio: bestFixed.seconds / auto.seconds,
                    target: ">= 0.91 (within 10%)",
                    met: bestFixed.seconds / auto.seconds >= 1 / 1.1 && auto.lateRefusals == 0, runs: 1))
        }
        return results
    }
}

/// A value behind a lock, for the benchmark's closures.
final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }
    func withLock<T>(_ body: (inout Value) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}
