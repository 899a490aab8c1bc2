import DemoKit
import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The output folder has one guardian (DESIGN semantics 22), tried as a hostile server and a careless user would:
/// names from responses and lists never plant a part, never stand for another line's file and never reach through a
/// link; the program's own files are checked together before anything is touched; a dry run changes nothing; a
/// reader that goes away stops the run with a write error.
@Suite(.admitted, .timeLimit(.minutes(10))) struct DemoGuardianTests {
    /// The transports each process test runs over: both, and libcurl's alone where the Demo's runs are cut down
    /// (`NQ_DEMO_REPEATS` under 50: the sanitizers' runs, where each instrumented Demo costs seconds of two shared
    /// cores and this suite's runs starved a transport test beside it of its first body piece for 10 s).
    static var transports: [String] { TestEnvironment.demoRepeats < 50 ? ["curl"] : ["curl", "urlsession"] }

    /// The loopback server's body pattern: byte i is `i % 256`.
    static func pattern(_ count: Int) -> Data { Data((0..<count).map { UInt8(truncatingIfNeeded: $0) }) }

    /// `text` percent-encoded for a query value.
    static func query(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: .alphanumerics)! }

    /// A `Content-Disposition` field naming `name`, as a `header=` query value.
    static func disposition(_ name: String) -> String {
        "header=" + query("Content-Disposition:attachment; filename=\"\(name)\"")
    }

    /// The names in `folder`, sorted.
    static func names(in folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).sorted()
    }

    @Test func aOneCharacterNameNeverCrashesTheSessionOrTheDryRun() async throws {
        let setup = try DemoSetup(paths: ["/bytes/5"])
        defer { setup.tearDown() }
        for name in ["s", "1", "é"] {
            let run = try await runDemo(
                ["--input", setup.list.path, "--output", "o-\(name)", "--save-session", name], in: setup.directory,
                withErrors: true)
            #expect(run.status == 0, "\(name): \(run.output)")
            let session = setup.directory.appendingPathComponent(name)
            #expect(FileManager.default.fileExists(atPath: session.path), "\(name)")
        }
        // A session path naming a folder that is not there: an error that says so, no crash.
        let folder = try await runDemo(
            ["--input", setup.list.path, "--output", "o", "--save-session", "x/"], in: setup.directory,
            withErrors: true)
        #expect(folder.status == 1 || folder.status == 2, "\(folder.output)")
        #expect(folder.output.contains("--save-session"), "\(folder.output)")
        // The dry run names a response's file in a one-component place: the URL's /5, and out=q.
        let base = "http://127.0.0.1:\(setup.server.port)"
        try Data(
            ["\(base)/bytes/5?\(Self.disposition("given.bin"))", "\(base)/bytes/6\tout=q"].map { $0 + "\n" }.joined()
                .utf8
        ).write(to: setup.list)
        let dry = try await runDemo(
            ["--dry-run", "--content-disposition", "--input", setup.list.path, "--output", "o"], in: setup.directory,
            withErrors: true)
        #expect(dry.status == 0, "\(dry.output)")
        #expect(dry.output.contains("  given.bin  ") && dry.output.contains("  q  "), "\(dry.output)")
    }

    @Test func aResponseNameNeverPlantsAPartAnotherDownloadContinues() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let base = "http://127.0.0.1:\(setup.server.port)"
        // The hostile server names its files like the part of b.bin and its validator, holding the ETag b.bin's server
        // will send: a later b.bin would be continued from byte 100,000 of the hostile bytes.
        let list = [
            "\(base)/bytes/100000/a?\(Self.disposition("b.bin.part"))",
            "\(base)/text?body=\(Self.query("etag\n\"bytes-200000\"\n"))&\(Self.disposition("b.bin.part.validator"))",
            "\(base)/bytes/200000/b.bin",
        ]
        try Data(list.map { $0 + "\n" }.joined().utf8).write(to: setup.list)
        for transport in Self.transports {
            let output = setup.directory.appendingPathComponent("out-\(transport)")
            setup.server.resetStatistics()
            let run = try await runDemo(
                [
                    "--transport", transport, "--input", setup.list.path, "--output", output.path,
                    "--content-disposition", "--concurrency", "1", "--no-accurate",
                ], in: setup.directory, withErrors: true)
            #expect(run.status == 0, "\(run.output)")
            #expect(!setup.server.statistics.headers.contains { $0["range"] != nil }, "\(setup.server.statistics.log)")
            #expect(try Data(contentsOf: output.appendingPathComponent("b.bin")) == Self.pattern(200_000))
            // The response's names are kept apart from the project's own: a `_` after them.
            #expect(
                Self.names(in: output) == ["b.bin", "b.bin.part.validator_", "b.bin.part_"], "\(Self.names(in: output))"
            )
            #expect(try Data(contentsOf: output.appendingPathComponent("b.bin.part_")) == Self.pattern(100_000))
        }
    }

    @Test func aResponseNameNeverStandsForAnotherLinesFile() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let base = "http://127.0.0.1:\(setup.server.port)"
        let hostileBody = String(repeating: "X", count: 300)
        // A response named c.bin, as long as the real c.bin, dated in 2098: by size and date alone it would pass for
        // the later line's file, unchanged (or kept, with --no-clobber).
        let hostile = setup.directory.appendingPathComponent("hostile.txt")
        try Data(
            ("\(base)/text?body=\(hostileBody)&\(Self.disposition("c.bin"))&lastModified="
                + Self.query("Wed, 01 Jan 2098 00:00:00 GMT") + "\n").utf8
        ).write(to: hostile)
        let line = "\(base)/bytes/300/c.bin?lastModified=" + Self.query("Sun, 06 Nov 1994 08:49:37 GMT")
        try Data((line + "\n").utf8).write(to: setup.list)
        for transport in Self.transports {
            let output = setup.directory.appendingPathComponent("out-\(transport)")
            let common = ["--transport", transport, "--output", output.path, "--content-disposition"]
            let first = try await runDemo(common + ["--input", hostile.path], in: setup.directory)
            #expect(first.status == 0 && Self.names(in: output) == ["c.bin"], "\(first.output)")
            let run = try await runDemo(common + ["--input", setup.list.path], in: setup.directory, withErrors: true)
            #expect(run.status == 0 && !run.output.contains("unchanged"), "\(run.output)")
            #expect(run.output.contains("1/1 succeeded"), "\(run.output)")
            #expect(Self.names(in: output) == ["c-2.bin", "c.bin"], "\(Self.names(in: output))")
            #expect(try Data(contentsOf: output.appendingPathComponent("c.bin")) == Data(hostileBody.utf8))
            #expect(try Data(contentsOf: output.appendingPathComponent("c-2.bin")) == Self.pattern(300))
            // Each file says where it came from.
            #expect(FileOrigin.recorded(atPath: output.appendingPathComponent("c-2.bin").path) == .url(line))
            // Run again, each list finds its own file: no -3, nothing fetched under another's name.
            for list in [setup.list, hostile] {
                let again = try await runDemo(common + ["--input", list.path], in: setup.directory)
                #expect(again.status == 0, "\(again.output)")
            }
            #expect(Self.names(in: output) == ["c-2.bin", "c.bin"], "\(Self.names(in: output))")
            #expect(try Data(contentsOf: output.appendingPathComponent("c.bin")) == Data(hostileBody.utf8))
            #expect(try Data(contentsOf: output.appendingPathComponent("c-2.bin")) == Self.pattern(300))
            // --no-clobber finds the line's own file beside the other's: kept, no request sent.
            setup.server.resetStatistics()
            let kept = try await runDemo(
                common + ["--no-clobber", "--input", setup.list.path], in: setup.directory, withErrors: true)
            #expect(kept.status == 0 && kept.output.contains("1 kept"), "\(kept.output)")
            #expect(setup.server.statistics.log.isEmpty, "\(setup.server.statistics.log)")
        }
        // --no-clobber never keeps another URL's file as the line's: the line's is fetched beside it.
        let output = setup.directory.appendingPathComponent("out-no-clobber")
        let common = ["--output", output.path, "--content-disposition"]
        _ = try await runDemo(common + ["--input", hostile.path], in: setup.directory)
        let run = try await runDemo(
            common + ["--no-clobber", "--input", setup.list.path], in: setup.directory, withErrors: true)
        #expect(run.status == 0 && run.output.contains("1/1 succeeded"), "\(run.output)")
        #expect(try Data(contentsOf: output.appendingPathComponent("c-2.bin")) == Self.pattern(300))
    }

    @Test func nothingIsWrittenThroughALinkPlantedInTheOutputFolder() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let base = "http://127.0.0.1:\(setup.server.port)"
        let outside = setup.directory.appendingPathComponent("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            at: setup.output.appendingPathComponent("sub"), withDestinationURL: outside)
        try FileManager.default.createSymbolicLink(
            at: setup.output.appendingPathComponent("127.0.0.1:\(setup.server.port)"), withDestinationURL: outside)
        try Data(
            ["\(base)/bytes/10\tdir=sub", "\(base)/bytes/11\tdir=sub/deeper", "\(base)/bytes/20\tdir=real"].map {
                $0 + "\n"
            }.joined().utf8
        ).write(to: setup.list)
        for transport in Self.transports {
            let run = try await runDemo(
                ["--transport", transport, "--input", setup.list.path, "--output", setup.output.path],
                in: setup.directory, withErrors: true)
            // The two lines through the link fail alone, saying why; the third is saved.
            #expect(run.status == 1, "\(run.output)")
            #expect(run.output.contains("sub in the output folder is a symbolic link"), "\(run.output)")
            // (A later transport's run finds the earlier one's file unchanged.)
            #expect(
                run.output.contains("Summary: 1/3 succeeded") && run.output.contains(", 2 failed"), "\(run.output)")
            #expect(try Data(contentsOf: setup.output.appendingPathComponent("real/20")) == Self.pattern(20))
            #expect(Self.names(in: outside).isEmpty, "\(Self.names(in: outside))")
            // --tree's host folder, a link too.
            let tree = try await runDemo(
                ["--transport", transport, "--tree", "--output", setup.output.path, "\(base)/bytes/30/x.bin"],
                in: setup.directory, withErrors: true)
            #expect(tree.status == 1 && tree.output.contains("is a symbolic link"), "\(tree.output)")
            #expect(Self.names(in: outside).isEmpty, "\(Self.names(in: outside))")
        }
    }

    @Test func aDryRunChangesNothing() async throws {
        let setup = try DemoSetup(paths: ["/bytes/0", "/bytes/1", "/nohead/5"])
        defer { setup.tearDown() }
        let list = try Data(contentsOf: setup.list)
        let session = setup.directory.appendingPathComponent("session.txt")
        let cookies = setup.directory.appendingPathComponent("jar.txt")
        let output = setup.directory.appendingPathComponent("never")
        let run = try await runDemo(
            [
                "--dry-run", "--input", setup.list.path, "--save-session", session.path, "--save-cookies",
                cookies.path, "--output", output.path,
            ], in: setup.directory, withErrors: true)
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("a dry run finishes nothing and writes no --save-session"), "\(run.output)")
        #expect(!FileManager.default.fileExists(atPath: session.path))
        #expect(!FileManager.default.fileExists(atPath: cookies.path))
        #expect(!FileManager.default.fileExists(atPath: output.path))
        #expect(try Data(contentsOf: setup.list) == list)
        // The real run afterwards fetches every line: none was taken for finished.
        let real = try await runDemo(["--input", setup.list.path, "--output", output.path], in: setup.directory)
        #expect(real.status == 0 && real.output.contains("Summary: 3/3 succeeded"), "\(real.output)")
    }

    @Test func theProgramsOwnFilesAreDistinctAndCheckedBeforeAnythingIsTouched() async throws {
        let setup = try DemoSetup(paths: ["/bytes/5"])
        defer { setup.tearDown() }
        let directory = setup.directory
        let kept = Data("kept\n".utf8)
        let report = directory.appendingPathComponent("report.jsonl")
        let progress = directory.appendingPathComponent("progress.jsonl")
        let netrc = directory.appendingPathComponent("netrc")
        try Data("machine example.test login u password p\n".utf8).write(to: netrc)
        let link = directory.appendingPathComponent("report-link")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: report)
        let folder = directory.appendingPathComponent("a-folder")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try kept.write(to: report)
        // One file under two options, through a link or another spelling of its path, is refused.
        let list = ProgramFiles.Role("--input", setup.list.path, writes: false)
        let cases: [([ProgramFiles.Role], String)] = [
            (
                [.init("--report", report.path, writes: true), .init("--save-session", report.path, writes: true)],
                "are one file"
            ),
            (
                [.init("--report", report.path, writes: true), .init("--save-session", link.path, writes: true)],
                "are one file"
            ),
            (
                [
                    .init("--report", "r2.jsonl", writes: true),
                    .init("--save-cookies", "./sub/../r2.jsonl", writes: true),
                ],
                "are one file"
            ),
            (
                [.init("--netrc-file", netrc.path, writes: false), .init("--progress-json", netrc.path, writes: true)],
                "are one file"
            ),
            ([.init("--netrc-file", setup.list.path, writes: false)], "it is the --input list"),
            ([.init("--save-session", folder.path, writes: true)], "not a regular file"),
        ]
        for (roles, why) in cases {
            let problem = ProgramFiles.problem(with: [list] + roles, output: nil)
            #expect(problem?.contains(why) == true, "\(roles.map(\.option)): \(String(describing: problem))")
        }
        // A jar read and written back is one file on purpose; standard output is nobody's file.
        #expect(
            ProgramFiles.problem(
                with: [list, .init("--load-cookies", "j", writes: false), .init("--save-cookies", "j", writes: true)],
                output: nil) == nil)
        // The Demo refuses before anything is created, emptied or sent, whichever option is the wrong one: a session
        // that is a folder leaves the report and the progress file as they were, and --output uncreated.
        try kept.write(to: progress)
        let fresh = directory.appendingPathComponent("fresh-out")
        for arguments in [
            ["--report", report.path, "--progress-json", progress.path, "--save-session", folder.path],
            ["--report", report.path, "--progress-json", "./report.jsonl"],
        ] {
            let run = try await runDemo(
                ["--input", setup.list.path, "--output", fresh.path] + arguments, in: directory, withErrors: true)
            #expect(run.status == 2, "\(arguments): \(run.output)")
            #expect(try Data(contentsOf: report) == kept && Data(contentsOf: progress) == kept, "\(arguments)")
            #expect(!FileManager.default.fileExists(atPath: fresh.path), "\(arguments)")
            #expect(setup.server.statistics.log.isEmpty, "\(arguments): \(setup.server.statistics.log)")
        }
    }

    /// One rule for every file the run writes: a read-only one is refused, the session's as the report's. Read-only
    /// even to root: the immutable attribute (`chattr +i`, e2fsprogs; the test folder must be on ext4, as here).
    @Test func aReadOnlyFileTheRunWouldWriteIsRefusedWhicheverItIs() async throws {
        let setup = try DemoSetup(paths: ["/bytes/5"])
        defer { setup.tearDown() }
        let file = setup.directory.appendingPathComponent("read-only.txt")
        let kept = Data("kept\n".utf8)
        try kept.write(to: file)
        let status = try await SpawnedProcess("/usr/bin/chattr", ["+i", file.path], in: setup.directory).exitStatus()
        guard status == 0 else {
            Issue.record("chattr +i failed (exit \(status)): this test needs e2fsprogs' chattr and an ext4 folder")
            return
        }
        defer { _ = try? SpawnedProcess("/usr/bin/chattr", ["-i", file.path], in: setup.directory).waitForExit() }
        for option in ["--report", "--save-session", "--progress-json", "--save-cookies"] {
            let run = try await runDemo(
                ["--input", setup.list.path, option, file.path], in: setup.directory, withErrors: true)
            #expect(run.status == 2 && run.output.contains("read-only"), "\(option): \(run.output)")
            #expect(try Data(contentsOf: file) == kept)
        }
        #expect(setup.server.statistics.log.isEmpty)
    }

    @Test func theSessionIsOwnerOnlyAndTheListInsideTheOutputFolderIsNeverReplaced() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        // The list lives in the output folder, and a line's URL is named like it.
        let list = setup.output.appendingPathComponent("list.txt")
        let lines = ["http://127.0.0.1:\(setup.server.port)/bytes/7/list.txt"]
        try Data(lines.map { $0 + "\n" }.joined().utf8).write(to: list)
        #expect(chmod(list.path, 0o600) == 0)
        let session = setup.directory.appendingPathComponent("session.txt")
        let run = try await runDemo(
            ["--input", list.path, "--output", setup.output.path, "--save-session", session.path], in: setup.directory)
        #expect(run.status == 0, "\(run.output)")
        var info = stat()
        #expect(stat(session.path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(try String(contentsOf: list, encoding: .utf8) == lines[0] + "\n")
        #expect(try Data(contentsOf: setup.output.appendingPathComponent("list-2.txt")) == Self.pattern(7))
    }

    @Test func aReaderThatGoesAwayStopsTheRunWithAWriteError() async throws {
        let setup = try DemoSetup(paths: ["/trickle/2000/100/200", "/bytes/10"])
        defer { setup.tearDown() }
        let script =
            "\"$0\" --progress-json - --input \"$1\" --output \"$2\" | head -c 10 >/dev/null; "
            + "echo \"status=${PIPESTATUS[0]}\""
        let log = setup.directory.appendingPathComponent("pipe.log")
        let status = try await SpawnedProcess(
            "/bin/bash", ["-c", script, demo.path, setup.list.path, setup.output.path], in: setup.directory,
            output: log, errors: nil
        ).exitStatus()
        #expect(status == 0)
        let text = try String(contentsOf: log, encoding: .utf8)
        // curl's write error (23), not SIGPIPE's death (141); the partial files are kept as on Ctrl-C.
        #expect(text.contains("status=23"), "\(text)")
    }

    @Test func filesANetrcOrCookieFileIsReadFromArePipesOrSayWhatIsWrong() async throws {
        let setup = try DemoSetup(paths: ["/bytes/3"])
        defer { setup.tearDown() }
        let log = setup.directory.appendingPathComponent("pipe.log")
        let script =
            "\"$0\" --input \"$1\" --netrc-file <(printf 'machine 127.0.0.1 login u password p\\n') "
            + "--load-cookies <(printf '# Netscape HTTP Cookie File\\n') 2>&1; echo \"status=$?\""
        _ = try await SpawnedProcess(
            "/bin/bash", ["-c", script, demo.path, setup.list.path], in: setup.directory, output: log
        ).exitStatus()
        let text = try String(contentsOf: log, encoding: .utf8)
        #expect(text.contains("status=0") && text.contains("Summary: 1/1 succeeded"), "\(text)")
        for option in ["--netrc-file", "--load-cookies"] {
            let run = try await runDemo(
                ["--input", setup.list.path, option, setup.output.path], in: setup.directory, withErrors: true)
            #expect(run.status == 2 && run.output.contains("it is a folder, not a file"), "\(option): \(run.output)")
            #expect(!run.output.contains("NSCocoaErrorDomain"), "\(run.output)")
        }
    }

    @Test func namesThatCannotWorkAreRefusedAtTheLineWithTheLimit() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let base = "http://127.0.0.1:\(setup.server.port)"
        for (name, why) in [
            (String(repeating: "n", count: 201), "longer than 200 bytes"),
            (String(repeating: "n", count: 255), "longer than 200 bytes"),
            ("b.bin.part", "ends in .part"), ("x.PART.validator", "ends in .part.validator"),
            ("invoice\u{202E}fdp.exe", "not a safe file name"),
        ] {
            do throws(InputList.Problem) {
                _ = try InputList.parse(Substring("\(base)/bytes/3\tout=\(name)"), number: 1)
                Issue.record("out=\(name) was accepted")
            } catch {
                #expect(error.reason.contains(why), "\(name): \(error.reason)")
            }
        }
        // The Demo stops at such a line, before anything is fetched or written.
        try Data("\(base)/bytes/3\tout=\(String(repeating: "n", count: 255))\n".utf8).write(to: setup.list)
        let refused = try await runDemo(
            ["--input", setup.list.path, "--output", setup.output.path], in: setup.directory, withErrors: true)
        #expect(refused.status == 2 && refused.output.contains("longer than 200 bytes"), "\(refused.output)")
        #expect(Self.names(in: setup.output).isEmpty && setup.server.statistics.log.isEmpty)
        // 200 bytes is a name that works, with its -2 too.
        let longest = String(repeating: "n", count: 196) + ".bin"
        try Data("\(base)/bytes/3\tout=\(longest)\n\(base)/bytes/4\tout=\(longest)\n".utf8).write(to: setup.list)
        let run = try await runDemo(["--input", setup.list.path, "--output", setup.output.path], in: setup.directory)
        #expect(run.status == 0, "\(run.output)")
        #expect(Self.names(in: setup.output) == [String(repeating: "n", count: 196) + "-2.bin", longest])
        // One bound for --rate and --wait: under a year.
        #expect(Politeness.interval(ofRate: "0.0000000001/d") == nil && Politeness.seconds(ofWait: "366d") == nil)
        #expect(Politeness.interval(ofRate: "2/d") == 43_200 && Politeness.seconds(ofWait: "364d") == 364 * 86_400)
    }

    @Test func aListStoppedByABadLineCountsNothingAsFailed() async throws {
        // Slow lines, so that they are waiting or running when the bad line, the last, is read.
        let setup = try DemoSetup(paths: (0..<29).map { "/bytes/100000?rate=20000&i=\($0)" }, extraLines: ["not a url"])
        defer { setup.tearDown() }
        // Read from a pipe (a regular file is refused whole before its first request): the run stops at the line.
        let log = setup.directory.appendingPathComponent("piped.log")
        let status = try await SpawnedProcess(
            "/bin/bash", ["-c", #""$1" --input <(cat list.txt) --concurrency 2 2>&1"#, "bash", demo.path],
            in: setup.directory, output: log
        ).exitStatus()
        let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(status == 2, "\(output)")
        #expect(output.contains("succeeded, 0 failed, 29 cancelled (the list stopped at a bad line)"), "\(output)")
        // The same list as a file: refused before anything is sent.
        setup.server.resetStatistics()
        let run = try await runDemo(
            ["--input", setup.list.path, "--concurrency", "2"], in: setup.directory, withErrors: true)
        #expect(run.status == 2, "\(run.output)")
        #expect(run.output.contains("line 30: 'not' is not an http(s) URL"), "\(run.output)")
        #expect(setup.server.statistics.requests == 0)
    }
}
