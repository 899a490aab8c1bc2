import Foundation
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The same URL, tagged differently.
private func same(_ tag: Int, path: String = "same", method: String = "GET") -> NetworkRequest {
    var urlRequest = URLRequest(url: URL(string: "http://example.test/\(path)")!)
    urlRequest.httpMethod = method
    return NetworkRequest(urlRequest, tag: tag)
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct DuplicateTests {
    /// A gated queue with the policy, a recorder as delegate and `limit`.
    private func makeQueue(_ policy: DuplicatePolicy, limit: Int = 4) -> (
        NetworkQueue, InMemoryTransport, TransferGate, Recorder
    ) {
        let gate = TransferGate()
        let transport = InMemoryTransport.ok("abc", gate: gate)
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.maxConcurrentRequestCount = limit
        queue.duplicatePolicy = policy
        queue.cancelsAllOnFailure = false
        let recorder = queue.recording()
        return (queue, transport, gate, recorder)
    }

    @Test func coalescedRequestsShareOneTransferAndEachEnds() async throws {
        let (queue, transport, gate, recorder) = makeQueue(.coalesce)
        let requests = (1...5).map { same($0) }
        try queue.add(requests[0])
        queue.go()
        await transport.waitUntilStarted(1)
        // Added while the first runs, and one while the first is still pending in another queue state.
        for request in requests.dropFirst() { try queue.add(request) }
        #expect(queue.requestCount == 5)
        #expect(requests[1].state == .pending)
        gate.open()
        let progress = await queue.run()
        #expect(transport.statistics.started == 1)
        for request in requests { #expect(try request.result?.get().body == Data("abc".utf8)) }
        #expect(progress.finishedRequestCount == 5)
        #expect(progress.fractionCompleted == 1)
        #expect(progress.bytesReceived == 3)
        let ends = recorder.events.filter { if case .finish = $0 { true } else { false } }
        #expect(ends == (1...5).map { .finish($0) })
        // Each follower hears didStart right before its didFinish.
        #expect(
            Array(recorder.events.suffix(10)) == [
                .finish(1), .start(2), .finish(2), .start(3), .finish(3), .start(4), .finish(4), .start(5), .finish(5),
                .queueFinished,
            ])
    }

    @Test func differentMethodsOrURLsAreNotDuplicates() async throws {
        let (queue, transport, gate, _) = makeQueue(.coalesce)
        try queue.add(same(1))
        try queue.add(same(2, method: "HEAD"))
        try queue.add(same(3, path: "other"))
        gate.open()
        await queue.run()
        #expect(transport.statistics.started == 3)
    }

    @Test func cancellingAFollowerEndsOnlyIt() async throws {
        let (queue, transport, gate, _) = makeQueue(.coalesce)
        let requests = (1...3).map { same($0) }
        for request in requests { try queue.add(request) }
        queue.go()
        await transport.waitUntilStarted(1)
        queue.cancel(requests[1])
        #expect(requests[1].state == .cancelled)
        gate.open()
        await queue.run()
        #expect(requests.map(\.state) == [.finished, .cancelled, .finished])
        #expect(transport.statistics.started == 1)
    }

    @Test func cancellingTheLeaderHandsTheWorkToTheOldestFollower() async throws {
        let (queue, transport, gate, recorder) = makeQueue(.coalesce)
        let requests = (1...3).map { same($0) }
        for request in requests { try queue.add(request) }
        queue.go()
        await transport.waitUntilStarted(1)
        queue.cancel(requests[0])
        // The heir is sent anew; the third still follows it.
        await transport.waitUntilStarted(2)
        // Transports are told to cancel off the caller's thread.
        await eventually { transport.statistics.cancelled == 1 }
        #expect(transport.statistics.cancelled == 1)
        gate.open()
        await queue.run()
        #expect(requests.map(\.state) == [.cancelled, .finished, .finished])
        #expect(transport.statistics.started == 2)
        #expect(
            recorder.events.filter { if case .start = $0 { true } else { false } } == [.start(1), .start(2), .start(3)])
        // Adding the same again after the drain: a new leader, a new transfer.
        try queue.add(same(4))
        await queue.run()
        #expect(transport.statistics.started == 3)
    }

    @Test func cancelAllEndsLeadersAndFollowersOnce() async throws {
        let (queue, transport, _, recorder) = makeQueue(.coalesce, limit: 1)
        for tag in 1...3 { try queue.add(same(tag)) }
        try queue.add(same(4, path: "other"))
        try queue.add(same(5, path: "other"))
        queue.go()
        await transport.waitUntilStarted(1)
        queue.cancelAll()
        await queue.run()
        let fails = recorder.events.compactMap { if case .fail(let tag, _) = $0 { tag } else { nil } }
        #expect(fails.sorted() == [1, 2, 3, 4, 5])
        #expect(recorder.queueFinishedCount == 1)
    }

    @Test func cancelEarlierReplacesTheRunningRequestAndFreesItsSlot() async throws {
        let (queue, transport, gate, _) = makeQueue(.cancelEarlier, limit: 1)
        let first = same(1)
        try queue.add(first)
        queue.go()
        await transport.waitUntilStarted(1)
        let second = same(2)
        try queue.add(second)
        #expect(first.state == .cancelled)
        // Its slot was freed at once: the replacement runs with a limit of 1.
        await transport.waitUntilStarted(2)
        #expect(second.state == .running)
        let third = same(3, path: "other")
        try queue.add(third)
        // Still one slot: the third waits for the replacement.
        #expect(third.state == .pending)
        await eventually { transport.statistics.cancelled == 1 }
        #expect(transport.statistics.cancelled == 1)
        gate.open()
        await queue.run()
        #expect(second.state == .finished)
        #expect(transport.statistics.started == 3)
    }

    @Test func coalescedFileRequestsShareTheFile() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nq-dup-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("a.bin")
        for policy in [DuplicatePolicy.coalesce, .cancelEarlier] {
            let (queue, transport, gate, _) = makeQueue(policy)
            let urlRequest = URLRequest(url: URL(string: "http://example.test/file")!)
            let first = NetworkRequest(urlRequest, destination: .file(file))
            let second = NetworkRequest(urlRequest, destination: .file(file))
            try queue.add(first)
            queue.go()
            await transport.waitUntilStarted(1)
            // No destinationInUse: the second joins (or replaces) the first.
            try queue.add(second)
            gate.open()
            await queue.run()
            #expect(try second.result?.get().fileURL == file, "\(policy)")
            #expect(first.state == (policy == .coalesce ? .finished : .cancelled), "\(policy)")
            #expect(try Data(contentsOf: file) == Data("abc".utf8))
            #expect(!FileManager.default.fileExists(atPath: file.path + ".part"))
            try FileManager.default.removeItem(at: file)
        }
    }

    @Test func allowIsTheDefaultAndSendsBoth() async throws {
        let queue = NetworkQueue(transport: InMemoryTransport.ok())
        #expect(queue.duplicatePolicy == .allow)
        let (allowing, transport, gate, _) = makeQueue(.allow)
        try allowing.add(same(1))
        try allowing.add(same(2))
        gate.open()
        await allowing.run()
        #expect(transport.statistics.started == 2)
    }
}
