import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A queue of one attempt per request over `transport` (libcurl's or URLSession's), limited to `limit` at once,
/// with a recorder as its delegate.
func makeQueue(_ transport: TransportKind, limit: Int = 4) -> (NetworkQueue, Recorder) {
    let queue = NetworkQueue.oneAttempt(transport: transport.make())
    let recorder = queue.recording()
    queue.maxConcurrentRequestCount = limit
    return (queue, recorder)
}

func request(_ url: URL, tag: Int, timeout: TimeInterval = 30) -> NetworkRequest {
    var urlRequest = URLRequest(url: url)
    urlRequest.timeoutInterval = timeout
    return NetworkRequest(urlRequest, tag: tag)
}

/// A POST of `bodySize` zero bytes to `url`.
func post(_ url: URL, bodySize: Int) -> NetworkRequest {
    var urlRequest = URLRequest(url: url)
    urlRequest.httpMethod = "POST"
    urlRequest.httpBody = Data(count: bodySize)
    return NetworkRequest(urlRequest)
}

/// Waits for the first event matching `match` on `stream`.
func first(_ stream: AsyncStream<NetworkQueueEvent>, where match: (NetworkQueueEvent) -> Bool) async {
    for await event in stream where match(event) { return }
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct QueueIntegrationTests {
    @Test(arguments: TransportKind.allCases) func eventsArriveInOrderAndTheQueueFinishesOnce(_ transport: TransportKind)
        async throws
    {
        let server = try LoopbackServer()
        let (queue, recorder) = makeQueue(transport)
        let requests = (1...5).map { request(server.url("/bytes/\($0 * 1000)"), tag: $0) }
        for request in requests { try queue.add(request) }
        let progress = await queue.run()
        for tag in 1...5 {
            let mine = recorder.events.filter { [.start(tag), .headers(tag, 200), .finish(tag)].contains($0) }
            #expect(mine == [.start(tag), .headers(tag, 200), .finish(tag)])
            #expect(try requests[tag - 1].result?.get().body == pattern(0..<(tag * 1000)))
        }
        #expect(recorder.queueFinishedCount == 1)
        #expect(recorder.events.last == .queueFinished)
        #expect(progress.bytesReceived == 15_000)
        #expect(progress.bytesExpectedToReceive == 15_000)
        #expect(progress.fractionCompleted == 1)
    }

    @Test(arguments: TransportKind.allCases) func aFailureCancelsTheOthersWhenOn(_ transport: TransportKind)
        async throws
    {
        let server = try LoopbackServer()
        let (queue, recorder) = makeQueue(transport, limit: 4)
        let failing = server.url("/status/404")
        try queue.add(request(failing, tag: 0))
        // The siblings are held by the server until 100 arrive, so they are still running when 404 lands.
        for tag in 1...5 { try queue.add(request(server.url("/barrier/10?n=100&i=\(tag)"), tag: tag)) }
        await queue.run()
        let sibling = NetworkQueueError.cancelledBecauseSiblingFailed(sibling: failing)
        let terminal = recorder.events.filter { if case .fail = $0 { true } else { $0 == .queueFinished } }
        #expect(
            terminal == [.fail(0, .unacceptableStatus(code: 404, url: failing))] + (1...5).map { .fail($0, sibling) }
                + [.queueFinished])
        // 4 and 5 were pending: they never reached the server.
        #expect(!server.statistics.log.contains { $0.contains("i=4") || $0.contains("i=5") })
    }

    @Test(arguments: TransportKind.allCases) func aFailureLeavesTheOthersAloneWhenOff(_ transport: TransportKind)
        async throws
    {
        let server = try LoopbackServer()
        let (queue, recorder) = makeQueue(transport)
        queue.cancelsAllOnFailure = false
        try queue.add(request(server.url("/status/404"), tag: 0))
        for tag in 1...3 { try queue.add(request(server.url("/bytes/100?i=\(tag)"), tag: tag)) }
        await queue.run()
        #expect(recorder.events.contains(.fail(0, .unacceptableStatus(code: 404, url: server.url("/status/404")))))
        #expect((1...3).allSatisfy { recorder.events.contains(.finish($0)) })
        #expect(recorder.queueFinishedCount == 1)
    }

    @Test(arguments: TransportKind.allCases, [SchedulingOrder.fifo, .lifo])
    func startOrderOnTheWireWithLimitOne(_ transport: TransportKind, order: SchedulingOrder) async throws {
        let server = try LoopbackServer()
        let (queue, _) = makeQueue(transport, limit: 1)
        queue.order = order
        for tag in 1...8 { try queue.add(request(server.url("/bytes/10?i=\(tag)"), tag: tag)) }
        await queue.run()
        let tags = order == .fifo ? Array(1...8) : Array((1...8).reversed())
        #expect(server.statistics.log == tags.map { "GET /bytes/10?i=\($0)" })
    }

    @Test(arguments: TransportKind.allCases, [(limit: 1, total: 6), (limit: 4, total: 24), (limit: 0, total: 24)])
    func theLimitIsReachedButNeverExceededOnTheWire(_ transport: TransportKind, _ sizes: (limit: Int, total: Int))
        async throws
    {
        let (limit, total) = sizes
        let server = try LoopbackServer()
        let (queue, recorder) = makeQueue(transport, limit: limit)
        // Requests are released by the server in batches of the limit (all of them when unlimited), each batch once it
        // is whole: on a loaded machine the last connection of a batch may take seconds to open (the suite's time limit
        // bounds the wait, not a clock that would release a short batch and decide the verdict).
        let batch = limit == 0 ? total : limit
        for tag in 1...total {
            try queue.add(request(server.url("/barrier/100?n=\(batch)&wait=240&i=\(tag)"), tag: tag))
        }
        let progress = await queue.run()
        #expect(progress.finishedRequestCount == total)
        #expect(server.statistics.maxInFlight == batch)
        #expect(recorder.queueFinishedCount == 1)
    }

    @Test(arguments: TransportKind.allCases) func cancellingAPendingAndARunningRequest(_ transport: TransportKind)
        async throws
    {
        let server = try LoopbackServer()
        let (queue, recorder) = makeQueue(transport, limit: 1)
        let running = request(server.url("/bytes/50000000?rate=100000"), tag: 1)
        let pending = request(server.url("/bytes/10?i=2"), tag: 2)
        let after = request(server.url("/bytes/10?i=3"), tag: 3)
        for request in [running, pending, after] { try queue.add(request) }
        let stream = queue.events()
        queue.go()
        await first(stream) { if case .didReceiveHeaders = $0 { true } else { false } }
        queue.cancel(pending)
        queue.cancel(running)
        #expect(running.state == .cancelled)
        #expect(pending.state == .cancelled)
        await queue.run()
        #expect(after.state == .finished)
        #expect(recorder.events.filter { $0 == .start(2) }.isEmpty)
        #expect(!server.statistics.log.contains("GET /bytes/10?i=2"))
        #expect(recorder.events.contains(.fail(1, .cancelled)))
    }

    @Test(arguments: TransportKind.allCases) func aDroppedConnectionFailsAsConnectionLost(_ transport: TransportKind)
        async throws
    {
        let server = try LoopbackServer()
        let (queue, _) = makeQueue(transport)
        let dropped = request(server.url("/drop/200000"), tag: 1)
        try queue.add(dropped)
        await queue.run()
        #expect(dropped.transportErrorCode == .networkConnectionLost)
    }

    @Test(arguments: TransportKind.allCases) func a404FailsByDefault(_ transport: TransportKind) async throws {
        let server = try LoopbackServer()
        let (queue, recorder) = makeQueue(transport)
        try queue.add(request(server.url("/status/404"), tag: 1))
        await queue.run()
        #expect(
            recorder.events == [
                .start(1), .headers(1, 404), .fail(1, .unacceptableStatus(code: 404, url: server.url("/status/404"))),
                .queueFinished,
            ])
    }

    @Test(arguments: TransportKind.allCases) func aSubSecondTimeoutFires(_ transport: TransportKind) async throws {
        let server = try LoopbackServer()
        let (queue, _) = makeQueue(transport)
        let slow = request(server.url("/bytes/10?silent=1"), tag: 1, timeout: 0.3)
        try queue.add(slow)
        await queue.run()
        #expect(slow.transportErrorCode == .timedOut)
    }

    @Test(arguments: TransportKind.allCases) func twoHundredRequestsInOneQueue(_ transport: TransportKind) async throws
    {
        let server = try LoopbackServer()
        let (queue, recorder) = makeQueue(transport, limit: 8)
        let requests = (1...200).map { request(server.url("/bytes/1024?i=\($0)"), tag: $0) }
        for request in requests { try queue.add(request) }
        let progress = await queue.run()
        #expect(requests.allSatisfy { $0.state == .finished })
        #expect(progress.finishedRequestCount == 200)
        #expect(progress.bytesReceived == 204_800)
        #expect(progress.fractionCompleted == 1)
        #expect(server.statistics.requests == 200)
        #expect(server.statistics.maxInFlight <= 8)
        #expect(recorder.queueFinishedCount == 1)
    }

    @Test(arguments: TransportKind.allCases) func uploadsReportSentBytes(_ transport: TransportKind) async throws {
        let server = try LoopbackServer()
        let (queue, _) = makeQueue(transport)
        let upload = post(server.url("/upload"), bodySize: 1_048_576)
        try queue.add(upload)
        let progress = await queue.run()
        #expect(try upload.result?.get().body == Data("1048576".utf8))
        #expect(upload.uploadProgress.completedBytes == 1_048_576)
        #expect(upload.uploadProgress.expectedBytes == 1_048_576)
        #expect(progress.bytesSent == 1_048_576)
        #expect(progress.bytesExpectedToSend == 1_048_576)
    }

    @Test(arguments: TransportKind.allCases) func aBodyStreamedFromAFileIsSentWhole(_ transport: TransportKind)
        async throws
    {
        let server = try LoopbackServer()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("body.bin")
        // Built by doubling (`pattern`): a 300,000-element map held a pool thread for 20 s under the thread sanitizer.
        try pattern(0..<300_000).write(to: file)
        var urlRequest = URLRequest(url: server.url("/upload"))
        urlRequest.httpMethod = "PUT"
        urlRequest.httpBodyStream = InputStream(fileAtPath: file.path)
        let upload = NetworkRequest(urlRequest)
        let (queue, _) = makeQueue(transport)
        try queue.add(upload)
        let progress = await queue.run()
        #expect(try upload.result?.get().body == Data("300000".utf8))
        #expect(upload.uploadProgress.completedBytes == 300_000)
        #expect(progress.bytesSent == 300_000)
        // Streamed without a length: chunked, never a Content-Length beside it.
        let headers = try #require(server.statistics.headers.last)
        #expect(headers["transfer-encoding"]?.lowercased() == "chunked")
        #expect(headers["content-length"] == nil)
    }

    @Test(arguments: TransportKind.allCases) func a307RedirectKeepsTheBody(_ transport: TransportKind) async throws {
        let server = try LoopbackServer()
        let (queue, _) = makeQueue(transport)
        let redirected = post(server.url("/redirect/2?code=307&to=/upload"), bodySize: 5_000)
        try queue.add(redirected)
        await queue.run()
        #expect(try redirected.result?.get().body == Data("5000".utf8))
        #expect(
            server.statistics.log == [
                "POST /redirect/2?code=307&to=/upload", "POST /redirect/1?code=307&to=/upload", "POST /upload",
            ])
    }

    @Test(arguments: TransportKind.allCases) func aRefusedConnectionFailsClearly(_ transport: TransportKind)
        async throws
    {
        // Port 1: privileged, so nobody listens there. A stopped server's port could be taken meanwhile by a
        // server of a test running beside this one.
        let url = URL(string: "http://127.0.0.1:1/bytes/10")!
        let (queue, _) = makeQueue(transport)
        let refused = request(url, tag: 1)
        try queue.add(refused)
        await queue.run()
        #expect(refused.transportErrorCode == .cannotConnectToHost)
    }
}
