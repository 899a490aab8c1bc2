import Foundation

/// Sizes of long tests, which the environment can change: CI shrinks them under the sanitizers, where a
/// single-threaded pure model gains nothing from running ten times slower.
public enum TestEnvironment {
    /// The integer in the environment variable `name`, or `value` when it is unset or not an integer.
    public static func integer(_ name: String, default value: Int) -> Int {
        ProcessInfo.processInfo.environment[name].flatMap { Int($0) } ?? value
    }

    /// Whether tests also bound how *slow* a capped transfer may be (`NQ_CAP_LOWER_BOUNDS`, default 1). The
    /// cap's upper bounds always hold; its lower bounds assume a machine that keeps up with a few MB/s, which
    /// a loaded sanitizer run (CI sets 0 there) does not promise.
    public static var checksCapLowerBounds: Bool { integer("NQ_CAP_LOWER_BOUNDS", default: 1) != 0 }

    /// How many times a process test repeats a run that once failed by chance (`NQ_DEMO_REPEATS`, default 50;
    /// fewer under the sanitizers, where each run of an instrumented Demo takes seconds).
    public static var demoRepeats: Int { max(1, integer("NQ_DEMO_REPEATS", default: 50)) }

    /// True in the scale tier (`NQ_SCALE_TESTS=1`, run by `.ci/scale`): the tests of a real batch's scale run at it
    /// (100,000 requests, 10,000 model seeds), each in a process of its own, one at a time, and the tests that measure
    /// the whole process (its heap) run at all. `swift test` alone is the first tier: the same tests at a tenth of the
    /// scale, which a busy machine runs within their limits.
    public static var isScaleTier: Bool { integer("NQ_SCALE_TESTS", default: 0) != 0 }

    /// How many seeded sequences each model test runs: `NQ_MODEL_SEEDS`, default 2,000 (10,000 in the scale tier).
    public static var modelSeeds: Int { max(1, integer("NQ_MODEL_SEEDS", default: isScaleTier ? 10_000 : 2_000)) }

    /// The cores this process may run on: the CPUs of its affinity mask (`taskset -c 0` makes it 1), as the Swift
    /// concurrency pool counts them for its threads; read from `Cpus_allowed_list` in `/proc/self/status` ("0-1",
    /// "0,2-3"). Foundation's `activeProcessorCount` counts every CPU online.
    public static let cores: Int = {
        let online = ProcessInfo.processInfo.activeProcessorCount
        guard let status = readText(of: URL(fileURLWithPath: "/proc/self/status")),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") })
        else { return online }
        var count = 0
        for range in line.dropFirst("Cpus_allowed_list:".count).split(separator: ",") {
            let ends = range.split(separator: "-").map { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard let first = ends.first ?? nil, let last = ends.last ?? nil, last >= first else { return online }
            count += last - first + 1
        }
        return max(1, count)
    }()

    /// How many requests a test of a big batch drives: `NQ_BIG_BATCH`, default 10,000 (100,000 in the scale tier:
    /// a real batch's scale; CI takes 10,000 under the sanitizers too).
    public static var bigBatch: Int { max(1, integer("NQ_BIG_BATCH", default: isScaleTier ? 100_000 : 10_000)) }
}

/// Calls `body` with the seeds `0..<count` in order, giving the cooperative thread pool back every few
/// seeds. A long synchronous loop holds one of the pool's threads (two on a 2-core machine) for its whole
/// run: under the thread sanitizer the model tests took a minute, every other test's tasks waited behind
/// them, and requests with the default 60 s timeout timed out in tests that had not yet resumed.
public func forEachSeed(_ count: Int, _ body: (UInt64) -> Void) async {
    for seed in 0..<UInt64(count) {
        body(seed)
        if seed % 8 == 7 { await Task.yield() }
    }
}

/// The text of the file at `url`, read to its end, or nil when it cannot be read. For a file another process is
/// writing: Foundation's `String(contentsOf:)` reads a file whose size is 0 (empty still, or in /proc) through a
/// 4 KB buffer it never frees (LeakSanitizer found twelve from a test polling a report that was empty at first), and
/// stops at that buffer's end.
public func readText(of url: URL) -> String? {
    guard let handle = try? FileHandle(forReadingFrom: url) else { return nil }
    defer { try? handle.close() }
    // `readToEnd()` gives nil for an empty file.
    guard let data = try? handle.readToEnd() else { return "" }
    return String(decoding: data, as: UTF8.self)
}
