import DemoKit
import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The Demo's `--split N` and the mirrors of an `--input` line (TAB-separated, as aria2's input files), over both
/// transports: the ranges the servers saw and the files that result.
@Suite(.admitted, .timeLimit(.minutes(10))) struct DemoSplitTests {
    static let size = 3_000_000

    @Test func splitFetchesAFileOverSeveralConnectionsAndMirrorsStandInForADeadSource() async throws {
        let mirror = try LoopbackServer()
        defer { mirror.stop() }
        let path = "/bytes/\(Self.size)?rate=1000000"
        // Line 1: split with a mirror; line 2: its own URL 404s, the mirror serves it; line 3: a mirror serving
        // other bytes, dropped.
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let lines = [
            setup.server.url(path + "&key=a").absoluteString + "\t" + mirror.url(path + "&key=a").absoluteString,
            setup.server.url("/status/404?key=b").absoluteString + "\t" + mirror.url(path + "&key=b").absoluteString,
            setup.server.url(path + "&key=c").absoluteString + "\t"
                + mirror.url(path + "&seed=9&etag=x").absoluteString,
        ]
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: setup.list)
        for transport in ["curl", "urlsession"] {
            try? FileManager.default.removeItem(at: setup.output)
            setup.server.resetStatistics()
            mirror.resetStatistics()
            let run = try await runDemo(
                [
                    "--transport", transport, "--no-accurate", "--split", "4", "--input", setup.list.path, "--output",
                    setup.output.path, "--verbose",
                ], in: setup.directory)
            #expect(run.status == 0, "\(run.output)")
            let names = try FileManager.default.contentsOfDirectory(atPath: setup.output.path).sorted()
            #expect(names.count == 3, "\(names)")
            var expected = Data((0..<256).map { UInt8($0) })
            while expected.count < Self.size { expected.append(expected) }
            expected = expected.prefix(Self.size)
            for name in names {
                let body = try Data(contentsOf: setup.output.appendingPathComponent(name))
                #expect(body == expected, "\(name)")
            }
            let ranged = (setup.server.statistics.headers + mirror.statistics.headers).filter { $0["range"] != nil }
            // Ranges go out on the connections lent beside the three files' own (a first connection streams on into
            // the ranges no other connection took: issue 50).
            #expect(ranged.count >= 1, "\(setup.server.statistics.log) \(mirror.statistics.log)")
            #expect(run.output.contains("splitDecided"), "\(run.output)")
            #expect(run.output.contains("locationDropped"), "\(run.output)")
        }
    }

    @Test func aRunKilledAtHalfIsContinuedRangeByRange() async throws {
        // 8 MB at 0.5 MB/s a connection over 4 (about 4 s: time to see half recorded on a loaded machine), killed
        // once the record beside the part claims half, then run again.
        let size = 8_000_000
        let setup = try DemoSetup(paths: ["/bytes/\(size)?rate=500000"])
        defer { setup.tearDown() }
        let part = setup.output.appendingPathComponent("\(size).part")
        let record = URL(fileURLWithPath: part.path + ".segments")
        let arguments = ["--no-accurate", "--split", "4", "--input", setup.list.path, "--output", setup.output.path]
        let process = try SpawnedProcess(
            demo.path, arguments, in: setup.directory, output: setup.directory.appendingPathComponent("first.log"))
        // Half the file takes about two seconds.
        let watched = kill(process) {
            let text = readText(of: record) ?? ""
            let claimed = text.split(separator: "\n").filter { $0.hasPrefix("done ") }.reduce(0) { sum, line in
                let bounds = line.dropFirst(5).split(separator: "-").compactMap { Int($0) }
                return sum + (bounds.count == 2 ? bounds[1] - bounds[0] + 1 : 0)
            }
            return claimed >= size / 2 ? claimed : nil
        }
        let status = await process.exitStatus()
        let claimed = watched.current ?? 0
        let firstLog = (try? String(contentsOf: setup.directory.appendingPathComponent("first.log"), encoding: .utf8))
        #expect(status == 128 + 9, "\(firstLog ?? "")")
        #expect(claimed >= size / 2)
        let firstBytes = setup.server.statistics.bytesWritten
        setup.server.resetStatistics()
        let run = try await runDemo(arguments, in: setup.directory)
        #expect(run.status == 0, "\(run.output)")
        var expected = Data((0..<256).map { UInt8($0) })
        while expected.count < size { expected.append(expected) }
        #expect(try Data(contentsOf: setup.output.appendingPathComponent("\(size)")) == expected.prefix(size))
        #expect(!FileManager.default.fileExists(atPath: part.path))
        #expect(!FileManager.default.fileExists(atPath: record.path))
        // Each range continued: every request of the rerun asks for a range, and the bytes of both runs are the
        // file's once, plus what the killed run had received past its last record (at most 8 MB) and in flight.
        let asked = setup.server.statistics.headers.map { $0["range"] }
        #expect(asked.allSatisfy { $0 != nil }, "\(asked)")
        #expect(setup.server.statistics.bytesWritten <= size - claimed + 1_000_000, "\(asked)")
        #expect(firstBytes + setup.server.statistics.bytesWritten < size + 9_000_000)
    }

    @Test func badSplitValuesAndMirrorsAreBadUsage() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        for arguments in [["--split", "0"], ["--split", "17"], ["-s", "x"], ["--split"], ["--split", "2"]] {
            let run = try await runDemo(["http://127.0.0.1:1/x"] + arguments, in: setup.directory)
            #expect(run.status == 2, "\(arguments): \(run.output)")
        }
        let hex = String(repeating: "ab", count: 32)
        let entry = try #require(try InputList.parse("http://h/a\thttp://m/a\thttp://n/a\tsha256:\(hex)", number: 1))
        #expect(entry.mirrors.map(\.absoluteString) == ["http://m/a", "http://n/a"])
        #expect(entry.checksum != nil)
        for line in ["http://h/a\tftp://m/a", "http://h/a\tsha256:\(hex)\thttp://m/a", "http://h/a\tnot-a-url"] {
            #expect(throws: InputList.Problem.self, "\(line)") { try InputList.parse(Substring(line), number: 2) }
        }
        let many = (["http://h/a"] + (0...InputList.maximumMirrors).map { "http://m\($0)/a" }).joined(separator: "\t")
        #expect(throws: InputList.Problem.self) { try InputList.parse(Substring(many), number: 3) }
    }
}
