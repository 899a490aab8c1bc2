import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The soak: many drains of a mixed, hostile workload with cancels, cancelAll, suspend/go and limit
/// changes thrown in from other tasks, on a queue with the default delegate queue and on one with a
/// concurrent delegate queue. Loopback only, bounded in count (and, through request timeouts, in time).
///
/// Short by default (for CI). The long run: `NQ_SOAK_REQUESTS=10000 NQ_SOAK_DRAINS=50 swift test -c release
/// --filter SoakTests`; `NQ_SOAK_SEED=<n>` replays a run.
@Suite(.admitted, .timeLimit(.minutes(10))) struct SoakTests {
    /// What one soak request asks for, and what it may end as.
    enum Kind: CaseIterable {
        case bytes, file, chunked, gzip, redirect, drop, reset, serverError, timeout, corruptGzip

        /// Kinds whose failures the default retry policy retries (connection lost, 503, timeout).
        var isRetried: Bool {
            switch self {
            case .drop, .reset, .serverError, .timeout: true
            case .bytes, .file, .chunked, .gzip, .redirect, .corruptGzip: false
            }
        }

        /// Kinds that can never succeed.
        var mustFail: Bool {
            switch self {
            case .drop, .reset, .serverError, .timeout, .corruptGzip: true
            case .bytes, .file, .chunked, .gzip, .redirect: false
            }
        }
    }

    struct Planned {
        let request: NetworkRequest
        let kind: Kind
        let size: Int
        let file: URL?
    }

    @Test(arguments: TransportKind.allCases) func soak(_ transport: TransportKind) async throws {
        let totalRequests = TestEnvironment.integer("NQ_SOAK_REQUESTS", default: 1_000)
        let drains = TestEnvironment.integer("NQ_SOAK_DRAINS", default: 10)
        let seed = UInt64(TestEnvironment.integer("NQ_SOAK_SEED", default: Int.random(in: 1...Int.max)))
        let server = try LoopbackServer()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let started = Date()
        var random = SeededGenerator(seed: seed)
        let queues = [
            NetworkQueue(transport: transport.make()),
            NetworkQueue(
                transport: transport.make(),
                delegateQueue: DispatchQueue(label: "soak.concurrent", attributes: .concurrent)),
        ]
        let recorders = queues.map { queue in
            let recorder = queue.recording()
            // The default policy (3 attempts) with a short backoff: failing kinds retry under the chaos.
            queue.retryPolicy = RetryPolicy(backoff: .init(initialDelay: 0.005, maximumDelay: 0.02))
            return recorder
        }
        var report = SoakReport()
        var nextTag = 0
        for drain in 0..<drains {
            let index = drain % 2
            let queue = queues[index]
            let recorder = recorders[index]
            recorder.log.with { $0 = [] }
            // Added to a running queue, early requests could drain before the last is added: one drain
            // per batch needs the queue suspended while adding.
            queue.suspend()
            queue.maxConcurrentRequestCount = Int.random(in: 1...16, using: &random)
            queue.cancelsAllOnFailure = Int.random(in: 0..<4, using: &random) == 0
            let count = totalRequests / drains
            var planned: [Planned] = []
            for _ in 0..<count {
                nextTag += 1
                planned.append(plan(tag: nextTag, server: server, directory: directory, using: &random))
            }
            for item in planned { try queue.add(item.request) }
            let chaosSeed = random.next()
            let targets = planned.map(\.request)
            let chaos = Task.detached {
                var random = SeededGenerator(seed: chaosSeed)
                for _ in 0..<Int.random(in: 0...40, using: &random) {
                    switch Int.random(in: 0..<100, using: &random) {
                    case 0..<60: queue.cancel(targets.randomElement(using: &random)!)
                    case 60..<62: queue.cancelAll()
                    case 62..<75: queue.suspend()
                    case 75..<90: queue.go()
                    default: queue.maxConcurrentRequestCount = Int.random(in: 0...16, using: &random)
                    }
                    if Bool.random(using: &random) { await Task.yield() }
                }
                queue.go()
            }
            queue.go()
            await chaos.value
            await queue.run()
            report.check(drain: drain, planned: planned, recorder: recorder)
        }
        let seconds = Date().timeIntervalSince(started)
        print(
            "soak: seed \(seed), \(report.requests) requests over \(drains) drains, \(report.finished) finished, "
                + "\(report.failed) failed, \(report.cancelled) cancelled, \(report.violations.count) violations, "
                + "\(String(format: "%.1f", seconds)) s, peak RSS \(peakResidentMiB()) MiB")
        #expect(report.violations.isEmpty, "seed \(seed): \(report.violations.prefix(20))")
        #expect(report.requests == drains * (totalRequests / drains))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter {
            $0.hasSuffix(".part")
        }
        #expect(leftovers.isEmpty, "partial files left: \(leftovers.prefix(5))")
    }

    func plan(tag: Int, server: LoopbackServer, directory: URL, using random: inout SeededGenerator) -> Planned {
        let kind = Kind.allCases.randomElement(using: &random)!
        let size = Int.random(in: 2...300_000, using: &random)
        var path: String
        var timeout: TimeInterval = 20
        var headers: [String: String] = [:]
        switch kind {
        case .bytes, .file: path = "/bytes/\(size)"
        case .chunked: path = "/chunked/\(size)"
        case .gzip:
            path = "/gzip/\(size)"
            if Bool.random(using: &random) { headers["Accept-Encoding"] = "gzip" }
        case .redirect: path = "/redirect/2?to=%2Fbytes%2F\(size)"
        case .drop: path = "/drop/\(size)"
        case .reset: path = "/reset/\(size)"
        case .serverError: path = "/status/503"
        case .timeout:
            // Never answered: only the time limit ends it (a late answer could beat a starved timer).
            path = "/bytes/\(size)?silent=1"
            timeout = 0.05
        case .corruptGzip:
            path = "/gzip/\(size)?fault=corrupt"
            headers["Accept-Encoding"] = "gzip"
        }
        let separator = path.contains("?") ? "&" : "?"
        var urlRequest = URLRequest(url: server.url(path + "\(separator)tag=\(tag)"))
        urlRequest.timeoutInterval = timeout
        for (name, value) in headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        let file = kind == .file ? directory.appendingPathComponent("soak-\(tag).bin") : nil
        let request = NetworkRequest(urlRequest, destination: file.map { .file($0) } ?? .memory, tag: tag)
        return Planned(request: request, kind: kind, size: size, file: file)
    }
}

