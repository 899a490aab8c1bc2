import Foundation
import LoopbackServer
import TestSupport
import Testing

@Suite(.admitted, .timeLimit(.minutes(10))) struct DemoProcessTests {
    /// Files only ever appear whole: a run killed while a small file's body is under way leaves the files it
    /// finished and, on Linux, nothing of the other (its part has no name until bytes reach it ahead of the end),
    /// and the next run fetches it from its first byte.
    @Test func aRunKilledMidFileLeavesOnlyWholeFiles() async throws {
        // The second file's body stops at its half (sent in pieces of 10,000 bytes) for a minute: the run is killed
        // while it waits.
        let setup = try DemoSetup(paths: ["/bytes/4000", "/bytes/20000?rate=200000&stallAt=50&stall=60000"])
        defer { setup.tearDown() }
        let arguments = ["--no-accurate", "--input", setup.list.path, "--output", setup.output.path]
        let process = try SpawnedProcess(
            demo.path, arguments, in: setup.directory, output: setup.directory.appendingPathComponent("first.log"))
        let finished = setup.output.appendingPathComponent("4000")
        let server = setup.server
        let killed = kill(process) {
            FileManager.default.fileExists(atPath: finished.path) && server.statistics.bytesWritten >= 14_000 ? 1 : nil
        }
        let status = await process.exitStatus()
        #expect(killed.current != nil)
        #expect(status == 128 + 9)
        let names = try FileManager.default.contentsOfDirectory(atPath: setup.output.path).sorted()
        #if os(Linux)
            #expect(names == ["4000"])
        #else
            #expect(names == ["20000.part", "4000"])
        #endif
        #expect(try Data(contentsOf: finished) == Data((0..<4000).map { UInt8($0 % 256) }))
        // The next run (the same file, not held) starts it from its first byte: there was nothing to continue.
        try Data((server.url("/bytes/20000").absoluteString + "\n").utf8).write(to: setup.list)
        server.resetStatistics()
        let run = try await runDemo(arguments, in: setup.directory)
        #expect(run.status == 0, "\(run.output)")
        #expect(
            try Data(contentsOf: setup.output.appendingPathComponent("20000"))
                == Data((0..<20000).map { UInt8($0 % 256) }))
        #expect(server.statistics.headers.map { $0["range"] } == [nil])
    }

    @Test func noClobberRerunSendsNothingAndAPipedListRuns() async throws {
        #expect(FileManager.default.fileExists(atPath: demo.path), "the Demo is built beside the tests")
        // Sixty entries, twenty sharing one name.
        let setup = try DemoSetup(paths: (0..<60).map { $0 < 20 ? "/bytes/300?i=\($0)" : "/bytes/200/f\($0).bin" })
        defer { setup.tearDown() }
        let (server, directory, output, list) = (setup.server, setup.directory, setup.output, setup.list)

        // From a pipe (standard input): every file saved.
        let first = try await runDemo(
            ["--input", "-", "--output", output.path, "--concurrency", "8"], input: list, in: directory)
        #expect(first.status == 0, "\(first.output)")
        #expect(first.output.contains("Summary: 60/60 succeeded, 0 failed"))
        let files = try FileManager.default.contentsOfDirectory(atPath: output.path)
        #expect(files.count == 60)
        #expect(files.contains("300") && files.contains("300-20"))

        // Again with --no-clobber: every file is there, so not one request reaches the server.
        server.resetStatistics()
        let again = try await runDemo(["--input", list.path, "--output", output.path, "--no-clobber"], in: directory)
        #expect(again.status == 0, "\(again.output)")
        #expect(server.statistics.requests == 0)
        #expect(again.output.contains("Summary: 0/0 succeeded, 0 failed, 60 kept (already there)"))

        // One file gone: only it is fetched.
        try FileManager.default.removeItem(at: output.appendingPathComponent("f33.bin"))
        server.resetStatistics()
        let missing = try await runDemo(
            ["--input", list.path, "--output", output.path, "--no-clobber", "--no-accurate"], in: directory)
        #expect(missing.status == 0, "\(missing.output)")
        #expect(server.statistics.log == ["GET /bytes/200/f33.bin"])
    }

    /// libcurl's proxies come from the environment, read once when the transport is created: with
    /// `http_proxy` naming the loopback server every request goes to it in absolute form, for the named host;
    /// with that host in `no_proxy` the request goes straight to a host that does not resolve.
    @Test func theEnvironmentsProxyCarriesTheRequestsAndNoProxyBypassesIt() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let (server, directory) = (setup.server, setup.directory)
        let list = directory.appendingPathComponent("proxied.txt")
        try Data((0..<3).map { "http://proxied.invalid/bytes/100?i=\($0)\n" }.joined().utf8).write(to: list)
        let proxy = "http_proxy=http://127.0.0.1:\(server.port)"
        let through = try await runDemo(
            ["--input", list.path, "--no-accurate"], in: directory,
            environment: [proxy, "no_proxy=", "NO_PROXY=", "all_proxy=", "ALL_PROXY="])
        #expect(through.status == 0, "\(through.output)")
        #expect(through.output.contains("Summary: 3/3 succeeded, 0 failed"))
        #expect(server.statistics.log.sorted() == (0..<3).map { "GET /bytes/100?i=\($0)" })
        #expect(server.statistics.headers.map { $0["host"] } == Array(repeating: "proxied.invalid", count: 3))

        server.resetStatistics()
        let bypassed = try await runDemo(
            ["--input", list.path, "--no-accurate"], in: directory,
            environment: [proxy, "no_proxy=proxied.invalid", "NO_PROXY=", "all_proxy=", "ALL_PROXY="])
        #expect(bypassed.output.contains("Summary: 0/3 succeeded, 3 failed"), "\(bypassed.output)")
        #expect(server.statistics.requests == 0)
    }

    @Test func shardsOfARunShareOneFolder() async throws {
        let setup = try DemoSetup(paths: (0..<40).map { "/bytes/100?i=\($0)" })
        defer { setup.tearDown() }
        let (server, directory, output, list) = (setup.server, setup.directory, setup.output, setup.list)
        var requests = 0
        for index in 0..<3 {
            server.resetStatistics()
            let run = try await runDemo(
                ["--input", list.path, "--output", output.path, "--shard", "\(index)/3"], in: directory)
            #expect(run.status == 0, "\(run.output)")
            requests += server.statistics.log.filter { $0.hasPrefix("GET ") }.count
        }
        // Every entry fetched once by exactly one shard, under the name the whole list gives it.
        #expect(requests == 40)
        let names = Set(try FileManager.default.contentsOfDirectory(atPath: output.path))
        #expect(names == Set(["100"] + (2...40).map { "100-\($0)" }))
    }

    @Test func badShardAndNoClobberUsageIsRefused() async throws {
        let directory = FileManager.default.temporaryDirectory
        for arguments in [["--shard", "4/4", "--input", "x"], ["--shard", "0/2"], ["--no-clobber"]] {
            #expect(try await runDemo(arguments, in: directory).status == 2, "\(arguments)")
        }
    }
}
