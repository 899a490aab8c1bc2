import Foundation

#if canImport(Glibc)
    import Glibc
    private let selfUsage = RUSAGE_SELF.rawValue
#elseif canImport(Darwin)
    import Darwin
    private let selfUsage = RUSAGE_SELF
#endif

/// Wall-clock seconds of `body`.
func seconds(_ body: () async throws -> Void) async rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try await body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

/// Runs `body` on a task and blocks the calling thread until it returns: for modes run under valgrind 3.19,
/// which crashes when an async main parks the main thread in `dispatch_main` and the first worker starts.
func blocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let done = DispatchSemaphore(value: 0)
    let result = Protected<T?>(nil)
    Task.detached {
        let value = await body()
        result.with { $0 = value }
        done.signal()
    }
    done.wait()
    return result.with { $0! }
}

/// User plus system CPU seconds this process has used.
func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(Int32(selfUsage), &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// This process's peak resident set size in bytes.
///
/// On Linux this is `VmHWM` from /proc/self/status: `ru_maxrss` survives fork and exec, so a child spawned
/// by a large parent would report the parent's peak, not its own.
func peakRSS() -> Int64 {
    #if os(Linux)
        if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kilobytes = Int64(line.split(separator: " ", omittingEmptySubsequences: true)[1])
        {
            return kilobytes * 1024
        }
    #endif
    var usage = rusage()
    getrusage(Int32(selfUsage), &usage)
    #if canImport(Darwin)
        return Int64(usage.ru_maxrss)
    #else
        return Int64(usage.ru_maxrss) * 1024
    #endif
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// One measured pairing: NetworkQueue against its baseline, medians of alternating runs.
struct Result {
    let benchmark: String
    let metric: String
    let networkQueue: Double
    let baselineName: String
    let baseline: Double?
    /// How NetworkQueue compares: a ratio where 1.0 means equal, oriented so that higher is better.
    let ratio: Double?
    let target: String
    let met: Bool?
    let runs: Int

    var jsonLine: String {
        func number(_ value: Double?) -> String {
            guard let value, value.isFinite else { return "null" }
            return String(format: "%.6g", value)
        }
        let fields = [
            "\"benchmark\":\"\(benchmark)\"", "\"metric\":\"\(metric)\"", "\"networkqueue\":\(number(networkQueue))",
            "\"baseline_name\":\"\(baselineName)\"", "\"baseline\":\(number(baseline))", "\"ratio\":\(number(ratio))",
            "\"target\":\"\(target)\"", "\"met\":\(met.map { $0 ? "true" : "false" } ?? "null")", "\"runs\":\(runs)",
        ]
        return "{" + fields.joined(separator: ",") + "}"
    }
}

/// Prints results as an aligned table.
func printTable(_ results: [Result]) {
    let header = ["benchmark", "metric", "NetworkQueue", "baseline", "ratio", "target", "met"]
    let rows = results.map { result in
        [
            result.benchmark, result.metric, format(result.networkQueue),
            result.baseline.map { "\(format($0)) (\(result.baselineName))" } ?? result.baselineName,
            result.ratio.map { String(format: "%.2f", $0) } ?? "-", result.target,
            result.met.map { $0 ? "yes" : "NO" } ?? "-",
        ]
    }
    let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
    for row in [header] + rows {
        print(zip(row, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  "))
    }
}

func format(_ value: Double) -> String {
    switch abs(value) {
    case 1_000_000...: String(format: "%.2fM", value / 1_000_000)
    case 10_000...: String(format: "%.1fk", value / 1_000)
    case 100...: String(format: "%.0f", value)
    case 1...: String(format: "%.2f", value)
    default: String(format: "%.3g", value)
    }
}
