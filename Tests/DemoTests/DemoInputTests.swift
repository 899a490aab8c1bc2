import Foundation
import LoopbackServer
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The `--input` list as a hostile world gives it: pipes, FIFOs and process substitutions read once, empty and
/// comment-only lists that must end, malformed and endless lines, any concurrency, and names taken by things
/// that are not files.
@Suite(.admitted, .timeLimit(.minutes(10))) struct DemoInputTests {
    /// Runs `script` with bash in `directory`, the Demo's path as `$1`; returns its exit status and its standard
    /// output and error together.
    private func bash(_ script: String, in directory: URL) async throws -> (status: Int32, output: String) {
        let log = directory.appendingPathComponent("bash-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: log) }
        let status = try await SpawnedProcess(
            "/bin/bash", ["-c", script + " 2>&1", "bash", demo.path], in: directory, output: log
        )
        .exitStatus()
        return (status, (try? String(contentsOf: log, encoding: .utf8)) ?? "")
    }

    @Test func aListFromAProcessSubstitutionOrAFIFOIsReadOnceAndRuns() async throws {
        let setup = try DemoSetup(paths: (0..<5).map { "/bytes/100/f\($0).bin" })
        defer { setup.tearDown() }
        let substituted = try await bash(
            #""$1" --input <(cat list.txt) --output out --no-accurate"#, in: setup.directory)
        #expect(substituted.status == 0, "\(substituted.output)")
        #expect(substituted.output.contains("Summary: 5/5 succeeded, 0 failed"), "\(substituted.output)")
        #expect(substituted.output.contains("a list read as it comes (a pipe)"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: setup.output.path).count == 5)

        setup.server.resetStatistics()
        let fifo = try await bash(
            #"mkfifo fifo && { cat list.txt > fifo & } && "$1" --input fifo --output out --replace --no-accurate"#,
            in: setup.directory)
        #expect(fifo.status == 0, "\(fifo.output)")
        #expect(fifo.output.contains("Summary: 5/5 succeeded, 0 failed"), "\(fifo.output)")
        #expect(setup.server.statistics.requests == 5)
    }

    /// An empty list and a list of comments only end at once with exit 0, every time (they hung 2–3 runs in 10).
    @Test(arguments: ["", "# nothing here\n\n# at all\n"])
    func aListWithoutEntriesEndsEveryTime(text: String) async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        try Data(text.utf8).write(to: setup.list)
        for run in 0..<TestEnvironment.demoRepeats {
            let result = try await runDemo(["--input", "list.txt", "--output", "out"], in: setup.directory)
            #expect(result.status == 0, "run \(run): \(result.output)")
            #expect(result.output.contains("Summary: 0/0 succeeded, 0 failed"), "run \(run): \(result.output)")
        }
    }

    /// A malformed third line is bad usage (exit 2) every time, however fast the two lines before it ran: never an
    /// exit 0 that skipped the rest of the list.
    @Test func aMalformedThirdLineIsBadUsageEveryTime() async throws {
        let setup = try DemoSetup(
            paths: ["/bytes/10", "/bytes/20"], extraLines: ["not a url", "http://127.0.0.1:1/late"])
        defer { setup.tearDown() }
        for run in 0..<max(1, TestEnvironment.demoRepeats / 5) {
            let result = try await bash(#""$1" --input list.txt --no-accurate"#, in: setup.directory)
            #expect(result.status == 2, "run \(run): \(result.output)")
            #expect(
                result.output.contains("line 3: 'not' is not an http(s) URL")
                    || result.output.contains("line 3: expected"), "\(result.output)")
        }
    }

    /// A line without end (`/dev/zero`) and a megabyte-long line are refused with their number and exit 2, and the
    /// message does not echo the line.
    @Test func anEndlessOrOverlongLineIsRefused() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let endless = try await bash(#""$1" --input /dev/zero"#, in: setup.directory)
        #expect(endless.status == 2, "\(endless.output)")
        #expect(endless.output.contains("line 1: longer than 65536 bytes"), "\(endless.output)")
        #expect(endless.output.utf8.count < 2_000)

        try Data(("http://127.0.0.1:1/a\nhttp://127.0.0.1:1/" + String(repeating: "x", count: 1 << 20) + "\n").utf8)
            .write(to: setup.list)
        let long = try await bash(#""$1" --input list.txt --no-accurate"#, in: setup.directory)
        #expect(long.status == 2, "\(long.output)")
        #expect(long.output.contains("line 2: longer than 65536 bytes"), "\(long.output)")
        #expect(long.output.utf8.count < 4_000)
    }

    /// Any concurrency is safe: the largest Int runs (within the queue's ceiling), as does 0 (unlimited).
    @Test(arguments: ["9223372036854775807", "0", "1152921504606846977"])
    func anyConcurrencyRuns(concurrency: String) async throws {
        let setup = try DemoSetup(paths: (0..<6).map { "/bytes/50?i=\($0)" })
        defer { setup.tearDown() }
        for accurate in [[], ["--no-accurate"]] {
            let result = try await runDemo(
                ["--input", "list.txt", "--concurrency", concurrency] + accurate, in: setup.directory)
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.contains("Summary: 6/6 succeeded, 0 failed"), "\(result.output)")
        }
    }

    /// With --no-clobber only a regular file counts as kept: a directory or a FIFO under a download's name is not
    /// a download. Those requests fail on it (exit 1) without waiting on the FIFO, and neither thing is touched;
    /// a FIFO at a `.part` path is refused the same way, and the other files are saved.
    @Test func aDirectoryOrAFIFOUnderADownloadsNameIsNeitherKeptNorTouched() async throws {
        let setup = try DemoSetup(paths: [
            "/bytes/10/dir.bin", "/bytes/10/fifo.bin", "/bytes/10/part.bin", "/bytes/10/plain.bin",
        ])
        defer { setup.tearDown() }
        let output = setup.output
        try FileManager.default.createDirectory(
            at: output.appendingPathComponent("dir.bin"), withIntermediateDirectories: false)
        #expect(mkfifo(output.appendingPathComponent("fifo.bin").path, 0o644) == 0)
        #expect(mkfifo(output.appendingPathComponent("part.bin.part").path, 0o644) == 0)
        let result = try await bash(
            #""$1" --input list.txt --output out --no-clobber --no-accurate --keep-going"#, in: setup.directory)
        #expect(result.status == 1, "\(result.output)")
        #expect(result.output.contains("Summary: 1/4 succeeded, 3 failed"), "\(result.output)")
        // Refused where the file would be opened (the Demo names a file's URL as a file's, without a stat).
        #expect(result.output.contains("dir.bin: is a directory"), "\(result.output)")
        #expect(result.output.contains("is not a regular file"), "\(result.output)")
        #expect(!result.output.contains("kept"), "\(result.output)")
        func type(_ name: String) -> FileAttributeType? {
            try? FileManager.default.attributesOfItem(atPath: output.appendingPathComponent(name).path)[.type]
                as? FileAttributeType
        }
        #expect(type("dir.bin") == .typeDirectory)
        #expect(type("fifo.bin") == .typeUnknown || type("fifo.bin") == FileAttributeType(rawValue: "NSFileTypeFIFO"))
        #expect(type("part.bin.part") != nil && type("part.bin.part") != .typeRegular)
        #expect(type("part.bin") == nil)
        #expect(type("plain.bin") == .typeRegular)
    }

    /// A malformed `http_proxy` holding a password: each request fails once (no retries: the setting is wrong,
    /// not the network) with an error that names the variable, and the password is in no line, over both
    /// transports.
    @Test(arguments: ["curl", "urlsession"])
    func anUnusableProxyFailsOnceAndNeverShowsItsPassword(transport: String) async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let script =
            #"env http_proxy='http://user:s3cretPW@[::1:80' no_proxy= NO_PROXY= all_proxy= ALL_PROXY= "$1" --verbose"#
            + " --transport \(transport) --retries 2 http://example.invalid/x"
        let result = try await bash(script, in: setup.directory)
        #expect(result.status == 1, "\(result.output)")
        #expect(!result.output.contains("s3cretPW"), "\(result.output)")
        #expect(
            result.output.contains("the proxy http_proxy names is not usable: http://***@[::1:80"), "\(result.output)")
        #expect(!result.output.contains("retry "), "\(result.output)")
    }
}
