import Foundation
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.admitted, .timeLimit(.minutes(10))) struct RollingPreflightTests {
    /// The preflight window at the default limit of 4: 8 per slot, at least 64.
    static let window = 64

    /// A transport answering HEAD and GET with `size` bytes (GET sends them), and the methods in start order.
    static func sized(_ size: Int) -> InMemoryTransport {
        let body = Data(repeating: 1, count: size)
        return InMemoryTransport { request in
            request.httpMethod == "HEAD"
                ? [.respond(status: 200, headers: ["Content-Length": "\(size)"])]
                : [.respond(status: 200, headers: ["Content-Length": "\(size)"]), .body(body)]
        }
    }

    /// `(method, tag)` of every transfer started, in start order.
    static func starts(_ transport: InMemoryTransport) -> [(method: String, tag: Int)] {
        transport.startedRequests.map { ($0.httpMethod ?? "GET", Int($0.url!.lastPathComponent)!) }
    }

    @Test func aBigBatchRollsItsHeadsAheadOfItsGets() async throws {
        let count = 1_000
        let transport = Self.sized(500)
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.showsAccurateProgress = true
        queue.preflightPolicy = .everyRequest
        let recorder = queue.recording()
        for tag in 1...count {
            try queue.add(NetworkRequest(url: URL(string: "http://rolling.test/\(tag)")!, tag: tag))
        }
        queue.go()
        let progress = await queue.run()
        let starts = Self.starts(transport)
        #expect(starts.count == 2 * count)
        // Every GET after its own HEAD, one HEAD each.
        var headAt: [Int: Int] = [:]
        for (index, start) in starts.enumerated() {
            if start.method == "HEAD" {
                #expect(headAt[start.tag] == nil)
                headAt[start.tag] = index
            } else {
                #expect(headAt[start.tag].map { $0 < index } == true)
            }
        }
        #expect(headAt.count == count)
        // The first window's HEADs all come before the first GET; later ones roll, never more than the window ahead.
        let firstGet = starts.firstIndex { $0.method == "GET" }!
        #expect(firstGet == Self.window)
        let lastHead = starts.lastIndex { $0.method == "HEAD" }!
        #expect(firstGet < lastHead)
        var ahead = 0
        var mostAhead = 0
        for start in starts {
            ahead += start.method == "HEAD" ? 1 : -1
            mostAhead = max(mostAhead, ahead)
        }
        #expect(mostAhead == Self.window)
        // The total was an estimate while HEADs were still to come, then exact; the fraction never went back.
        let updates = recorder.progresses.current
        #expect(updates.contains { $0.isEstimated && $0.estimatedBytesExpectedToReceive == Int64(500 * count) })
        for (earlier, later) in zip(updates, updates.dropFirst()) {
            #expect(later.fractionCompleted >= earlier.fractionCompleted)
        }
        #expect(progress.fractionCompleted == 1.0)
        #expect(progress.bytesExpectedToReceive == Int64(500 * count))
        #expect(!progress.isEstimated)
    }

    @Test func aBatchWithinTheWindowLearnsEverySizeBeforeTheFirstGet() async throws {
        let transport = Self.sized(100)
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.showsAccurateProgress = true
        for tag in 1...Self.window {
            try queue.add(NetworkRequest(url: URL(string: "http://rolling.test/\(tag)")!, tag: tag))
        }
        queue.go()
        await queue.run()
        let methods = Self.starts(transport).map(\.method)
        #expect(methods == Array(repeating: "HEAD", count: Self.window) + Array(repeating: "GET", count: Self.window))
    }

    @Test func requestsReadFromASourceAfterGoGetTheirHeadsToo() async throws {
        let transport = Self.sized(10)
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.showsAccurateProgress = true
        queue.preflightPolicy = .everyRequest
        queue.go()
        queue.add(contentsOf: (1...300).map { NetworkRequest(url: URL(string: "http://rolling.test/\($0)")!, tag: $0) })
        let progress = await queue.run()
        let starts = Self.starts(transport)
        #expect(starts.filter { $0.method == "HEAD" }.count == 300)
        #expect(starts.filter { $0.method == "GET" }.count == 300)
        #expect(progress.finishedRequestCount == 300)
        #expect(progress.bytesExpectedToReceive == 3_000)
    }

    /// A paced server is decided by its first HEAD's answer, and its other HEADs wait for it however slow it is: the
    /// pacing interval passing meanwhile starts no second one. (The queue's clock is driven by hand.)
    @Test func aPacedServersHeadsWaitForItsFirstAnswer() async throws {
        let clock = ManualClock()
        let gate = TransferGate()
        let heads = Box(0)
        let transport = InMemoryTransport { request in
            let answer: [InMemoryTransport.Step] = [.respond(status: 200, headers: ["Content-Length": "10"])]
            guard request.httpMethod == "HEAD" else { return answer + [.body(Data(count: 10))] }
            return heads.with { heads in
                heads += 1
                return heads == 1 ? [.hold(gate)] + answer : answer
            }
        }
        let queue = NetworkQueue.oneAttempt(transport: transport, clock: clock)
        queue.showsAccurateProgress = true
        queue.hostPacing = HostPacing(interval: 1)
        let recorder = queue.recording()
        queue.add(contentsOf: (1...5).map { NetworkRequest(url: URL(string: "http://paced.test/\($0)")!, tag: $0) })
        let running = Task { await queue.run() }
        await transport.waitUntilStarted(1)
        // Five intervals pass while the first answer is held: no HEAD may start on them.
        for _ in 0..<5 { clock.advance(by: 1) }
        gate.open()
        // The answer lets the first GET start (its interval passed long ago); the others are paced a second apart on the
        // hand-driven clock, each a HEAD fewer than without the policy.
        await transport.waitUntilStarted(2)
        for started in 3...6 {
            clock.advance(by: 1)
            await transport.waitUntilStarted(started)
        }
        let progress = await running.value
        #expect(heads.current == 1)
        #expect(transport.statistics.started == 6, "\(recorder.events)")
        #expect(progress.finishedRequestCount == 5 && progress.bytesExpectedToReceive == 50)
    }

    /// The default policy on a long batch of small files: each server's first 4 HEADs say the sizes are small, and
    /// the rest go without one (a list of 500 small files asks 504 times, not 1,000). The total is an estimate from
    /// the samples until the heads arrive, the fraction never goes back, and it ends exact. (Run apart from the heap
    /// measurement: its batch is held in memory while it runs.)
    @Test(arguments: [false, true]) func smallFilesAreSampledNotEachAsked(fromASource: Bool) async throws {
        try await HeavyTests.exclusively { try await sampled(fromASource: fromASource) }
    }

    private func sampled(fromASource: Bool) async throws {
        let count = 500
        let transport = InMemoryTransport { request in
            let size = request.url!.host == "small.test" ? 400 : 3_000
            return request.httpMethod == "HEAD"
                ? [.respond(status: 200, headers: ["Content-Length": "\(size)"])]
                : [.respond(status: 200, headers: ["Content-Length": "\(size)"]), .body(Data(count: size))]
        }
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.showsAccurateProgress = true
        queue.preflightPolicy = PreflightPolicy(samplesPerServer: 4, smallestSizeWorthAHead: 2_000)
        let recorder = queue.recording()
        let logs = Box<[NetworkQueueLogRecord]>([])
        queue.logHandler = { record in if record.event == .preflightsStopped { logs.with { $0.append(record) } } }
        // 500 small files, and 20 big ones of another server, which keep a HEAD each.
        let requests =
            (1...count).map { NetworkRequest(url: URL(string: "http://small.test/\($0)")!, tag: $0) }
            + (1...20).map { NetworkRequest(url: URL(string: "http://big.test/\($0)")!, tag: count + $0) }
        if fromASource {
            queue.add(contentsOf: requests)
        } else {
            for request in requests { try queue.add(request) }
        }
        let progress = await queue.run()
        let starts = transport.startedRequests.map { ($0.httpMethod ?? "GET", $0.url!.host!) }
        #expect(starts.filter { $0 == ("HEAD", "small.test") }.count == 4)
        #expect(starts.filter { $0 == ("HEAD", "big.test") }.count == 20)
        #expect(starts.filter { $0.0 == "GET" }.count == count + 20)
        #expect(logs.current.count == 1)
        let updates = recorder.progresses.current
        #expect(updates.contains { $0.isEstimated })
        for (earlier, later) in zip(updates, updates.dropFirst()) {
            #expect(later.fractionCompleted >= earlier.fractionCompleted)
        }
        #expect(progress.fractionCompleted == 1.0)
        #expect(progress.bytesExpectedToReceive == Int64(400 * count + 3_000 * 20))
        #expect(!progress.isEstimated)
    }
}
