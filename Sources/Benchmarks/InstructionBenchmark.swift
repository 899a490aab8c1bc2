import Foundation

/// (8) Instructions per small request, counted by callgrind: repeatable to a fraction of a percent whatever else
/// the machine does, unlike seconds. Each side fetches N × 1 KB (8 at once) from a LoopbackServer in another
/// process, under `valgrind --tool=callgrind`, for two N; the difference over the difference of N is the
/// marginal cost of one request, with start-up, warm-up and tear-down cancelled out. Counts every thread of the
/// client process (the kernel's work is not counted). valgrind 3.19 cannot read the DWARF 5 that Swift 6.3
/// emits, so the run uses a copy of this binary made with `objcopy --strip-debug`.
enum InstructionBenchmark {
    static let sides: [(side: String, name: String)] = [("nq", "NetworkQueue/curl"), ("curl", "raw libcurl")]

    static func run(server: ServerProcess, counts: (Int, Int)) throws -> [Result] {
        guard let valgrind = executable("valgrind"), let objcopy = executable("objcopy") else {
            print("instructions: skipped (needs valgrind and objcopy: apt-get install valgrind binutils)")
            return []
        }
        let stripped = FileManager.default.temporaryDirectory.appendingPathComponent(
            "nq-benchmarks-stripped-\(getpid())")
        defer { try? FileManager.default.removeItem(at: stripped) }
        try runTool(objcopy, ["--strip-debug", selfExecutable.path, stripped.path])
        let url = server.url("/bytes/1024").absoluteString
        var perRequest: [String: Double] = [:]
        for (side, _) in sides {
            let low = try instructions(valgrind, stripped, side: side, url: url, count: counts.0)
            let high = try instructions(valgrind, stripped, side: side, url: url, count: counts.1)
            perRequest[side] = Double(high - low) / Double(counts.1 - counts.0)
        }
        let ours = perRequest["nq"] ?? .nan
        let raw = perRequest["curl"] ?? .nan
        return [
            Result(
                benchmark: "instructions per 1 KB request, marginal \(counts.0)→\(counts.1) (callgrind)",
                metric: "instr/req",
                networkQueue: ours, baselineName: "raw libcurl", baseline: raw, ratio: raw / ours,
                target: "ratio >= 0.625 (1.6x)",
                met: raw / ours >= 0.625, runs: 1)
        ]
    }

    /// The child's work: `count` requests, 8 at once; returns the failures. The main thread blocks until they
    /// are done instead of suspending: valgrind 3.19 crashes when an async main parks the main thread in
    /// `dispatch_main` and the first worker thread starts.
    /// `trusted`: a PEM file of CA certificates for an `https` URL (for profiling the TLS path by hand).
    static func child(side: String, url: URL, count: Int, trusted: URL? = nil) -> Int {
        blocking {
            await (side == "nq" ? Side.queue : Side.curl).fetch(
                Array(repeating: url, count: count), window: 8, trusted: trusted)
        }
    }

    /// The instructions callgrind collected in a run of `binary --count-small side url count`.
    private static func instructions(_ valgrind: URL, _ binary: URL, side: String, url: String, count: Int) throws
        -> Int
    {
        let process = Process()
        process.executableURL = valgrind
        process.arguments = [
            "--tool=callgrind", "--callgrind-out-file=/dev/null", binary.path, "--count-small", side, url,
            String(count),
        ]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        // "==123== Collected : 456789"
        guard process.terminationStatus == 0,
            let line = text.split(separator: "\n").first(where: { $0.contains("Collected :") }),
            let value = line.split(separator: " ").last.flatMap({ Int($0) })
        else { throw BenchmarkFailure("callgrind of \(side) × \(count) failed: \(text.suffix(600))") }
        return value
    }

    private static func executable(_ name: String) -> URL? {
        ["/usr/bin/", "/usr/local/bin/", "/bin/"].map { URL(fileURLWithPath: $0 + name) }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    private static func runTool(_ tool: URL, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = tool
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchmarkFailure("\(tool.lastPathComponent) failed") }
    }
}
