import Foundation
import LoopbackServer
import NetworkQueue

// `swift run -c release Benchmarks [--quick] [--server URL]`: prints a table, then one JSON line per result.
// Internal modes: `--serve` (a LoopbackServer child), `--child-big SIDE URL COUNT CONCURRENCY`, and
// `--profile-scheduling N` / `--profile-cancel N` for running one side under a profiler.

let arguments = Array(CommandLine.arguments.dropFirst())

func value(after flag: String) -> String? {
    arguments.firstIndex(of: flag).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
}

if arguments.first == "--serve" {
    let server = try LoopbackServer()
    print("PORT \(server.port)")
    fflush(nil)
    while let line = readLine(), !line.isEmpty {}
    server.stop()
    exit(0)
}
if arguments.first == "--child-big", arguments.count == 5, let url = URL(string: arguments[2]),
    let count = Int(arguments[3]), let concurrency = Int(arguments[4])
{
    try await BigBodyBenchmark.child(side: arguments[1], url: url, count: count, concurrency: concurrency)
    exit(0)
}
// The raw libcurl side of Benchmarks/Peers: `--peer-child curl URL COUNT WINDOW DIRECTORY|- CAFILE|-`, printing
// `RESULT <seconds> <CPU seconds> <peak RSS bytes> <failures>` after a 200-request warm-up (memory bodies only).
if arguments.first == "--peer-child", arguments.count == 7, let url = URL(string: arguments[2]),
    let count = Int(arguments[3]), let window = Int(arguments[4])
{
    #if os(Linux)
        let directory = arguments[5] == "-" ? nil : URL(fileURLWithPath: arguments[5])
        let trusted = arguments[6] == "-" ? nil : URL(fileURLWithPath: arguments[6])
        let client = try RawCurl()
        if directory == nil {
            _ = client.run(urls: Array(repeating: url, count: min(200, count)), window: window, trusted: trusted)
        }
        let cpuBefore = cpuSeconds()
        var failures = 0
        let elapsed = await seconds {
            failures = client.run(
                urls: Array(repeating: url, count: count), window: window, directory: directory, trusted: trusted)
        }
        print("RESULT \(elapsed) \(cpuSeconds() - cpuBefore) \(peakRSS()) \(failures)")
        exit(0)
    #else
        exit(1)
    #endif
}
// The instruction benchmark's child, run under callgrind: `--count-small SIDE URL COUNT [CAFILE]`.
if arguments.first == "--count-small", arguments.count >= 4, let url = URL(string: arguments[2]),
    let count = Int(arguments[3])
{
    let trusted = arguments.count > 4 ? URL(fileURLWithPath: arguments[4]) : nil
    exit(InstructionBenchmark.child(side: arguments[1], url: url, count: count, trusted: trusted) == 0 ? 0 : 1)
}
// Files to a folder, under callgrind: `--count-files SIDE URL-PREFIX COUNT DIRECTORY`, URLs PREFIX + `f<i>.bin`
// (NQ_SPLIT=N shares each file over N connections).
if arguments.first == "--count-files", arguments.count == 5, let count = Int(arguments[3]) {
    let urls = (0..<count).compactMap { URL(string: arguments[2] + "f\($0).bin") }
    let directory = URL(fileURLWithPath: arguments[4])
    let side = Side(rawValue: arguments[1]) ?? .queue
    let failures = blocking { await side.fetch(urls, window: 8, directory: directory) }
    exit(failures == 0 ? 0 : 1)
}
if arguments.first == "--scale-child", arguments.count == 3, let count = Int(arguments[2]) {
    await ScaleBenchmark.child(side: arguments[1], count: count)
    exit(0)
}
if let count = value(after: "--profile-scheduling").flatMap(Int.init) {
    // Blocking, not suspending, so that it runs under valgrind too (see `blocking`).
    print(blocking { await SchedulingBenchmark.queueRun(count: count) })
    exit(0)
}
if let side = value(after: "--profile-small"), value(after: "--url") == nil {
    // In-process server, to count what reaches the wire.
    let server = try LoopbackServer()
    let url = server.url("/bytes/1024")
    if side == "nq" {
        _ = await SmallRequestsBenchmark.networkQueue(url, count: 2_000, window: 8)
    } else {
        _ = await RawClient(urls: Array(repeating: url, count: 2_000), window: 8).run()
    }
    let statistics = server.statistics
    print(
        "\(side): requests \(statistics.requests), connections \(statistics.connections), max in flight \(statistics.maxInFlight)"
    )
    exit(0)
}
if let side = value(after: "--profile-small"), let url = value(after: "--url").flatMap(URL.init(string:)) {
    let elapsed = await seconds {
        if side == "nq" {
            _ = await SmallRequestsBenchmark.networkQueue(url, count: 5_000, window: 8)
        } else {
            _ = await RawClient(urls: Array(repeating: url, count: 5_000), window: 8).run()
        }
    }
    print(elapsed)
    exit(0)
}
if let count = value(after: "--profile-cancel").flatMap(Int.init) {
    for _ in 0..<5 { print(await SchedulingBenchmark.cancelPending(count: count)) }
    exit(0)
}
if arguments.contains("--help") {
    print(
        "Usage: swift run -c release Benchmarks [--quick] [--only small|scheduling|big|cancel|accurate|integrity|batch|split-locks|instructions|scale|adaptive] [--server URL-of-a-1KB-resource]"
    )
    exit(0)
}

