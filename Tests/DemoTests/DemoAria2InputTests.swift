import DemoKit
import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `--input` in aria2's format: a URL line, then its indented option lines (` out=`, ` dir=`, ` checksum=`,
/// ` header=`); options the Demo does not know named once and ignored; a malformed file refused before its first
/// request; a session that may be the list it continues.
@Suite(.admitted, .timeLimit(.minutes(10))) struct DemoAria2InputTests {
    /// The body `/bytes/N` serves (byte i is i % 256).
    static func body(_ count: Int) -> Data { Data((0..<count).map { UInt8(truncatingIfNeeded: $0) }) }

    /// An aria2 input file over `server`: three entries, the first with every option the Demo knows and two it does
    /// not (as aria2's saved sessions hold), the second in the same-line form with an option line, the third bare.
    static func aria2List(_ server: LoopbackServer) -> String {
        let sha = Checksum(hashing: body(300), .sha256).hex
        return """
            # saved by aria2
            \(server.url("/bytes/300").absoluteString)
              out=first.bin
              dir=nested/deeper
              checksum=sha-256=\(sha)
              header=X-Mark: one
              gid=2089b05ecca3d829
              continue=true

            \(server.url("/bytes/20").absoluteString)\tout=second.bin
            \tgid=3089b05ecca3d829
            \theader=X-Mark: two
            \(server.url("/bytes/5").absoluteString)

            """
    }

    @Test(arguments: ["file", "pipe"]) func anAria2FileIsReadAsAria2ReadsIt(_ form: String) async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        try Data(Self.aria2List(setup.server).utf8).write(to: setup.list)
        let run = try await runDemo(
            ["--input", form == "file" ? setup.list.path : "-", "--output", setup.output.path, "--no-accurate"],
            input: form == "file" ? nil : setup.list, in: setup.directory, withErrors: true)
        #expect(run.status == 0, "\(run.output)")
        let files = try FileManager.default.subpathsOfDirectory(atPath: setup.output.path).sorted()
        #expect(files == ["5", "nested", "nested/deeper", "nested/deeper/first.bin", "second.bin"], "\(files)")
        #expect(try Data(contentsOf: setup.output.appendingPathComponent("nested/deeper/first.bin")) == Self.body(300))
        // Each entry's own header, to its own request only.
        let marks = Dictionary(
            uniqueKeysWithValues: zip(setup.server.statistics.log, setup.server.statistics.headers.map { $0["x-mark"] })
        )
        #expect(marks["GET /bytes/300"] == "one" && marks["GET /bytes/20"] == "two")
        #expect(marks["GET /bytes/5"] == .some(nil))
        // Options the Demo does not know: each named once.
        let notes = run.output.split(separator: "\n").filter { $0.hasPrefix("Demo: note: --input line") }
        #expect(
            notes == [
                "Demo: note: --input line 7: option 'gid' is not one the Demo knows: ignored (every line's)",
                "Demo: note: --input line 8: option 'continue' is not one the Demo knows: ignored (every line's)",
            ], "\(run.output)")
    }

    /// A wrong `checksum=` fails its file (the option is applied, not read past).
    @Test func anAria2ChecksumIsChecked() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let wrong = Checksum(hashing: Self.body(301), .sha256).hex
        try Data("\(setup.server.url("/bytes/300").absoluteString)\n checksum=SHA-256=\(wrong)\n".utf8).write(
            to: setup.list)
        let run = try await runDemo(
            ["--input", setup.list.path, "--output", setup.output.path, "--no-accurate", "--retries", "0"],
            in: setup.directory)
        #expect(run.status == 1, "\(run.output)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: setup.output.path).isEmpty)
    }

    /// A malformed file is refused whole, before its first request: exit 2, the line named, nothing sent or made.
    @Test(arguments: [
        (" out=a.bin\nhttp://H/bytes/1\n", "line 1: an option line (starting with a space or a TAB) before any URL"),
        ("http://H/bytes/1\nhttp://H/bytes/2\n dir=../up\n", "line 3: dir='../up' is not a folder"),
        ("http://H/bytes/1\n checksum=md5=0123\n", "line 2: checksum type 'md5' is not one the Demo checks"),
        ("http://H/bytes/1\n out=a\n out=b\n", "line 3: out= given twice"),
        ("http://H/bytes/1\n header=no colon\n", "line 2: header=: --header needs 'Name: value'"),
        ("http://H/bytes/1\n dir=/elsewhere\n", "line 1: dir='/elsewhere' is outside the --output folder"),
        ("http://H/bytes/1\nhttp://H/bytes/2\n justaword\n", "line 3: 'justaword' is not an option"),
        ("http://H/bytes/1\nhttp://H/bytes/2\nftp://H/bytes/3\n", "line 3: 'ftp://"),
        ("http://H/bytes/1\n out=a.bin\nhttp://H/bytes/2\n out=a.bin\n dir=x/../y\n", "line 5: dir='x/../y'"),
    ])
    func aMalformedFileIsRefusedBeforeItsFirstRequest(_ text: String, _ message: String) async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let host = "127.0.0.1:\(setup.server.port)"
        try Data(text.replacingOccurrences(of: "H", with: host).utf8).write(to: setup.list)
        let output = setup.directory.appendingPathComponent("made")
        let run = try await runDemo(
            ["--input", setup.list.path, "--output", output.path], in: setup.directory, withErrors: true)
        #expect(run.status == 2, "\(run.output)")
        #expect(run.output.contains(message), "\(run.output)")
        #expect(setup.server.statistics.requests == 0)
        #expect(!FileManager.default.fileExists(atPath: output.path))
    }

    /// aria2's `-i S --save-session S`: the list is continued where it is. After a run with one failing entry it
    /// holds that entry, its option lines with it, every other line a comment of the same length (line numbers kept).
    @Test func aListMayBeItsOwnSession() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let base = setup.server.baseURL.absoluteString
        let text = "\(base)/bytes/10\n out=a.bin\n\(base)/status/404\n out=missing.bin\n gid=1\n\(base)/bytes/30\n"
        try Data(text.utf8).write(to: setup.list)
        let arguments = [
            "--input", setup.list.path, "--save-session", setup.list.path, "--output", setup.output.path,
            "--keep-going", "--retries", "0", "--no-accurate",
        ]
        let run = try await runDemo(arguments, in: setup.directory)
        #expect(run.status == 1, "\(run.output)")
        let session = try String(contentsOf: setup.list, encoding: .utf8)
        let lines = session.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 7)
        #expect(lines[0].hasPrefix("#") && lines[1].hasPrefix("#") && lines[5].hasPrefix("#"), "\(session)")
        #expect(lines[2] == "\(base)/status/404" && lines[3] == " out=missing.bin" && lines[4] == " gid=1")
        #expect(session.utf8.count == text.utf8.count)
        // Run again from it: only the failing entry is asked.
        setup.server.resetStatistics()
        let again = try await runDemo(arguments, in: setup.directory)
        #expect(again.status == 1, "\(again.output)")
        #expect(setup.server.statistics.log == ["GET /status/404"])
    }

    /// An absolute `dir=` (as aria2 saves one) inside `--output` places the file there.
    @Test func anAbsoluteDirInsideTheOutputFolderIsPlacedThere() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let inside = setup.output.appendingPathComponent("kept/here").path
        try Data("\(setup.server.url("/bytes/7").absoluteString)\n dir=\(inside)\n".utf8).write(to: setup.list)
        let run = try await runDemo(
            ["--input", setup.list.path, "--output", setup.output.path, "--no-accurate"], in: setup.directory)
        #expect(run.status == 0, "\(run.output)")
        #expect(FileManager.default.fileExists(atPath: inside + "/7"))
    }
}
