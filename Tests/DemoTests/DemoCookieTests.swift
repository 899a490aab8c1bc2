import DemoKit
import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `--load-cookies` and `--save-cookies`: a batch that starts from a cookie file and writes its cookies back.
@Suite(.admitted, .timeLimit(.minutes(10))) struct DemoCookieTests {
    @Test func cookiesAreLoadedSentWhereTheyBelongAndSavedBack() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let base = "http://127.0.0.1:\(setup.server.port)"
        try Data("\(base)/bytes/10\n\(base)/cookie?value=fresh\n".utf8).write(to: setup.list)
        for transport in ["curl", "urlsession"] {
            let jar = setup.directory.appendingPathComponent("jar-\(transport).txt")
            try Data(
                """
                # Netscape HTTP Cookie File
                127.0.0.1\tFALSE\t/\tFALSE\t0\ttoken\tT0KEN-SECRET
                other.test\tFALSE\t/\tFALSE\t0\telsewhere\tnever
                127.0.0.1\tFALSE\t/\tFALSE\t1000\told\texpired

                """.utf8
            ).write(to: jar)
            setup.server.resetStatistics()
            let run = try await runDemo(
                [
                    "--transport", transport, "--input", setup.list.path, "--no-accurate", "--concurrency", "1",
                    "--load-cookies", jar.path, "--save-cookies", jar.path,
                ], in: setup.directory, withErrors: true)
            #expect(run.status == 0, "\(run.output)")
            #expect(run.output.contains("1 line skipped"), "\(run.output)")
            // Both requests carried the loaded cookie, and nothing else of the file.
            let cookies = setup.server.statistics.headers.map { $0["cookie"] }
            #expect(cookies == ["token=T0KEN-SECRET", "token=T0KEN-SECRET"], "\(transport): \(cookies)")
            #expect(!run.output.contains("T0KEN"))
            // Saved back whole: the loaded ones and the one the server set, readable by the owner only.
            let saved = try String(contentsOf: jar, encoding: .utf8)
            let lines = saved.split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
            #expect(lines.contains("127.0.0.1\tFALSE\t/\tFALSE\t0\ttoken\tT0KEN-SECRET"), "\(saved)")
            #expect(lines.contains("other.test\tFALSE\t/\tFALSE\t0\telsewhere\tnever"))
            #expect(lines.contains { $0.hasSuffix("\tsession\tfresh") }, "\(saved)")
            #expect(!saved.contains("expired"))
            let mode = try FileManager.default.attributesOfItem(atPath: jar.path)[.posixPermissions] as? Int
            #expect(mode == 0o600)
        }
    }

    @Test func aMissingCookieFileAndAJarThatWouldReplaceTheListAreBadUsage() async throws {
        let setup = try DemoSetup(paths: ["/bytes/1"])
        defer { setup.tearDown() }
        let list = try Data(contentsOf: setup.list)
        for (arguments, message) in [
            (["--load-cookies", "missing.txt"], "cannot read --load-cookies missing.txt"),
            (["--save-cookies", setup.list.path], "it is the --input list"),
            (
                ["--save-cookies", setup.output.appendingPathComponent("jar").path, "--output", setup.output.path],
                "inside the --output folder"
            ),
        ] {
            let run = try await runDemo(
                ["--input", setup.list.path] + arguments, in: setup.directory, withErrors: true)
            #expect(run.status == 2 && run.output.contains(message), "\(arguments): \(run.output)")
        }
        #expect(try Data(contentsOf: setup.list) == list)
        #expect(setup.server.statistics.requests == 0)
    }

    /// A cookie file with lines that are not cookies loads the others and names the first it skipped, by its number.
    @Test func aCookieFilesBadLinesAreCountedAndTheFirstNamed() async throws {
        let setup = try DemoSetup(paths: ["/bytes/1"])
        defer { setup.tearDown() }
        let jar = setup.directory.appendingPathComponent("jar.txt")
        try "# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tgood\t1\nnot a cookie\nnor\tthis\n"
            .write(to: jar, atomically: true, encoding: .utf8)
        let run = try await runDemo(
            ["--input", setup.list.path, "--load-cookies", jar.path], in: setup.directory, withErrors: true)
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("2 lines skipped (the first: line 3) (expired or not a cookie)"), "\(run.output)")
        #expect(setup.server.statistics.headers.first?["cookie"] == "good=1")
    }
}