let quick = arguments.contains("--quick")
let runs = quick ? 3 : 5
let server = try ServerProcess()
defer { server.stop() }
let smallURL = value(after: "--server").flatMap { URL(string: $0) } ?? server.url("/bytes/1024")

let only = value(after: "--only")
func selected(_ name: String) -> Bool { only == nil || only == name }

var results: [Result] = []
if selected("small") {
    results += try await SmallRequestsBenchmark.run(url: smallURL, count: quick ? 500 : 5_000, window: 8, runs: runs)
}
if selected("scheduling") { results += await SchedulingBenchmark.run(count: quick ? 10_000 : 100_000, runs: runs) }
if selected("big") {
    results += try BigBodyBenchmark.run(
        server: server, size: quick ? 20_000_000 : 200_000_000, count: 1, concurrency: 1, runs: runs)
    results += try BigBodyBenchmark.run(
        server: server, size: quick ? 5_000_000 : 50_000_000, count: 8, concurrency: 4, runs: runs)
}
if selected("cancel") { results += await CancelLatencyBenchmark.run(server: server, count: quick ? 5 : 21) }
if selected("accurate") {
    results += try await AccurateProgressBenchmark.run(
        server: server, count: quick ? 20 : 100, size: 1_000_000, runs: runs)
}
if selected("integrity") {
    results += try await IntegrityBenchmark.run(server: server, size: quick ? 20_000_000 : 200_000_000, runs: runs)
}
if selected("batch") {
    results.append(try await BatchBenchmarks.rateCap(cap: 20_000_000, duration: quick ? 2 : 10))
    results += try await BatchBenchmarks.rateCapSmallFiles(cap: 1_000_000, count: 5, size: quick ? 700_000 : 1_200_000)
    results.append(try await BatchBenchmarks.resume(size: quick ? 20_000_000 : 200_000_000))
}

if selected("split-locks") { results += try await SplitLockBenchmark.run(size: quick ? 64_000_000 : 256_000_000) }

// Only when asked for: it runs each server's scenarios at several levels (about a minute).
if only == "adaptive" { results += try await AdaptiveBenchmark.run(quick: quick) }

if selected("scale") { results += try ScaleBenchmark.run(count: quick ? 100_000 : 1_000_000, runs: quick ? 1 : 3) }

if selected("instructions") {
    // valgrind is a tool outside the project: when it fails, say so and go on with the other results.
    do {
        results += try InstructionBenchmark.run(server: server, counts: quick ? (100, 400) : (200, 2_000))
    } catch {
        print("instructions: not counted: \(error)")
    }
}

printTable(results)
for result in results { print(result.jsonLine) }
