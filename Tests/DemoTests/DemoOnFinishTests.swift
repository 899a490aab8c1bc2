#if os(Linux)
    import Foundation
    import TestSupport
    import Testing

    /// `--on-finish CMD` (issue 75): once per saved file, with its path and URL passed intact however hostile the
    /// names, never through a shell, at most `--on-finish-jobs` at once, its status in the report; both transports.
    @Suite(.admitted, .timeLimit(.minutes(10))) struct DemoOnFinishTests {
        /// A script that records its arguments, NUL-separated, in `$LOGDIR/args.<pid>`, and how many of its kind
        /// were running as it started in `$LOGDIR/counts`; exits 3 when its path names "fail".
        static func recorder(in directory: URL) throws -> String {
            let script = directory.appendingPathComponent("record.sh")
            try """
            #!/bin/sh
            mkdir -p "$LOGDIR/running"
            : > "$LOGDIR/running/$$"
            ls "$LOGDIR/running" | wc -l >> "$LOGDIR/counts"
            printf '%s\\0' "$@" > "$LOGDIR/args.$$"
            sleep 0.05
            rm -f "$LOGDIR/running/$$"
            case "$2" in *fail*) exit 3 ;; esac
            exit 0

            """.write(to: script, atomically: true, encoding: .utf8)
            _ = chmod(script.path, 0o755)
            return script.path
        }

        /// Each recorded run's arguments.
        static func recorded(in logs: URL) throws -> [[String]] {
            try FileManager.default.contentsOfDirectory(atPath: logs.path).filter { $0.hasPrefix("args.") }.map {
                let bytes = try Data(contentsOf: logs.appendingPathComponent($0))
                return bytes.split(separator: 0, omittingEmptySubsequences: false).dropLast().map {
                    String(decoding: $0, as: UTF8.self)
                }
            }
        }

        @Test func everySavedFileRunsTheCommandOnceWithHostileNamesPassedIntactAndNeverExecuted() async throws {
            let hostile = [
                "a b.bin", "$(touch PWNED).bin", "x;touch PWNED2.bin", "-rf.bin", "`touch PWNED3`.bin", "q'\"&|.bin",
                "fail me.bin",
            ]
            let setup = try DemoSetup(paths: [])
            defer { setup.tearDown() }
            let lines = hostile.enumerated().map {
                "\(setup.server.url("/bytes/\(100 + $0.offset)"))\tout=\($0.element)"
            }
            // A URL of its own with a shell's words in its query.
            let queryURL = setup.server.url("/bytes/50").absoluteString + "?q=$(touch%20PWNED4)"
            try Data((lines + [queryURL]).map { $0 + "\n" }.joined().utf8).write(to: setup.list)
            let script = try Self.recorder(in: setup.directory)
            for transport in ["curl", "urlsession"] {
                let output = setup.directory.appendingPathComponent("out-\(transport)")
                let logs = setup.directory.appendingPathComponent("logs-\(transport)")
                try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
                let report = setup.directory.appendingPathComponent("report-\(transport).jsonl")
                let run = try await runDemo(
                    [
                        "--transport", transport, "--input", setup.list.path, "--output", output.path,
                        "--on-finish", "\(script) --flag", "--on-finish-jobs", "2", "--report", report.path,
                    ], in: setup.directory, environment: ["LOGDIR=\(logs.path)"], withErrors: true)
                // The failing command fails nothing: every file saved, exit 0, and the failure said.
                #expect(run.status == 0, "\(transport): \(run.output)")
                #expect(run.output.contains("on-finish: 8 commands ran, 1 failed"), "\(run.output)")
                #expect(
                    run.output.contains(
                        "Demo: warning: --on-finish exited with 3 for \(output.path)/fail me.bin (the file stays saved)"
                    ),
                    "\(run.output)")
                var expected = hostile.enumerated().map { index, name in
                    [
                        "--flag", output.appendingPathComponent(name).path,
                        setup.server.url("/bytes/\(100 + index)").absoluteString,
                    ]
                }
                expected.append(["--flag", output.appendingPathComponent("50").path, queryURL])
                // What the script was given after its own name: the words of CMD, the path, the URL.
                let seen = try Self.recorded(in: logs)
                #expect(seen.sorted { $0[1] < $1[1] } == expected.sorted { $0[1] < $1[1] }, "\(transport)")
                for (index, name) in hostile.enumerated() {
                    #expect(
                        FileManager.default.contents(atPath: output.appendingPathComponent(name).path)?.count == 100
                            + index)
                }
                // No word of a name or URL became a command.
                for planted in ["PWNED", "PWNED2", "PWNED3", "PWNED4"] {
                    for folder in [setup.directory, output, logs] {
                        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent(planted).path))
                    }
                }
                // At most 2 at once.
                let counts = try String(contentsOf: logs.appendingPathComponent("counts"), encoding: .utf8)
                    .split(separator: "\n").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
                #expect(counts.count == 8 && counts.allSatisfy { (1...2).contains($0) }, "\(counts)")
                // Each command's status in the report, on a line of its own.
                let commandLines = try String(contentsOf: report, encoding: .utf8).split(separator: "\n")
                    .filter { $0.contains("\"command\"") }
                #expect(commandLines.count == 8)
                #expect(commandLines.filter { $0.contains("\"exit\":0") }.count == 7)
                #expect(commandLines.filter { $0.contains("\"exit\":3") && $0.contains("fail me.bin") }.count == 1)
            }
        }

        @Test func aFileKeptUnchangedRunsNoCommandAndAMissingProgramIsBadUsage() async throws {
            let setup = try DemoSetup(paths: ["/bytes/10"])
            defer { setup.tearDown() }
            let logs = setup.directory.appendingPathComponent("logs")
            try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
            let script = try Self.recorder(in: setup.directory)
            let arguments = ["--input", setup.list.path, "--output", setup.output.path, "--on-finish", script]
            let first = try await runDemo(arguments, in: setup.directory, environment: ["LOGDIR=\(logs.path)"])
            #expect(first.status == 0, "\(first.output)")
            #expect(try Self.recorded(in: logs).count == 1)
            // The rerun finds it unchanged: nothing saved, nothing run.
            let again = try await runDemo(arguments, in: setup.directory, environment: ["LOGDIR=\(logs.path)"])
            #expect(again.status == 0, "\(again.output)")
            #expect(try Self.recorded(in: logs).count == 1)
            #expect(again.output.contains("on-finish: 0 commands ran, all exited 0"), "\(again.output)")
            // A program that is not there, not executable, or no command at all: exit 2, nothing sent.
            setup.server.resetStatistics()
            let plain = setup.directory.appendingPathComponent("plain.txt")
            try Data("x".utf8).write(to: plain)
            for (command, words) in [
                ("/nonexistent/tool", "--on-finish: /nonexistent/tool is not an executable file"),
                ("no-such-program-nq", "--on-finish: no program no-such-program-nq along PATH"),
                (plain.path, "is not an executable file"), ("  ", "option '--on-finish' needs a value"),
            ] {
                let run = try await runDemo(
                    ["--input", setup.list.path, "--output", setup.output.path, "--on-finish", command],
                    in: setup.directory, withErrors: true)
                #expect(run.status == 2, "\(command): \(run.output)")
                #expect(run.output.contains(words), "\(command): \(run.output)")
            }
            let noOutput = try await runDemo(
                ["--input", setup.list.path, "--on-finish", script], in: setup.directory, withErrors: true)
            #expect(noOutput.status == 2)
            #expect(noOutput.output.contains("--on-finish works with --output DIR"), "\(noOutput.output)")
            #expect(setup.server.statistics.log.isEmpty)
        }
    }
#endif
