import DemoKit
import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The Demo's options for real networks: `--header`, `--user-agent`, `--proxy` (over real proxies, both
/// transports) and `--report`.
@Suite(.admitted, .timeLimit(.minutes(10))) struct DemoNetworkOptionsTests {
    @Test func headersReachTheServerAndStayBehindWhenARedirectLeavesTheOrigin() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let other = try LoopbackServer()
        defer { other.stop() }
        let away = other.url("/bytes/10").absoluteString
        let here = setup.server.url("/bytes/20")
        let leaving = setup.server.url("/redirect/1?to=\(away)")
        for transport in ["curl", "urlsession"] {
            setup.server.resetStatistics()
            other.resetStatistics()
            let run = try await runDemo(
                [
                    "--transport", transport, "--verbose", "-H", "X-Api-Key: T0KEN-SECRET",
                    "--header", "Accept:  text/plain ", "-A", "nq-demo/9", here.absoluteString, leaving.absoluteString,
                ], in: setup.directory)
            #expect(run.status == 0, "\(run.output)")
            // A HEAD (accurate progress) and a GET for each URL, all with the fields.
            let direct = setup.server.statistics.headers
            #expect(direct.count == 4, "\(setup.server.statistics.log)")
            #expect(direct.allSatisfy { $0["x-api-key"] == "T0KEN-SECRET" && $0["user-agent"] == "nq-demo/9" })
            #expect(direct.allSatisfy { $0["accept"] == "text/plain" })
            // The redirect's target is another origin: the token stayed behind, the user agent went on.
            #expect(other.statistics.headers.count == 2, "\(other.statistics.log)")
            #expect(other.statistics.headers.allSatisfy { $0["x-api-key"] == nil && $0["user-agent"] == "nq-demo/9" })
            // Names only, never a value, even with --verbose.
            #expect(run.output.contains("sending X-Api-Key, Accept, User-Agent"), "\(run.output)")
            #expect(!run.output.contains("T0KEN"))
        }
    }

    @Test(.enabled(if: RealProxy.runs(.tinyproxy), "needs tinyproxy (apt-get install tinyproxy)"))
    func theProxyOptionAndTheEnvironmentsProxyGoThroughARealProxyOverBothTransports() async throws {
        let setup = try DemoSetup(paths: ["/bytes/100?i=1", "/bytes/200?i=2"])
        defer { setup.tearDown() }
        let alice = Proxy.Credentials(user: "alice", password: "Pr0xy-SECRET")
        try await RealProxy.with(.tinyproxy, credentials: alice) { proxy in
            let option = "http://alice:Pr0xy-SECRET@127.0.0.1:\(proxy.port)"
            let unset = ["http_proxy=", "https_proxy=", "all_proxy=", "ALL_PROXY=", "no_proxy=", "NO_PROXY="]
            for (transport, arguments, environment) in [
                ("curl", ["--proxy", option], unset), ("urlsession", ["--proxy", option], unset),
                ("urlsession", [], ["http_proxy=\(option)", "no_proxy=", "NO_PROXY="]),
            ] {
                setup.server.resetStatistics()
                let before = proxy.log.components(separatedBy: "GET http://127.0.0.1:\(setup.server.port)/").count
                let run = try await runDemo(
                    ["--transport", transport, "--input", setup.list.path, "--no-accurate", "--verbose"] + arguments,
                    in: setup.directory, environment: environment)
                #expect(run.status == 0, "\(transport) \(arguments): \(run.output)")
                #expect(run.output.contains("Summary: 2/2 succeeded, 0 failed"))
                let after = proxy.log.components(separatedBy: "GET http://127.0.0.1:\(setup.server.port)/").count
                #expect(after - before == 2, "\(proxy.log)")
                #expect(setup.server.statistics.requests == 2)
                #expect(!run.output.contains("SECRET"), "\(run.output)")
            }
            // A wrong password: each request fails with the proxy's refusal, and the password shows nowhere.
            let wrong = try await runDemo(
                [
                    "--input", setup.list.path, "--no-accurate", "--retries", "0", "--proxy",
                    "http://alice:Wr0ng-SECRET@127.0.0.1:\(proxy.port)",
                ], in: setup.directory)
            #expect(wrong.status == 1)
            #expect(wrong.output.contains("Summary: 0/2 succeeded, 2 failed"), "\(wrong.output)")
            #expect(!wrong.output.contains("SECRET"))
            // A tunnel the proxy refuses (no credentials) is the same code over both transports, by the report:
            // URLSession on Linux says -1 there, with libcurl's words.
            let tunnel = setup.directory.appendingPathComponent("tunnel.txt")
            try Data("https://127.0.0.1:1/secure\n".utf8).write(to: tunnel)
            let report = setup.directory.appendingPathComponent("tunnel.jsonl")
            for transport in ["curl", "urlsession"] {
                let refused = try await runDemo(
                    ["--transport", transport, "--input", tunnel.path, "--retries", "0", "--report", report.path],
                    in: setup.directory,
                    environment: ["https_proxy=http://127.0.0.1:\(proxy.port)", "no_proxy=", "NO_PROXY="])
                #expect(refused.status == 1, "\(refused.output)")
                let line = try String(contentsOf: report, encoding: .utf8)
                #expect(
                    line.contains("\"code\":\(URLError.Code.userAuthenticationRequired.rawValue)"),
                    "\(transport): \(line)")
                #expect(line.contains("authentication required"), "\(transport): \(line)")
            }
        }
    }

    @Test func theReportHasALinePerRequestAndItsFailuresRunAgain() async throws {
        let setup = try DemoSetup(
            paths: ["/bytes/300", "/status/404", "/bytes/100?token=T0KEN-SECRET"], extraLines: ["# a comment"])
        defer { setup.tearDown() }
        let report = setup.directory.appendingPathComponent("report.jsonl")
        let run = try await runDemo(
            ["--input", setup.list.path, "--output", setup.output.path, "--report", report.path, "--retries", "0"],
            in: setup.directory)
        #expect(run.status == 1, "\(run.output)")
        let lines = try String(contentsOf: report, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 3)
        let entries = try lines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:] }
        let byLine = Dictionary(uniqueKeysWithValues: entries.map { ($0["line"] as? Int ?? 0, $0) })
        #expect(byLine[1]?["outcome"] as? String == "finished")
        #expect(byLine[1]?["status"] as? Int == 200 && byLine[1]?["bytes"] as? Int == 300)
        #expect(byLine[1]?["file"] as? String == setup.output.appendingPathComponent("300").path)
        #expect(byLine[1]?["attempts"] as? Int == 1 && byLine[1]?["error"] == nil)
        #expect(byLine[2]?["outcome"] as? String == "failed" && byLine[2]?["kind"] as? String == "status")
        #expect(byLine[2]?["status"] as? Int == 404)
        // The query's value is masked, as in the log.
        #expect(byLine[3]?["url"] as? String == setup.server.url("/bytes/100?token=***").absoluteString)
        #expect(!lines.joined().contains("T0KEN"))

        // The failed lines, picked from the list by their numbers, run again.
        let failed = Set(entries.filter { $0["error"] != nil }.compactMap { $0["line"] as? Int })
        #expect(failed == [2])
        let listLines = try String(contentsOf: setup.list, encoding: .utf8).split(separator: "\n")
        let again = setup.directory.appendingPathComponent("again.txt")
        try Data(failed.sorted().map { listLines[$0 - 1] + "\n" }.joined().utf8).write(to: again)
        setup.server.resetStatistics()
        _ = try await runDemo(["--input", again.path, "--retries", "0"], in: setup.directory)
        #expect(setup.server.statistics.log.filter { $0.hasPrefix("GET") } == ["GET /status/404"])
    }

    @Test func aKilledRunKeepsTheLinesOfTheRequestsThatEnded() async throws {
        // Two quick requests and one that trickles for a minute: the Demo is killed while the last one runs.
        let setup = try DemoSetup(paths: ["/bytes/10", "/bytes/20", "/trickle/1000/100/600"])
        defer { setup.tearDown() }
        let report = setup.directory.appendingPathComponent("report.jsonl")
        let output = setup.directory.appendingPathComponent("demo.log")
        let process = try SpawnedProcess(
            demo.path, ["--input", setup.list.path, "--no-accurate", "--report", report.path], in: setup.directory,
            output: output)
        var lines: [Substring] = []
        // Bounded: the two quick requests end within seconds (the bound only guards a broken run).
        for _ in 0..<3000 where lines.count < 2 {
            lines = (readText(of: report) ?? "").split(separator: "\n")
            if lines.count < 2 { try await Task.sleep(for: .milliseconds(10)) }
        }
        process.kill()
        #expect(await process.exitStatus() == 128 + 9)
        let kept = try String(contentsOf: report, encoding: .utf8)
        #expect(kept.hasSuffix("\n"))
        #expect(kept.split(separator: "\n").count == 2)
        #expect(kept.contains("\"line\":1") && kept.contains("\"line\":2") && !kept.contains("\"line\":3"))
    }

    @Test func badHeaderProxyAndReportValuesAreBadUsage() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nq-demo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for arguments in [
            ["--header", "NoColon T0KEN"], ["--header", "Bad Name: x"], ["--header", ": x"],
            ["-H", "Content-Length: 5"], ["--user-agent", "a\nb"], ["--proxy", "ftp://p:1"],
            ["--proxy", "http://u:T0KEN@p:port"], ["--report", ""], ["--report"], ["--proxy"],
        ] {
            let run = try await runDemo(["http://127.0.0.1:1/x"] + arguments, in: directory)
            #expect(run.status == 2, "\(arguments): \(run.output)")
            #expect(!run.output.contains("T0KEN"), "\(run.output)")
        }
        var headers = SentHeaders()
        try headers.add(line: "X-Token:  abc ")
        try headers.add(line: "x-token: def")
        try headers.set("User-Agent", "ua")
        #expect(headers.fields == [.init(name: "x-token", value: "def"), .init(name: "User-Agent", value: "ua")])
        #expect(headers.request(for: URL(string: "http://h/")!).value(forHTTPHeaderField: "X-Token") == "def")
    }

    /// Issue 50, item 4: a report path that would destroy what the run reads or writes is bad usage (exit 2) and
    /// touches nothing: the `--input` list (by its path, through a link, or as standard input), a path inside the
    /// `--output` folder (a download's part or its final name), and a FIFO with no reader, which hung the run.
    @Test func aReportThatWouldDestroyTheListOrADownloadIsRefused() async throws {
        let setup = try DemoSetup(paths: ["/bytes/300"])
        defer { setup.tearDown() }
        let listText = try String(contentsOf: setup.list, encoding: .utf8)
        let link = setup.directory.appendingPathComponent("link.txt")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: setup.list)
        let fifo = setup.directory.appendingPathComponent("fifo")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let inside = setup.output.appendingPathComponent("300")
        let cases: [(arguments: [String], input: URL?, why: String)] = [
            (["--input", setup.list.path, "--report", setup.list.path], nil, "the --input list"),
            (["--input", setup.list.path, "--report", link.path], nil, "the --input list"),
            (["--input", "-", "--report", setup.list.path], setup.list, "the --input list"),
            (["--report", inside.path + ".part"], nil, "inside the --output folder"),
            (["--report", inside.path], nil, "inside the --output folder"),
            (["--report", setup.output.path + "/../out/sub/r.jsonl"], nil, "inside the --output folder"),
            (["--report", fifo.path], nil, "not a regular file"),
            (["--report", setup.output.path], nil, "not a regular file"),
        ]
        for (arguments, input, why) in cases {
            let run = try await runDemo(
                ["--input", setup.list.path, "--output", setup.output.path] + arguments, input: input,
                in: setup.directory, withErrors: true)
            #expect(run.status == 2, "\(arguments): \(run.output)")
            #expect(run.output.contains(why), "\(arguments): \(run.output)")
        }
        #expect(try String(contentsOf: setup.list, encoding: .utf8) == listText)
        #expect(try FileManager.default.contentsOfDirectory(atPath: setup.output.path).isEmpty)
        #expect(FileManager.default.fileExists(atPath: fifo.path))
        #expect(setup.server.statistics.log.isEmpty, "\(setup.server.statistics.log)")

        // A report beside the folder, whose name only begins like it, is written.
        let beside = setup.directory.appendingPathComponent("out-report.jsonl")
        let run = try await runDemo(
            ["--input", setup.list.path, "--output", setup.output.path, "--report", beside.path], in: setup.directory)
        #expect(run.status == 0, "\(run.output)")
        #expect(try String(contentsOf: beside, encoding: .utf8).contains("\"outcome\":\"finished\""))
    }
}
