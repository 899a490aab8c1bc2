#if os(Linux)
    import Foundation
    import LoopbackServer
    import TestSupport
    import Testing

    /// `-o -` with `--split N` (issue 75): the file on standard output in order, each byte once, nothing else there;
    /// a reader that goes away ends the run with exit 23; bad usage refused.
    @Suite(.admitted, .timeLimit(.minutes(10))) struct DemoStandardOutputTests {
        static func pattern(_ count: Int) -> Data { Data((0..<count).map { UInt8(truncatingIfNeeded: $0) }) }

        @Test func aSplitFileReachesStandardOutputInOrderOverBothTransports() async throws {
            let setup = try DemoSetup(paths: [])
            defer { setup.tearDown() }
            let size = 6_000_000
            for transport in ["curl", "urlsession"] {
                setup.server.resetStatistics()
                let output = setup.directory.appendingPathComponent("stdout-\(transport)")
                let errors = setup.directory.appendingPathComponent("stderr-\(transport)")
                let status = try await SpawnedProcess(
                    demo.path,
                    [
                        "--transport", transport, "--split", "4", "--window", "1M", "-o", "-",
                        setup.server.url("/bytes/\(size)").absoluteString,
                    ], in: setup.directory, output: output, errors: errors
                ).exitStatus()
                let said = readText(of: errors) ?? ""
                #expect(status == 0, "\(said)")
                #expect(FileManager.default.contents(atPath: output.path) == Self.pattern(size), "\(said)")
                #expect(said.contains("Done: 6.0 MB to standard output"), "\(said)")
                // 256 KiB chunks (the window's eighth), at most 4 at once.
                #expect(setup.server.statistics.requests == 1 + 23)
                #expect(setup.server.statistics.maxInFlight <= 4)
            }
        }

        @Test func aReaderThatGoesAwayEndsTheRunWithTheWriteErrorsStatus() async throws {
            let setup = try DemoSetup(paths: [])
            defer { setup.tearDown() }
            let script = """
                "$0" --split 4 -o - "$1" 2>"$2" | head -c 1000 > "$3"; echo "${PIPESTATUS[0]}" > "$4"
                """
            let files = ["errors", "head", "status"].map { setup.directory.appendingPathComponent($0).path }
            let status = try await SpawnedProcess(
                "/bin/bash",
                ["-c", script, demo.path, setup.server.url("/bytes/50000000").absoluteString] + files,
                in: setup.directory
            ).exitStatus()
            #expect(status == 0)
            #expect(FileManager.default.contents(atPath: files[1]) == Self.pattern(1000))
            #expect(
                readText(of: URL(fileURLWithPath: files[2]))?.trimmingCharacters(in: .whitespacesAndNewlines) == "23")
            #expect(readText(of: URL(fileURLWithPath: files[0]))?.contains("reader went away (broken pipe)") == true)
        }

        @Test func standardOutputTakesOneURLAndNoFileOptions() async throws {
            let setup = try DemoSetup(paths: [])
            defer { setup.tearDown() }
            let url = setup.server.url("/bytes/10").absoluteString
            for (arguments, words) in [
                (["-o", "file.bin", url], "-o takes - (standard output)"),
                (["-o", "-", url, url], "give exactly one URL"),
                (["-o", "-"], "give exactly one URL"),
                (["-o", "-", "--input", setup.list.path], "give exactly one URL"),
                (["-o", "-", "--output", "out", url], "--output does not apply"),
                (["-o", "-", "--report", "r.jsonl", url], "--report does not apply"),
                (["-o", "-", "--window", "10", url], "--window needs bytes from 1M to 16G"),
            ] {
                let run = try await runDemo(arguments, in: setup.directory, withErrors: true)
                #expect(run.status == 2, "\(arguments): \(run.output)")
                #expect(run.output.contains(words), "\(arguments): \(run.output)")
            }
            #expect(setup.server.statistics.requests == 0)
        }
    }
#endif
