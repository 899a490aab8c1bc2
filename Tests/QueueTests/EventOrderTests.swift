import Foundation
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.admitted, .timeLimit(.minutes(10))) struct EventOrderTests {
    @Test func eachRequestGetsStartHeadersFinishInOrderThenOneQueueDidFinish() async throws {
        // Given a queue of three requests
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok())
        let recorder = queue.recording()
        for tag in 1...3 { try queue.add(request(tag)) }
        // When it runs
        let progress = await queue.run()
        // Then each request's events come in order, and queueDidFinish once, last
        for tag in 1...3 {
            let mine = recorder.events.filter {
                switch $0 {
                case .start(tag), .headers(tag, _), .finish(tag): true
                default: false
                }
            }
            #expect(mine == [.start(tag), .headers(tag, 200), .finish(tag)])
        }
        #expect(recorder.events.last == .queueFinished)
        #expect(recorder.queueFinishedCount == 1)
        #expect(progress.finishedRequestCount == 3)
        #expect(progress.fractionCompleted == 1.0)
    }

    @Test func nothingRunsBeforeGo() async throws {
        let transport = InMemoryTransport.ok()
        let queue = NetworkQueue.oneAttempt(transport: transport)
        try queue.add(request(1))
        #expect(queue.isSuspended)
        #expect(transport.statistics.started == 0)
        #expect(queue.requests.map(\.state) == [.pending])
        queue.go()
        #expect(!queue.isSuspended)
        await transport.waitUntilStarted(1)
        #expect(transport.statistics.started == 1)
    }

    @Test func queueDidFinishFiresOncePerDrainAndNeverForAnEmptyQueue() async throws {
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok())
        let recorder = queue.recording()
        await queue.run()
        #expect(recorder.entries.isEmpty)
        // run() left the queue running; suspend so both requests form one drain.
        queue.suspend()
        try queue.add(request(1))
        try queue.add(request(2))
        await queue.run()
        #expect(recorder.queueFinishedCount == 1)
        try queue.add(request(3))
        await queue.run()
        #expect(recorder.queueFinishedCount == 2)
        #expect(recorder.events.suffix(4) == [.start(3), .headers(3, 200), .finish(3), .queueFinished])
    }

    @Test func requestHandlersRunBeforeTheDelegateForTheSameEvent() async throws {
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok("x"))
        let recorder = queue.recording()
        for tag in 1...4 { try queue.add(request(tag, recorder: recorder)) }
        await queue.run()
        let log = recorder.entries
        for tag in 1...4 {
            let handler = try #require(log.firstIndex(of: .handler(tag)))
            #expect(log[handler + 1] == .finish(tag))
            // The request's last progress update comes before its completion.
            let lastProgress = try #require(log.lastIndex(of: .requestProgress(tag, 1)))
            #expect(lastProgress < handler)
        }
    }

    @Test func callbacksArriveSeriallyOnTheGivenQueue() async throws {
        let key = DispatchSpecificKey<Int>()
        let delegateQueue = DispatchQueue(label: "test.delegate", attributes: .concurrent)
        delegateQueue.setSpecific(key: key, value: 1)
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok(), delegateQueue: delegateQueue)
        let recorder = Recorder(expectedQueueKey: key)
        queue.delegate = recorder
        queue.maxConcurrentRequestCount = 0
        for tag in 1...50 { try queue.add(request(tag)) }
        await queue.run()
        #expect(recorder.offQueueCalls.current == 0)
        #expect(recorder.events.count == 50 * 3 + 1)
        // Serial and in order even on a concurrent target queue: every start precedes its finish.
        let log = recorder.events
        for tag in 1...50 {
            #expect(try #require(log.firstIndex(of: .start(tag))) < #require(log.firstIndex(of: .finish(tag))))
        }
    }

    @Test func eventsSequenceDeliversTheSameOrder() async throws {
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok())
        let stream = queue.events()
        try queue.add(request(7))
        queue.go()
        var names: [String] = []
        for await event in stream {
            switch event {
            case .didStart(let request): names.append("start \(request.tag)")
            case .didReceiveHeaders(_, let response): names.append("headers \(response.statusCode)")
            case .didCollectMetrics(_, let metrics): names.append("metrics \(metrics.attempt)")
            case .didFinish(_, let response): names.append("finish \(response.body.count)")
            case .didFail(_, let error): names.append("fail \(error)")
            case .willRetry(_, let delay, _): names.append("retry \(delay)")
            case .didPause(let request): names.append("pause \(request.tag)")
            case .didResume(let request): names.append("resume \(request.tag)")
            case .sourceDidFail(let error): names.append("source failed \(error)")
            case .serverHoldChanged(let hold): names.append("server \(hold.change)")
            case .didUpdateProgress: continue
            case .queueDidFinish: names.append("done")
            }
            if names.last == "done" { break }
        }
        #expect(names == ["start 7", "headers 200", "finish 3", "done"])
    }

    @Test func finishedRequestCarriesResponseAndState() async throws {
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok("hello"))
        let request = request(1)
        try queue.add(request)
        await queue.run()
        #expect(request.state == .finished)
        #expect(request.attemptCount == 1)
        #expect(request.response?.statusCode == 200)
        let response = try #require(try request.result?.get())
        #expect(String(decoding: response.body, as: UTF8.self) == "hello")
        #expect(request.downloadProgress.completedBytes == 5)
        #expect(request.downloadProgress.expectedBytes == 5)
        #expect(request.downloadProgress.estimatedTimeRemaining == 0)
    }
}