/// The soak's counters and every invariant broken, in words.
struct SoakReport {
    var requests = 0
    var finished = 0
    var failed = 0
    var cancelled = 0
    var violations: [String] = []

    mutating func check(drain: Int, planned: [SoakTests.Planned], recorder: Recorder) {
        let entries = recorder.entries
        if recorder.queueFinishedCount != 1 {
            violations.append("drain \(drain): queueDidFinish \(recorder.queueFinishedCount) times")
        }
        if entries.last != .queueFinished { violations.append("drain \(drain): an event after queueDidFinish") }
        var last = 0.0
        for case .progress(let fraction) in entries {
            if fraction.isNaN || fraction > 1 || fraction < last {
                violations.append("drain \(drain): progress \(last) → \(fraction)")
            }
            last = fraction.isNaN ? last : fraction
        }
        var perRequest: [Int: [Entry]] = [:]
        for entry in entries where !entry.isProgress && entry != .queueFinished {
            perRequest[entry.tag, default: []].append(entry)
        }
        for item in planned {
            requests += 1
            let tag = item.request.tag
            let events = perRequest[tag] ?? []
            let shape = events.map { entry -> String in
                switch entry {
                case .start: "start"
                case .headers: "headers"
                case .retry: "retry"
                case .finish: "finish"
                case .fail: "fail"
                default: "other"
                }
            }.joined(separator: " ")
            // didStart once, then per attempt an optional head; willRetry between attempts; one end.
            if shape.wholeMatch(of: /fail|start( headers)?( retry( headers)?)*( finish| fail)/) == nil {
                violations.append("request \(tag) (\(item.kind)): events \(shape)")
            }
            let retries = events.filter { if case .retry = $0 { true } else { false } }.count
            let attempts = item.request.attemptCount
            if retries > 2 || attempts > 3 || !(retries...retries + 1).contains(attempts) {
                violations.append("request \(tag) (\(item.kind)): \(attempts) attempts, \(retries) retries")
            }
            if item.request.state == .failed, item.kind.isRetried, attempts != 3 {
                violations.append("request \(tag) (\(item.kind)): failed after \(attempts) attempts, not 3")
            }
            switch item.request.state {
            case .finished:
                finished += 1
                if item.kind.mustFail { violations.append("request \(tag) (\(item.kind)) finished") }
                let expected = pattern(0..<(item.kind == .serverError ? 0 : item.size))
                if let file = item.file {
                    if (try? Data(contentsOf: file)) != expected {
                        violations.append("request \(tag): file not byte-exact")
                    }
                } else if (try? item.request.result?.get().body) != expected {
                    violations.append("request \(tag) (\(item.kind)): body not byte-exact")
                }
            case .failed, .cancelled:
                if item.request.state == .failed { failed += 1 } else { cancelled += 1 }
                if let file = item.file, FileManager.default.fileExists(atPath: file.path) {
                    violations.append("request \(tag): failed but its file exists")
                }
            case .pending, .preflighting, .running, .waitingToRetry, .paused:
                violations.append("request \(tag): still \(item.request.state) after the drain")
            }
        }
    }
}

/// The process's peak resident set (VmHWM), in MiB; 0 where /proc is missing.
func peakResidentMiB() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
        let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
    else { return 0 }
    return kilobytes / 1024
}
