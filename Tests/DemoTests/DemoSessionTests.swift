import DemoKit
import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `--save-session`: the lines not finished yet, kept as the run goes, so that `--input` of it continues the rest.
@Suite(.admitted, .timeLimit(.minutes(10))) struct DemoSessionTests {
    /// The lines of `text` that are not comments or blank.
    static func entries(_ text: String) -> [String] {
        text.split(separator: "\n").map(String.init).filter {
            !$0.trimmingCharacters(in: .whitespaces).isEmpty && !$0.hasPrefix("#")
        }
    }

    @Test func theSessionHoldsExactlyTheUnfinishedLinesWithTheirFieldsAndContinuesThem() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let base = "http://127.0.0.1:\(setup.server.port)"
        let hex = "sha256:" + String(repeating: "0", count: 64)  // a wrong checksum: that line fails
        let list = [
            "# my downloads", "\(base)/bytes/10\tout=ten.bin", "", "\(base)/status/404", "\(base)/bytes/20",
            "\(base)/bytes/30\t\(hex)\tout=thirty.bin",
        ]
        try Data((list.joined(separator: "\n") + "\n").utf8).write(to: setup.list)
        for transport in ["curl", "urlsession"] {
            let output = setup.directory.appendingPathComponent("out-\(transport)")
            let session = setup.directory.appendingPathComponent("session-\(transport).txt")
            let run = try await runDemo(
                [
                    "--transport", transport, "--input", setup.list.path, "--output", output.path, "--save-session",
                    session.path, "--retries", "0",
                ],
                in: setup.directory)
            #expect(run.status == 1, "\(run.output)")
            let text = try String(contentsOf: session, encoding: .utf8)
            // The failed lines, every field as written, in their places; the finished ones blanked into comments.
            #expect(
                Self.entries(text) == ["\(base)/status/404", "\(base)/bytes/30\t\(hex)\tout=thirty.bin"], "\(text)")
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            #expect(lines.count == list.count + 1 && lines[0] == "# my downloads" && lines[2].isEmpty)
            #expect(lines[1].hasPrefix("#") && lines[1].utf8.count == list[1].utf8.count)
            // The session continues exactly them.
            setup.server.resetStatistics()
            let again = try await runDemo(
                ["--transport", transport, "--input", session.path, "--output", output.path, "--retries", "0"],
                in: setup.directory)
            #expect(again.status == 1)
            #expect(
                setup.server.statistics.log.sorted() == [
                    "GET /bytes/30", "GET /status/404", "HEAD /bytes/30", "HEAD /status/404",
                ])
        }
    }

    @Test func afterKill9TheSessionHoldsEveryUnfinishedLine() async throws {
        // Forty files of which each takes about a tenth of a second, two at a time: killed after ten are saved.
        let setup = try DemoSetup(paths: (0..<40).map { "/bytes/2000?rate=20000&n=\($0)" })
        defer { setup.tearDown() }
        let session = setup.directory.appendingPathComponent("session.txt")
        let process = try SpawnedProcess(
            demo.path,
            [
                "--input", setup.list.path, "--output", setup.output.path, "--no-accurate", "--concurrency", "2",
                "--save-session", session.path,
            ], in: setup.directory, output: setup.directory.appendingPathComponent("run.log"))
        let output = setup.output
        let killed = kill(process) {
            let saved = (try? FileManager.default.contentsOfDirectory(atPath: output.path))?.filter {
                !$0.hasSuffix(".part")
            }
            return (saved?.count ?? 0) >= 10 ? 1 : nil
        }
        #expect(await process.exitStatus() == 128 + 9)
        #expect(killed.current != nil)
        let saved = Set(
            try FileManager.default.contentsOfDirectory(atPath: output.path).filter { !$0.hasSuffix(".part") })
        let left = Self.entries(try String(contentsOf: session, encoding: .utf8))
        let all = try String(contentsOf: setup.list, encoding: .utf8).split(separator: "\n").map(String.init)
        // Every line whose file is not saved is in the session; a line whose file was saved in the instant before the
        // kill may be there too (its end not heard yet: at most the two in flight), and is kept unchanged next time.
        let unfinished = all.enumerated().filter {
            !saved.contains("2000" + ($0.offset == 0 ? "" : "-\($0.offset + 1)"))
        }
        #expect(Set(unfinished.map(\.element)).isSubset(of: Set(left)), "\(left.count) left, \(saved.count) saved")
        #expect(left.count - unfinished.count <= 2)
        #expect(left.count < 40)
    }

    @Test func aListFromAPipeHasItsLinesAddedAsTheyAreRead() async throws {
        let setup = try DemoSetup(paths: ["/bytes/10", "/status/404", "/bytes/20"])
        defer { setup.tearDown() }
        let session = setup.directory.appendingPathComponent("session.txt")
        let run = try await runDemo(
            ["--input", "-", "--save-session", session.path, "--retries", "0"], input: setup.list, in: setup.directory)
        #expect(run.status == 1)
        let text = try String(contentsOf: session, encoding: .utf8)
        #expect(Self.entries(text) == [setup.server.url("/status/404").absoluteString], "\(text)")
        // --save-session needs a list.
        let alone = try await runDemo(
            ["--save-session", "s.txt", "http://127.0.0.1:1/x"], in: setup.directory, withErrors: true)
        #expect(alone.status == 2 && alone.output.contains("--save-session works with --input FILE"), "\(alone.output)")
        // (It may be the list itself, as aria2's `-i S --save-session S`: see DemoAria2InputTests.)
    }
}
