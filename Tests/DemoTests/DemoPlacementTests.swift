import DemoKit
import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Files named and placed as the list says: `out=` and `dir=` on a line (aria2's names), `--tree` and `--cut-dirs`
/// (wget's): where each file lands, and the fields that would leave the output folder refused.
@Suite(.admitted, .timeLimit(.minutes(10))) struct DemoPlacementTests {
    @Test func outAndDirFieldsAreReadBesideMirrorsAndTheChecksum() throws {
        let hex = String(repeating: "ab", count: 32)
        let tab = try #require(
            try InputList.parse(
                Substring("http://h/a.bin\thttp://m/a.bin\tsha256:\(hex)\tout=my report.pdf\tdir=2026/q1"), number: 4))
        #expect(tab.name == "my report.pdf" && tab.folder == "2026/q1")
        #expect(tab.mirrors.map(\.absoluteString) == ["http://m/a.bin"] && tab.checksum != nil)
        let spaces = try #require(try InputList.parse("http://h/a.bin out=b.bin dir=x/", number: 1))
        #expect(spaces.name == "b.bin" && spaces.folder == "x")
        let plain = try #require(try InputList.parse("http://h/a.bin", number: 1))
        #expect(plain.name == nil && plain.folder == nil)
    }

    @Test func fieldsThatWouldLeaveTheOutputFolderAreBadLines() {
        for line in [
            "http://h/a out=../x", "http://h/a out=a/b", "http://h/a out=..", "http://h/a out=.", "http://h/a out=",
            "http://h/a dir=../x", "http://h/a dir=/../etc", "http://h/a dir=a/../../b", "http://h/a dir=a//b",
            "http://h/a dir=.", "http://h/a\tout=a\u{0}b", "http://h/a\tout=a\rb", "http://h/a out=a out=b",
            "http://h/a dir=a dir=b", "out=x", "http://h/a out=" + String(repeating: "n", count: 256),
        ] {
            #expect(throws: InputList.Problem.self, "\(line)") { try InputList.parse(Substring(line), number: 2) }
        }
    }

    @Test func namesAreUniqueOverTheListWithTheirFolders() {
        var namer = FileNamer()
        let url = URL(string: "http://h/pub/a.bin")!
        let bases = [
            FileNames.base(for: url, name: nil, folders: nil, treeCutDirs: nil),
            FileNames.base(for: url, name: nil, folders: ["x"], treeCutDirs: nil),
            FileNames.base(for: url, name: nil, folders: ["x"], treeCutDirs: nil),
            FileNames.base(for: url, name: "b.bin", folders: ["X"], treeCutDirs: nil),
            FileNames.base(for: url, name: "b.bin", folders: ["x"], treeCutDirs: nil),
            FileNames.base(for: url, name: nil, folders: nil, treeCutDirs: 0),
            FileNames.base(
                for: URL(string: "http://H:8080/pub/2026/%2E%2E/a.bin")!, name: nil, folders: nil, treeCutDirs: 1),
        ]
        #expect(
            bases.map { namer.place(for: $0).relativePath } == [
                "a.bin", "x/a.bin", "x/a-2.bin", "X/b.bin", "x/b-2.bin", "h/pub/a.bin", "h:8080/2026/download/a.bin",
            ])
    }

    @Test func filesLandWhereTheListAndTheTreeSay() async throws {
        let setup = try DemoSetup(
            paths: [], extraLines: [])
        defer { setup.tearDown() }
        let base = "http://127.0.0.1:\(setup.server.port)"
        try Data(
            [
                "\(base)/bytes/10\tout=ten bytes.bin", "\(base)/bytes/20?x=1\tdir=deep/er",
                "\(base)/bytes/30\tout=t.bin\tdir=d",
                "\(base)/bytes/10?again=1\tout=ten bytes.bin",
            ].map { $0 + "\n" }.joined().utf8
        ).write(to: setup.list)
        for transport in ["curl", "urlsession"] {
            let output = setup.directory.appendingPathComponent("out-\(transport)")
            let run = try await runDemo(
                ["--transport", transport, "--input", setup.list.path, "--output", output.path], in: setup.directory)
            #expect(run.status == 0, "\(run.output)")
            let files = try FileManager.default.subpathsOfDirectory(atPath: output.path).sorted()
            #expect(
                files == ["d", "d/t.bin", "deep", "deep/er", "deep/er/20", "ten bytes-2.bin", "ten bytes.bin"],
                "\(files)")
            #expect(try Data(contentsOf: output.appendingPathComponent("d/t.bin")) == Data((0..<30).map { UInt8($0) }))
        }
        // --tree: host and folders, --cut-dirs dropping the first.
        let output = setup.directory.appendingPathComponent("tree")
        let run = try await runDemo(
            [
                "--tree", "--cut-dirs", "1", "--output", output.path, "\(base)/bytes/10",
                "\(base)/redirect/1?to=/bytes/5",
            ],
            in: setup.directory)
        #expect(run.status == 0, "\(run.output)")
        let files = try FileManager.default.subpathsOfDirectory(atPath: output.path).sorted()
        #expect(
            files == [
                "127.0.0.1:\(setup.server.port)", "127.0.0.1:\(setup.server.port)/1",
                "127.0.0.1:\(setup.server.port)/10",
            ], "\(files)")
    }

    @Test func aBadFieldStopsTheRunAsBadUsageAndTheFieldsNeedAnOutputFolder() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let base = "http://127.0.0.1:\(setup.server.port)"
        try Data("\(base)/bytes/10\n\(base)/bytes/20\tdir=../escape\n".utf8).write(to: setup.list)
        let bad = try await runDemo(
            ["--input", setup.list.path, "--output", setup.output.path], in: setup.directory, withErrors: true)
        #expect(bad.status == 2)
        #expect(
            bad.output.contains("line 2: dir='../escape' is not a folder inside the output folder"), "\(bad.output)")
        #expect(!FileManager.default.fileExists(atPath: setup.directory.appendingPathComponent("escape").path))
        try Data("\(base)/bytes/10\tout=x.bin\n".utf8).write(to: setup.list)
        let memory = try await runDemo(["--input", setup.list.path], in: setup.directory, withErrors: true)
        #expect(memory.status == 2)
        #expect(memory.output.contains("out= and dir= need --output DIR"), "\(memory.output)")
        for (arguments, message) in [
            (["--tree", "\(base)/bytes/1"], "--tree works with --output DIR"),
            (["--cut-dirs", "1", "--output", "o", "\(base)/bytes/1"], "--cut-dirs works with --tree"),
        ] {
            let run = try await runDemo(arguments, in: setup.directory, withErrors: true)
            #expect(run.status == 2 && run.output.contains(message), "\(arguments): \(run.output)")
        }
    }
}

