import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A rerun of the Demo asks each file once (issue 64, DESIGN semantics 23): one conditional GET a file, no HEAD; 304
/// keeps it, 200 replaces it; a `--content-disposition` rerun finds its file by the URL it records.
@Suite(.admitted, .timeLimit(.minutes(10))) struct DemoRevalidationTests {
    #if os(Linux)
        @Test(
            .enabled(
                if: StaticWebServer.path(of: .nginx) != nil
                    || TestEnvironment.integer("NQ_REQUIRE_REAL_SERVERS", default: 0) != 0,
                "needs nginx (apt-get install nginx)"))
        func aRerunOfTwoHundredFilesFromNginxSendsTwoHundredConditionalGetsAndFetchesOnlyTheChanged() async throws {
            let directory = try DemoSetup(paths: [])
            defer { directory.tearDown() }
            let root = directory.directory.appendingPathComponent("www")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            _ = chmod(directory.directory.path, 0o755)
            _ = chmod(root.path, 0o755)
            let count = 200
            for index in 0..<count {
                try Data(repeating: UInt8(index % 251), count: 1 + index * 53 % 12_000)
                    .write(to: root.appendingPathComponent("f\(index).bin"))
            }
            try await StaticWebServer.with(.nginx, root: root, rate: 0, logsAccess: true) { nginx in
                try Data((0..<count).map { nginx.url("/f\($0).bin").absoluteString + "\n" }.joined().utf8)
                    .write(to: directory.list)
                let arguments = [
                    "--input", directory.list.path, "--output", directory.output.path, "--concurrency", "8",
                ]
                let first = try await runDemo(arguments, in: directory.directory)
                #expect(first.status == 0, "\(first.output)")
                // Each file records its URL.
                let one = directory.output.appendingPathComponent("f7.bin").path
                #expect(FileOrigin.recorded(atPath: one) == .url(nginx.url("/f7.bin").absoluteString))
                // Each run's lines, once each of its requests has one (more fail the exact counts below).
                let logged = await nginx.accessLog(after: 0, awaiting: count).count
                let second = try await runDemo(arguments, in: directory.directory)
                #expect(second.status == 0, "\(second.output)")
                #expect(
                    second.output.contains("Summary: 200/200 succeeded (200 unchanged), 0 failed"), "\(second.output)")
                let secondLog = await nginx.accessLog(after: logged, awaiting: count)
                // 200 requests: no HEAD, each a GET with the file's entity tag (nginx logs a quote as \x22), each a 304.
                #expect(secondLog.count == count, "\(secondLog.prefix(3))")
                #expect(secondLog.filter { $0.hasPrefix("GET ") && $0.contains(" 304 \"\\x22") }.count == count)
                let changed = [0, 77, 150]
                for index in changed {
                    try StaticWebServer.change(
                        root.appendingPathComponent("f\(index).bin"), to: Data(repeating: 0xAB, count: 3_000 + index))
                }
                let beforeThird = logged + secondLog.count
                let third = try await runDemo(arguments, in: directory.directory)
                #expect(
                    third.output.contains("Summary: 200/200 succeeded (197 unchanged), 0 failed"), "\(third.output)")
                let thirdLog = await nginx.accessLog(after: beforeThird, awaiting: count)
                #expect(thirdLog.count == count)
                #expect(
                    thirdLog.filter { $0.contains(" 200 ") }.map { String($0.split(separator: " ")[1]) }.sorted()
                        == changed.map { "/f\($0).bin" }.sorted())
                for index in changed {
                    #expect(
                        try Data(contentsOf: directory.output.appendingPathComponent("f\(index).bin"))
                            == Data(repeating: 0xAB, count: 3_000 + index))
                }
                #expect(try FileManager.default.contentsOfDirectory(atPath: directory.output.path).count == count)
                // --replace fetches every file again, unconditionally.
                let beforeReplace = beforeThird + thirdLog.count
                let replaced = try await runDemo(arguments + ["--replace", "--no-accurate"], in: directory.directory)
                #expect(replaced.status == 0, "\(replaced.output)")
                let replaceLog = await nginx.accessLog(after: beforeReplace, awaiting: count)
                #expect(replaceLog.count == count && replaceLog.allSatisfy { $0.contains(" 200 \"-\" \"-\"") })
            }
        }
    #endif

    @Test func shardsRerunTheirOwnSharesOneConditionalRequestAFile() async throws {
        let setup = try DemoSetup(paths: (1...30).map { "/bytes/\(100 + $0)" })
        defer { setup.tearDown() }
        let shards = ["0/3", "1/3", "2/3"]
        for shard in shards {
            let run = try await runDemo(
                ["--input", setup.list.path, "--output", setup.output.path, "--shard", shard], in: setup.directory)
            #expect(run.status == 0, "\(run.output)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: setup.output.path).count == 30)
        setup.server.resetStatistics()
        var unchanged = 0
        for shard in shards {
            let run = try await runDemo(
                ["--input", setup.list.path, "--output", setup.output.path, "--shard", shard], in: setup.directory)
            #expect(run.status == 0, "\(run.output)")
            let summary = run.output.split(separator: "\n").first { $0.hasPrefix("Summary: ") } ?? ""
            unchanged += Int(summary.split(separator: "(").dropFirst().first?.split(separator: " ").first ?? "") ?? 0
        }
        // Each file asked once, by its own shard, with its tag: no HEAD, no second request.
        let log = setup.server.statistics.log
        #expect(log.count == 30 && Set(log).count == 30 && log.allSatisfy { $0.hasPrefix("GET ") }, "\(log)")
        #expect(setup.server.statistics.headers.allSatisfy { $0["if-none-match"]?.hasPrefix("\"bytes-") == true })
        #expect(unchanged == 30)
    }

    @Test func aContentDispositionRerunAsksOnceAndMakesNoSecondCopy() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let path =
            "/bytes/40?header="
            + #"Content-Disposition:attachment; filename="paper.pdf""#.addingPercentEncoding(
                withAllowedCharacters: .alphanumerics)!
        for transport in ["curl", "urlsession"] {
            let output = setup.directory.appendingPathComponent("out-\(transport)")
            try Data((setup.server.url(path).absoluteString + "\n").utf8).write(to: setup.list)
            let arguments = [
                "--transport", transport, "--input", setup.list.path, "--output", output.path, "--content-disposition",
            ]
            let first = try await runDemo(arguments, in: setup.directory)
            #expect(first.status == 0, "\(first.output)")
            setup.server.resetStatistics()
            let second = try await runDemo(arguments, in: setup.directory)
            #expect(second.status == 0, "\(second.output)")
            #expect(second.output.contains("(1 unchanged)"), "\(second.output)")
            // One conditional request, no HEAD, and no paper-2.pdf.
            #expect(setup.server.statistics.log.count == 1, "\(setup.server.statistics.log)")
            #expect(setup.server.statistics.headers.first?["if-none-match"] == "\"bytes-40\"")
            #expect(try FileManager.default.contentsOfDirectory(atPath: output.path) == ["paper.pdf"])
        }
    }
}
