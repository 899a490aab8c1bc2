import Foundation
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.admitted, .timeLimit(.minutes(10))) struct ReliabilityTests {
    @Test func anInterimHeadIsNeverTheFinalResponse() async throws {
        let transport = InMemoryTransport { _ in
            [.respond(status: 100), .respond(status: 200, headers: ["Content-Length": "3"]), .body(Data("abc".utf8))]
        }
        let queue = NetworkQueue.oneAttempt(transport: transport)
        let recorder = queue.recording()
        // Validation off: before the fix the 100 was a second didReceiveHeaders (and with it on, a failure).
        let request = request(1, acceptable: nil)
        try queue.add(request)
        await queue.run()
        #expect(recorder.events == [.start(1), .headers(1, 200), .finish(1), .queueFinished])
        #expect(try request.result?.get().body == Data("abc".utf8))
        #expect(request.response?.statusCode == 200)
    }

    @Test func aMemoryBodyIsCappedAt64MiBByDefaultAndItsTransferStops() async throws {
        // No Content-Length: only counting the bytes can stop it. The gate is never opened: the transfer
        // can only end by being cancelled.
        let gate = TransferGate()
        let chunk = Data(count: 32 << 20)
        let transport = InMemoryTransport { _ in
            [.respond(status: 200), .body(chunk), .body(chunk), .body(Data(count: 1)), .hold(gate), .body(chunk)]
        }
        let queue = NetworkQueue.oneAttempt(transport: transport)
        let request = NetworkRequest(URLRequest(url: url(1)))
        #expect(request.validation.maximumResponseSize == .automatic)
        try queue.add(request)
        await queue.run()
        #expect(request.failure == .responseTooLarge(limit: 64 << 20, url: url(1)))
        await transport.waitUntilIdle()
        #expect(transport.statistics.cancelled == 1)
    }

    @Test func theCapCanBeLiftedOrSet() async throws {
        let transport = InMemoryTransport { _ in [.respond(status: 200), .body(Data(count: 65 << 20))] }
        let queue = NetworkQueue.oneAttempt(transport: transport)
        let unlimited = NetworkRequest(URLRequest(url: url(1)), validation: .init(maximumResponseSize: .unlimited))
        let small = NetworkRequest(URLRequest(url: url(2)), validation: .init(maximumResponseSize: 10))
        queue.cancelsAllOnFailure = false
        try queue.add(unlimited)
        try queue.add(small)
        await queue.run()
        #expect(try unlimited.result?.get().body.count == 65 << 20)
        #expect(small.failure == .responseTooLarge(limit: 10, url: url(2)))
    }

    @Test func aBodyShorterThanItsContentLengthFails() async throws {
        let transport = InMemoryTransport { _ in
            [.respond(status: 200, headers: ["Content-Length": "10"]), .body(Data("short".utf8))]
        }
        let queue = NetworkQueue.oneAttempt(transport: transport)
        let request = request(1)
        try queue.add(request)
        await queue.run()
        #expect(request.transportErrorCode == .networkConnectionLost)
    }

    @Test(arguments: [0.0, -1, -TimeInterval.infinity])
    func aNonPositiveTimeoutFailsTheRequestBeforeItIsSent(timeout: TimeInterval) async throws {
        let transport = InMemoryTransport.ok()
        let queue = NetworkQueue.oneAttempt(transport: transport)
        let recorder = queue.recording()
        let request = request(1, timeout: timeout)
        try queue.add(request)
        await queue.run()
        #expect(recorder.events == [.fail(1, .invalidRequest(.invalidTimeout(timeout))), .queueFinished])
        #expect(transport.startedRequests.isEmpty)
    }

    @Test(arguments: [TimeInterval.infinity, .nan, 1e300, 1_000_000])
    func hugeAndNonFiniteTimeoutsMeanNoTimeout(timeout: TimeInterval) async throws {
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok())
        let request = request(1, timeout: timeout)
        try queue.add(request)
        await queue.run()
        #expect(request.state == .finished)
    }

    @Test func twoRequestsMayNotWriteTheSameFileAtOnce() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nq-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("same.bin")
        let gate = TransferGate()
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok("data", gate: gate))
        let other = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok("data"))
        let first = NetworkRequest(URLRequest(url: url(1)), destination: .file(file))
        let second = NetworkRequest(URLRequest(url: url(2)), destination: .file(file))
        // The same path spelled differently is the same file.
        let third = NetworkRequest(
            URLRequest(url: url(3)), destination: .file(directory.appendingPathComponent("x/../same.bin")))
        try queue.add(first)
        #expect(throws: NetworkQueueError.invalidRequest(.destinationInUse(file))) { try queue.add(second) }
        #expect(throws: NetworkQueueError.self) { try other.add(third) }
        #expect(second.state == .pending && queue.requestCount == 1)
        queue.go()
        gate.open()
        await queue.run()
        #expect(try Data(contentsOf: file) == Data("data".utf8))
        // Once the first has ended, the rejected request may be added after all.
        try other.add(second)
        await other.run()
        #expect(second.state == .finished)
    }
}