/// `--content-disposition`: each file named by its response, in its line's folder, never over a file.
@Suite(.admitted, .timeLimit(.minutes(10))) struct DemoContentDispositionTests {
    static func path(_ size: Int, _ disposition: String) -> String {
        "/bytes/\(size)?header="
            + ("Content-Disposition:" + disposition).addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
    }

    @Test func filesTakeTheirResponsesNamesSafelyAndTheReportSaysWhere() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let base = "http://127.0.0.1:\(setup.server.port)"
        try Data(
            [
                base + Self.path(10, #"attachment; filename="../../../etc/report.pdf""#),
                base + Self.path(20, "attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.txt") + "\tdir=cv",
                base + Self.path(30, #"attachment; filename="report.pdf""#),
                base + "/bytes/5?plain=1",
            ].map { $0 + "\n" }.joined().utf8
        ).write(to: setup.list)
        let report = setup.directory.appendingPathComponent("report.jsonl")
        for transport in ["curl", "urlsession"] {
            let output = setup.directory.appendingPathComponent("out-\(transport)")
            let run = try await runDemo(
                [
                    "--transport", transport, "--input", setup.list.path, "--output", output.path,
                    "--content-disposition", "--report", report.path, "--concurrency", "1",
                ], in: setup.directory)
            #expect(run.status == 0, "\(run.output)")
            let files = try FileManager.default.subpathsOfDirectory(atPath: output.path).sorted()
            #expect(files == ["5", "cv", "cv/résumé.txt", "report-2.pdf", "report.pdf"], "\(transport): \(files)")
            #expect(
                try Data(contentsOf: output.appendingPathComponent("report-2.pdf")) == Data((0..<30).map { UInt8($0) }))
            let saved = try String(contentsOf: report, encoding: .utf8)
            #expect(saved.contains(output.appendingPathComponent("cv/résumé.txt").path), "\(saved)")
            // Each done row says where a file went when its response named it otherwise.
            let done = run.output.split(separator: "\n").filter { $0.hasPrefix("done") }.map(String.init).sorted()
            #expect(
                done == [
                    "done      10  10 B  saved as report.pdf", "done      20  20 B  saved as résumé.txt",
                    "done      30  30 B  saved as report-2.pdf", "done      5  5 B",
                ], "\(transport): \(run.output)")
        }
        // The dry run shows the names the responses give.
        let dry = try await runDemo(
            ["--input", setup.list.path, "--output", "never", "--content-disposition", "--dry-run"], in: setup.directory
        )
        #expect(dry.status == 0, "\(dry.output)")
        #expect(dry.output.contains("  report.pdf  ") && dry.output.contains("  cv/résumé.txt  "), "\(dry.output)")
    }
}
