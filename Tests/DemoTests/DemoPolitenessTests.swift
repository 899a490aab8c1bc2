import DemoKit
import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The Demo's polite options: `--rate`, `--wait`, `--random-wait` (their values as curl and wget read them, and the
/// pace the server sees) and `--dry-run` (a line per URL, nothing written, the exit status).
@Suite(.admitted, .timeLimit(.minutes(10))) struct DemoPolitenessTests {
    @Test func rateAndWaitValuesReadAsCurlAndWgetWriteThem() {
        #expect(Politeness.interval(ofRate: "2/s") == 0.5)
        #expect(Politeness.interval(ofRate: "30/m") == 2)
        #expect(Politeness.interval(ofRate: "1/h") == 3_600)
        #expect(Politeness.interval(ofRate: "3600") == 1)  // curl's default unit: an hour
        #expect(Politeness.interval(ofRate: "24/d") == 3_600)
        #expect(Politeness.interval(ofRate: "0.5/s") == 2)
        for bad in ["", "/s", "0/s", "-1/s", "2/x", "2/s/s", "abc", "1e3/s", "2/", "10000000/s"] {
            #expect(Politeness.interval(ofRate: bad) == nil, "\(bad)")
        }
        #expect(Politeness.seconds(ofWait: "1.5") == 1.5)
        #expect(Politeness.seconds(ofWait: "2m") == 120)
        #expect(Politeness.seconds(ofWait: "1h") == 3_600)
        #expect(Politeness.seconds(ofWait: "0") == 0)
        for bad in ["", "-1", "1x", "m", "400d", "nan", "1e2"] {
            #expect(Politeness.seconds(ofWait: bad) == nil, "\(bad)")
        }
        // The longer of the two holds.
        #expect(
            Politeness.pacing(rateInterval: 0.5, wait: 2, randomized: true) == HostPacing(interval: 2, randomized: true)
        )
        #expect(Politeness.pacing(rateInterval: nil, wait: nil, randomized: false) == .unpaced)
    }

    @Test func badValuesAreBadUsage() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let directory = setup.directory
        for (arguments, message) in [
            (["--rate", "fast"], "--rate needs N/U"), (["--wait", "-2"], "--wait needs seconds"),
            (["--random-wait"], "--random-wait varies the wait"),
            (["--wait", "0", "--random-wait"], "--random-wait varies the wait"),
            (["http://127.0.0.1:1/x", "--rate"], "option '--rate' needs a value"),
        ] {
            let url = arguments.last == "--rate" ? [] : ["http://127.0.0.1:1/y"]
            let run = try await runDemo(arguments + url, in: directory, withErrors: true)
            #expect(run.status == 2, "\(arguments)")
            #expect(run.output.contains(message), "\(arguments): \(run.output)")
        }
    }

    @Test func aRateHoldsWithTransfersInParallel() async throws {
        let setup = try DemoSetup(paths: (0..<5).map { "/bytes/100?n=\($0)" })
        defer { setup.tearDown() }
        for transport in ["curl", "urlsession"] {
            setup.server.resetStatistics()
            let begin = Date().timeIntervalSince1970
            let run = try await runDemo(
                ["--transport", transport, "--input", setup.list.path, "--concurrency", "8", "--rate", "4/s"],
                in: setup.directory)
            #expect(run.status == 0, "\(run.output)")
            #expect(run.output.contains("a start per server every 0.25 s"))
            // One HEAD (accurate progress: a paced server's first answer says its files are small, and the others go
            // without one) and five GETs: six starts, each 0.25 s after the last, so the k-th arrival came no sooner
            // than k intervals after the launch (a transport may delay a request, never send one early).
            let arrivals = setup.server.statistics.arrivals.sorted()
            #expect(arrivals.count == 6)
            #expect(setup.server.statistics.log.filter { $0.hasPrefix("HEAD") }.count == 1)
            for (k, arrival) in arrivals.enumerated() {
                #expect(arrival >= begin + Double(k) * 0.25 - 0.01, "\(transport) \(k)")
            }
        }
    }

    @Test func aDryRunPrintsALinePerURLAndWritesNothingButTheReport() async throws {
        let setup = try DemoSetup(
            paths: [
                "/bytes/1234", "/nohead/5000", "/nohead/777?ignoreRange=1", "/redirect/1?to=/bytes/99", "/chunked/50",
                "/status/404",
            ])
        defer { setup.tearDown() }
        let output = setup.directory.appendingPathComponent("never")
        let report = setup.directory.appendingPathComponent("report.jsonl")
        for transport in ["curl", "urlsession"] {
            setup.server.resetStatistics()
            let run = try await runDemo(
                [
                    "--transport", transport, "--input", setup.list.path, "--output", output.path, "--dry-run",
                    "--report", report.path, "--retries", "0",
                ], in: setup.directory)
            // One line would fail: exit 1.
            #expect(run.status == 1, "\(run.output)")
            let port = setup.server.port
            let lines = run.output.split(separator: "\n").map(String.init)
            #expect(lines.contains { $0.hasPrefix("200") && $0.contains("1.2 KB  1234  ") })
            // HEAD refused: a GET of one byte, its size from Content-Range.
            #expect(lines.contains { $0.hasPrefix("206") && $0.contains("5.0 KB  5000  ") }, "\(run.output)")
            // HEAD refused and the range ignored: the 200's length, and the body is not taken.
            #expect(lines.contains { $0.hasPrefix("200") && $0.contains("777 B  777  ") }, "\(run.output)")
            // The final URL after the redirect; the name is the line's own.
            #expect(lines.contains { $0.hasPrefix("200") && $0.contains("99 B  1  http://127.0.0.1:\(port)/bytes/99") })
            #expect(lines.contains { $0.hasPrefix("200") && $0.contains("-  50  ") })
            #expect(lines.contains { $0.hasPrefix("404") && $0.contains("would fail: HTTP status 404") })
            #expect(
                lines.last
                    == "Dry run: 6 checked, 5 would succeed, 1 would fail; 7.1 KB to download (+ 1 of unknown size)",
                "\(transport): \(run.output)")
            // Nothing written but the report, whose lines are the six.
            #expect(!FileManager.default.fileExists(atPath: output.path))
            #expect(try String(contentsOf: report, encoding: .utf8).split(separator: "\n").count == 6)
            // No body was taken past one byte: HEADs (the redirect's target too), and a GET of one byte for each
            // server that refused HEAD.
            let log = setup.server.statistics.log
            #expect(log.filter { $0.hasPrefix("HEAD") }.count == 7, "\(log)")
            #expect(
                log.filter { $0.hasPrefix("GET") }.sorted() == ["GET /nohead/5000", "GET /nohead/777?ignoreRange=1"])
            #expect(setup.server.statistics.bytesWritten < 4_000, "\(setup.server.statistics.bytesWritten)")
        }
    }

    @Test func aDryRunThatFindsEverythingExitsZero() async throws {
        let setup = try DemoSetup(paths: ["/bytes/10", "/bytes/20"])
        defer { setup.tearDown() }
        let run = try await runDemo(["--input", setup.list.path, "--dry-run"], in: setup.directory)
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("Dry run: 2 checked, 2 would succeed, 0 would fail; 30 B to download"))
        #expect(setup.server.statistics.log.allSatisfy { $0.hasPrefix("HEAD") })
    }
}
