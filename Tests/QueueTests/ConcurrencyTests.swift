import Foundation
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.admitted, .timeLimit(.minutes(10))) struct ConcurrencyTests {
    @Test
    func hammeringFromEightThreadsLosesNothingAndDrainsOncePerDrain() async throws {
        // Given a queue whose transfers are instant, slow, or failing, at random
        let transport = InMemoryTransport { urlRequest in
            switch tag(of: urlRequest) % 10 {
            case 0: [.respond(status: 500, headers: ["Content-Length": "0"])]
            case 1...3: [.respond(status: 200), .wait(0.001), .body(Data(count: 100))]
            default: [.respond(status: 200, headers: ["Content-Length": "10"]), .body(Data(count: 10))]
            }
        }
        let queue = NetworkQueue.oneAttempt(transport: transport)
        let recorder = queue.recording()
        let added = Box<[Int]>([])
        // When 8 threads each perform 1,000 random operations
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            var rng = SystemRandomNumberGenerator()
            var mine: [NetworkRequest] = []
            for step in 0..<1_000 {
                switch Int.random(in: 0..<100, using: &rng) {
                case 0..<50:
                    let tag = thread * 10_000 + step
                    let request = request(tag)
                    if (try? queue.add(request)) != nil {
                        mine.append(request)
                        added.with { $0.append(tag) }
                    }
                case 50..<62: if let request = mine.randomElement(using: &rng) { queue.cancel(request) }
                case 62..<64: queue.cancelAll()
                case 64..<80: queue.go()
                case 80..<86: queue.suspend()
                case 86..<94: queue.maxConcurrentRequestCount = Int.random(in: -1...6, using: &rng)
                case 94..<97: queue.cancelsAllOnFailure.toggle()
                default: _ = queue.progress.fractionCompleted
                }
            }
        }
        await queue.run()
        // Then every request got exactly one terminal event
        let log = recorder.events
        var terminals: [Int: Int] = [:]
        for entry in log {
            switch entry {
            case .finish(let tag), .fail(let tag, _): terminals[tag, default: 0] += 1
            default: break
            }
        }
        let tags = added.current
        #expect(tags.count > 3_000)
        #expect(tags.allSatisfy { terminals[$0] == 1 })
        #expect(terminals.count == tags.count)
        // And queueDidFinish came only when nothing was open, never twice for one drain, and last.
        var open = Set<Int>()
        var terminalSinceLastDrain = false
        var drains = 0
        for entry in log {
            switch entry {
            case .start(let tag): open.insert(tag)
            case .finish(let tag), .fail(let tag, _):
                open.remove(tag)
                terminalSinceLastDrain = true
            case .queueFinished:
                #expect(open.isEmpty)
                #expect(terminalSinceLastDrain)
                terminalSinceLastDrain = false
                drains += 1
            default: break
            }
        }
        #expect(log.last == .queueFinished)
        #expect(drains >= 1)
        #expect(queue.requestCount == 0)
        // Every transfer ends: completed, or cancelled by the queue (the time limit catches a leak).
        await transport.waitUntilIdle()
        #expect(transport.statistics.inFlight == 0)
    }

    @Test func cancellingTheTaskAwaitingRunCancelsTheQueue() async throws {
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok(gate: TransferGate()))
        let recorder = queue.recording()
        let requests = (1...3).map { request($0) }
        for request in requests { try queue.add(request) }
        let task = Task { await queue.run() }
        task.cancel()
        let progress = await task.value
        #expect(progress.cancelledRequestCount == 3)
        #expect(requests.map(\.state) == [.cancelled, .cancelled, .cancelled])
        #expect(recorder.queueFinishedCount == 1)
    }

    @Test func addingToARunningQueueStartsAtOnce() async throws {
        let transport = InMemoryTransport.ok(gate: TransferGate())
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.go()
        try queue.add(request(1))
        await transport.waitUntilStarted(1)
        #expect(transport.statistics.started == 1)
        queue.cancelAll()
        await queue.run()
    }
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct QueueProgressTests {
    @Test func bytesComeFromContentLengthAndTheFractionByBytes() async throws {
        let sizes = [1_000, 2_000, 3_000]
        let gate = TransferGate()
        let transport = InMemoryTransport { urlRequest in
            let size = sizes[tag(of: urlRequest) - 1]
            return [
                .respond(status: 200, headers: ["Content-Length": "\(size)"]), .body(Data(count: size / 2)),
                .hold(gate), .body(Data(count: size - size / 2)),
            ]
        }
        let queue = NetworkQueue.oneAttempt(transport: transport)
        let recorder = queue.recording()
        for tag in 1...3 { try queue.add(request(tag)) }
        let halfway = queue.events()
        queue.go()
        // Wait for all three heads (deterministic: the gate holds the second halves).
        var heads = 0
        for await event in halfway {
            if case .didReceiveHeaders = event { heads += 1 }
            if heads == 3 { break }
        }
        #expect(queue.progress.bytesExpectedToReceive == 6_000)
        gate.open()
        let progress = await queue.run()
        #expect(progress.bytesReceived == 6_000)
        #expect(progress.bytesExpectedToReceive == 6_000)
        #expect(progress.fractionCompleted == 1.0)
        let fractions = recorder.progresses.current.map(\.fractionCompleted)
        #expect(fractions.allSatisfy { !$0.isNaN && $0 >= 0 && $0 <= 1 })
        #expect(zip(fractions, fractions.dropFirst()).allSatisfy { $0 <= $1 })
        #expect(fractions.last == 1.0)
        // The final queue update comes just before queueDidFinish.
        #expect(Array(recorder.entries.suffix(2)) == [.progress(1.0), .queueFinished])
    }

    @Test func unknownSizesCountByRequest() async throws {
        let gate = TransferGate()
        let transport = InMemoryTransport { urlRequest in
            tag(of: urlRequest) == 1
                ? [.respond(status: 200), .body(Data(count: 5))] : [.hold(gate), .respond(status: 200)]
        }
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.maxConcurrentRequestCount = 0
        for tag in 1...4 { try queue.add(request(tag)) }
        let stream = queue.events()
        queue.go()
        for await event in stream { if case .didFinish = event { break } }
        #expect(queue.progress.fractionCompleted == 0.25)
        #expect(queue.progress.bytesExpectedToReceive == nil)
        gate.open()
        #expect(await queue.run().fractionCompleted == 1)
    }
}
