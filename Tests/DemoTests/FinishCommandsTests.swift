#if os(Linux)
    import DemoKit
    import Foundation
    import TestSupport
    import Testing

    /// The `--on-finish` runner alone: every file asked for runs once, at most the limit at once, however long
    /// the batch; how each ended is told.
    @Suite(.admitted, .timeLimit(.minutes(10))) struct FinishCommandsTests {
        @Test func aLongBatchRunsEachCommandOnceAndTellsHowEachEnded() async throws {
            let seen = Box<[String: Int32]>([:])
            // A script: 7 for a path ending in 7, killed by signal 9 for one ending in 9, else 0.
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nq-fc-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let script = directory.appendingPathComponent("status.sh")
            try "#!/bin/sh\ncase \"$1\" in *7) exit 7 ;; *9) kill -9 $$ ;; esac\nexit 0\n".write(
                to: script, atomically: true, encoding: .utf8)
            _ = chmod(script.path, 0o755)
            let runner = try FinishCommands(command: script.path, limit: 8) { outcome in
                seen.with { $0[outcome.path] = outcome.status ?? -(outcome.signal ?? 0) }
            }
            let count = 1_500
            for index in 0..<count { runner.run(path: "file-\(index)", url: "http://h/\(index)", line: index) }
            // Waited for on a thread of its own, not one of the few the tests' tasks share.
            await withCheckedContinuation { continuation in
                Thread {
                    runner.waitForAll()
                    continuation.resume()
                }.start()
            }
            let statuses = seen.with { $0 }
            #expect(statuses.count == count)
            #expect(statuses.filter { $0.key.hasSuffix("7") }.allSatisfy { $0.value == 7 })
            #expect(statuses.filter { $0.key.hasSuffix("9") }.allSatisfy { $0.value == -9 })
            #expect(statuses.filter { !$0.key.hasSuffix("7") && !$0.key.hasSuffix("9") }.allSatisfy { $0.value == 0 })
            let tally = runner.tally
            #expect(tally.ran == count && tally.failed == 300)
        }

        @Test func placeholdersTakeThePathAndURLWhereTheyAreElseBothGoLast() {
            let path = "/out/$(x) y.bin"
            let url = "http://h/a;b"
            #expect(FinishCommands.arguments(["/bin/p", "-q"], path: path, url: url) == ["/bin/p", "-q", path, url])
            #expect(FinishCommands.arguments(["/bin/p", "{file}"], path: path, url: url) == ["/bin/p", path])
            #expect(
                FinishCommands.arguments(["/bin/p", "--from", "{url}", "{file}", "x{file}"], path: path, url: url)
                    == ["/bin/p", "--from", url, path, "x{file}"])
            // The program's own word is never replaced.
            #expect(FinishCommands.arguments(["{file}"], path: path, url: url) == ["{file}", path, url])
        }

        @Test func theProgramIsFoundAlongPathOrRefused() throws {
            #expect(try FinishCommands.program(of: "sh -c x", environment: ["PATH": "/nonexistent:/bin"]) == "/bin/sh")
            #expect(throws: FinishCommands.Problem.self) {
                try FinishCommands.program(of: "sh", environment: ["PATH": "/nonexistent"])
            }
            #expect(throws: FinishCommands.Problem.self) { try FinishCommands.program(of: "/etc/passwd") }
            #expect(throws: FinishCommands.Problem.self) { try FinishCommands.program(of: " \t ") }
        }
    }
#endif
