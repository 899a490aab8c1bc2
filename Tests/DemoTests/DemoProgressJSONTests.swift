import DemoKit
import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `--progress-json`: JSON lines a program can read while the run goes.
@Suite(.admitted, .timeLimit(.minutes(10))) struct DemoProgressJSONTests {
    /// The JSON objects of `text`, one a line; nil when a line is not one.
    static func objects(_ text: String) -> [[String: Any]]? {
        var objects: [[String: Any]] = []
        for line in text.split(separator: "\n") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                return nil
            }
            objects.append(object)
        }
        return objects
    }

    @Test func everyLineParsesTheFractionNeverFallsAndEveryRequestHasItsEvents() async throws {
        for transport in ["curl", "urlsession"] {
            // A slow body (1.5 s) so that progress lines come while it runs, a retried one, a failing one (a server
            // each: the retried one fails once per server).
            let setup = try DemoSetup(
                paths: [
                    "/bytes/300000?rate=200000", "/flaky/1000?key=json&failures=1&retryAfter=0", "/status/404",
                    "/bytes/10",
                ])
            defer { setup.tearDown() }
            let file = setup.directory.appendingPathComponent("progress.jsonl")
            let run = try await runDemo(
                [
                    "--transport", transport, "--input", setup.list.path, "--output", setup.output.path,
                    "--replace", "--progress-json", file.path,
                ], in: setup.directory)
            #expect(run.status == 1, "\(run.output)")
            let text = try String(contentsOf: file, encoding: .utf8)
            guard let lines = Self.objects(text) else {
                Issue.record("a line is not JSON: \(text)")
                continue
            }
            #expect(lines.allSatisfy { $0["type"] is String && $0["time"] is Double })
            let times = lines.compactMap { $0["time"] as? Double }
            #expect(times == times.sorted())
            let progress = lines.filter { $0["type"] as? String == "progress" }
            let fractions = progress.compactMap { $0["fraction"] as? Double }
            #expect(fractions == fractions.sorted() && fractions.count == progress.count)
            // At least once a second: no gap of more than a second between progress lines while it ran.
            let progressTimes = progress.compactMap { $0["time"] as? Double }
            #expect(zip(progressTimes.dropFirst(), progressTimes).allSatisfy { $0 - $1 <= 1.0 }, "\(progressTimes)")
            let last = progress.last ?? [:]
            #expect(last["final"] as? Bool == true)
            #expect(last["finished"] as? Int == 3 && last["failed"] as? Int == 1 && last["total"] as? Int == 4)
            #expect(last["total_final"] as? Bool == true)
            // Each line of the list: a start and an end; the flaky one a retry; headers with their status.
            for line in 1...4 {
                let events = lines.filter { $0["line"] as? Int == line }.compactMap { $0["type"] as? String }
                #expect(events.first == "start" && events.last == "end", "line \(line): \(events)")
            }
            let ends = lines.filter { $0["type"] as? String == "end" }
            #expect(
                ends.compactMap { $0["outcome"] as? String }.sorted() == ["failed", "finished", "finished", "finished"])
            let failure = ends.first { $0["outcome"] as? String == "failed" }
            #expect(failure?["status"] as? Int == 404 && failure?["kind"] as? String == "status")
            #expect(
                lines.contains {
                    $0["type"] as? String == "retry" && $0["line"] as? Int == 2 && $0["attempt"] as? Int == 2
                })
            #expect(
                lines.contains {
                    $0["type"] as? String == "headers" && $0["status"] as? Int == 200 && $0["length"] as? Int == 10
                })
            #expect(ends.allSatisfy { ($0["url"] as? String)?.hasPrefix("http://127.0.0.1:") == true })
            #expect(!text.contains("key=json"))  // query values redacted
        }
    }

    @Test func onStandardOutputOnlyJSONLinesAreThereAndTheRestGoesToStandardError() async throws {
        let setup = try DemoSetup(paths: ["/bytes/10", "/bytes/20"])
        defer { setup.tearDown() }
        let run = try await runDemo(["--input", setup.list.path, "--progress-json", "-"], in: setup.directory)
        #expect(run.status == 0)
        guard let lines = Self.objects(run.output) else {
            Issue.record("standard output holds more than JSON lines: \(run.output)")
            return
        }
        #expect(lines.filter { $0["type"] as? String == "end" }.count == 2)
        #expect(lines.last?["final"] as? Bool == true && lines.last?["fraction"] as? Double == 1)
    }

    @Test func aPathTheRunNeedsIsRefusedAndNothingIsTouched() async throws {
        let setup = try DemoSetup(paths: ["/bytes/10"])
        defer { setup.tearDown() }
        let before = try Data(contentsOf: setup.list)
        for (arguments, message) in [
            (["--progress-json", setup.list.path], "it is the --input list"),
            (
                [
                    "--progress-json", setup.output.appendingPathComponent("p.jsonl").path, "--output",
                    setup.output.path,
                ],
                "inside the --output folder"
            ),
            (["--progress-json", "r.jsonl", "--report", "r.jsonl"], "give each its own file"),
        ] {
            let run = try await runDemo(
                ["--input", setup.list.path] + arguments, in: setup.directory, withErrors: true)
            #expect(run.status == 2, "\(arguments): \(run.output)")
            #expect(run.output.contains(message), "\(arguments): \(run.output)")
        }
        #expect(try Data(contentsOf: setup.list) == before)
        #expect(setup.server.statistics.requests == 0)
    }

    /// Issue 71: 69 small files then a big one, more than 64, so that HEADs are sampled (four per server) and the big
    /// one's size is unknown until its own head: the progress says its total is an estimate (`estimated`, with
    /// `bytes_estimate`) until every size is known. `--head-all` sends a HEAD before every GET, the big one's too.
    @Test func theTotalSaysItIsAnEstimateWhileItIsAndHeadAllAsksEverySize() async throws {
        let paths = (1...69).map { "/bytes/10?n=\($0)" } + ["/bytes/400000"]
        for headAll in [false, true] {
            let setup = try DemoSetup(paths: paths)
            defer { setup.tearDown() }
            let file = setup.directory.appendingPathComponent("progress.jsonl")
            let run = try await runDemo(
                ["--input", setup.list.path, "--output", setup.output.path, "--progress-json", file.path]
                    + (headAll ? ["--head-all"] : []), in: setup.directory)
            #expect(run.status == 0, "\(run.output)")
            guard let lines = Self.objects(try String(contentsOf: file, encoding: .utf8)) else {
                Issue.record("a line is not JSON")
                continue
            }
            let progress = lines.filter { $0["type"] as? String == "progress" }
            // The first line comes before any head: every size unknown, the total an estimate.
            #expect(progress.first?["estimated"] as? Bool == true, "\(progress.first ?? [:])")
            // A total not known is an estimate (a known one may still carry a fraction an earlier estimate made).
            #expect(progress.allSatisfy { $0["bytes_expected"] != nil || $0["estimated"] as? Bool == true })
            let last = progress.last ?? [:]
            #expect(last["estimated"] as? Bool == false && last["bytes_estimate"] == nil, "\(last)")
            #expect(last["bytes_expected"] as? Int == 69 * 10 + 400_000)
            let heads = setup.server.statistics.log.filter { $0.hasPrefix("HEAD ") }
            if headAll {
                #expect(heads.count == 70, "\(heads.count) HEADs")
                #expect(run.output.contains("a HEAD before every GET"), "\(run.output)")
            } else {
                #expect(heads.count == 4, "\(heads.count) HEADs: sampled")
            }
        }
        let refused = try await runDemo(
            ["--head-all", "--no-accurate", "http://127.0.0.1:1/x"], in: FileManager.default.temporaryDirectory,
            withErrors: true)
        #expect(refused.status == 2 && refused.output.contains("give one of them"), "\(refused.output)")
    }
}
