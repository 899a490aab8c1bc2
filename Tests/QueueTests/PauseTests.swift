import Foundation
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Pausing and resuming single requests in every phase, over the in-memory transport.
@Suite(.admitted, .timeLimit(.minutes(10))) struct PauseTests {
    /// A transfer that sends a head and "abc", then waits at `gate` before "def".
    static func halfway(_ gate: TransferGate) -> InMemoryTransport {
        InMemoryTransport { _ in
            [
                .respond(status: 200, headers: ["Content-Length": "6"]), .body(Data("abc".utf8)), .hold(gate),
                .body(Data("def".utf8)),
            ]
        }
    }

    /// The events of request `tag`, in order, without progress.
    static func events(of tag: Int, _ recorder: Recorder) -> [Entry] {
        recorder.events.filter {
            switch $0 {
            case .start(let t), .headers(let t, _), .finish(let t), .fail(let t, _), .retry(let t, _, _), .pause(let t),
                .resume(let t):
                t == tag
            default: false
            }
        }
    }

    @Test func aPendingRequestPausedHoldsNoSlotAndTheDrainWaitsForIt() async throws {
        let gated = try GatedQueue(limit: 1, count: 3)
        let (queue, transport, gate, recorder) = (gated.queue, gated.transport, gated.gate, gated.recorder)
        let second = gated.requests[1]
        queue.go()
        await transport.waitUntilStarted(1)
        #expect(queue.pause(second))
        #expect(!queue.pause(second))
        #expect(second.state == .paused)
        gate.open()
        await eventually { recorder.events.contains(.finish(3)) }
        // 1 and 3 are done; 2 waits, paused, and so does the drain.
        #expect(transport.startedRequests.map(tag(of:)) == [1, 3])
        #expect(recorder.queueFinishedCount == 0)
        #expect(queue.requestCount == 1)
        #expect(queue.resume(second))
        #expect(!queue.resume(second))
        await queue.run()
        #expect(transport.startedRequests.map(tag(of:)) == [1, 3, 2])
        #expect(Self.events(of: 2, recorder) == [.pause(2), .resume(2), .start(2), .headers(2, 200), .finish(2)])
        #expect(recorder.queueFinishedCount == 1)
        #expect(second.attemptCount == 1)
    }

    @Test func aRunningMemoryRequestPausedStopsItsTransferKeepsItsBytesCountedAndStartsOverOnResume() async throws {
        let gate = TransferGate()
        let transport = Self.halfway(gate)
        let queue = NetworkQueue.oneAttempt(transport: transport)
        let recorder = queue.recording()
        let request = request(1)
        try queue.add(request)
        queue.go()
        await eventually { request.downloadProgress.completedBytes == 3 }
        #expect(queue.pause(request))
        #expect(request.state == .paused)
        await eventually { transport.statistics.cancelled == 1 }
        #expect(transport.statistics.cancelled == 1)
        #expect(queue.progress.bytesReceived == 3)
        #expect(queue.progress.fractionCompleted == 0.5)
        gate.open()
        #expect(queue.resume(request))
        await queue.run()
        #expect(try request.result?.get().body == Data("abcdef".utf8))
        #expect(request.attemptCount == 1)
        #expect(transport.statistics.started == 2)
        #expect(
            Self.events(of: 1, recorder) == [
                .start(1), .headers(1, 200), .pause(1), .resume(1), .headers(1, 200), .finish(1),
            ])
        let fractions = recorder.progresses.current.map(\.fractionCompleted)
        #expect(fractions == fractions.sorted())
        #expect(fractions.last == 1)
    }

    @Test func aRequestWaitingToRetryPausedStopsWaitingAndRetriesAtOnceWhenResumed() async throws {
        let clock = ManualClock()
        let transport = RetryQueueTests.counting {
            $0 == 1 ? [.respond(status: 503, headers: ["Retry-After": "30"])] : RetryQueueTests.okBody
        }
        let queue = NetworkQueue(transport: transport, clock: clock)
        let recorder = queue.recording()
        let request = request(1)
        try queue.add(request)
        queue.go()
        await eventually { request.state == .waitingToRetry }
        #expect(queue.pause(request))
        #expect(request.state == .paused)
        // Its retry time passes while paused: nothing starts.
        clock.advance(by: 31)
        #expect(request.state == .paused)
        #expect(transport.statistics.started == 1)
        #expect(queue.resume(request))
        await queue.run()
        #expect(request.state == .finished)
        #expect(request.attemptCount == 2)
        #expect(Self.events(of: 1, recorder).count == 7)
        #expect(Array(Self.events(of: 1, recorder).suffix(4)) == [.pause(1), .resume(1), .headers(1, 200), .finish(1)])
    }

    @Test func aRequestWhoseRetryIsBeingDecidedPausedDropsTheDecisionAndRetriesWhenResumed() async throws {
        let answer = TransferGate()
        let asked = Box(0)
        let transport = RetryQueueTests.counting { $0 == 1 ? [.respond(status: 503)] : RetryQueueTests.okBody }
        let queue = NetworkQueue(transport: transport)
        queue.retryPolicy = RetryPolicy(decide: { _, _, _ in
            asked.with { $0 += 1 }
            await answer.wait()
            return .retryAfter(3_600)
        })
        let request = request(1)
        try queue.add(request)
        queue.go()
        await eventually { asked.with { $0 } == 1 }
        #expect(request.state == .waitingToRetry)
        #expect(queue.pause(request))
        // The closure's answer (an hour's wait) comes after the pause: it is dropped.
        answer.open()
        #expect(request.state == .paused)
        #expect(queue.resume(request))
        await queue.run()
        #expect(request.state == .finished)
        #expect(request.attemptCount == 2)
        #expect(asked.with { $0 } == 1)
    }

    @Test func aPreflightingRequestPausedSendsItsHeadAgainWhenResumed() async throws {
        let gate = TransferGate()
        let heads = Box(0)
        let transport = InMemoryTransport { urlRequest in
            guard urlRequest.httpMethod == "HEAD" else { return RetryQueueTests.okBody }
            let first = heads.with { count in
                count += 1
                return count == 1
            }
            return first
                ? [.hold(gate), .respond(status: 200, headers: ["Content-Length": "3"])]
                : [.respond(status: 200, headers: ["Content-Length": "3"])]
        }
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.showsAccurateProgress = true
        let recorder = queue.recording()
        let request = request(1)
        try queue.add(request)
        queue.go()
        await eventually { request.state == .preflighting && transport.statistics.started == 1 }
        #expect(queue.pause(request))
        #expect(request.state == .paused)
        gate.open()
        #expect(queue.resume(request))
        await queue.run()
        #expect(request.state == .finished)
        #expect(transport.startedRequests.map { $0.httpMethod ?? "GET" } == ["HEAD", "HEAD", "GET"])
        #expect(Self.events(of: 1, recorder) == [.pause(1), .resume(1), .start(1), .headers(1, 200), .finish(1)])
    }

    @Test func anAdaptingRequestPausedDropsTheHooksResultAndRunsThemAgain() async throws {
        let release = TransferGate()
        let calls = Box(0)
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok())
        queue.adapter = { urlRequest in
            let call = calls.with { count in
                count += 1
                return count
            }
            if call == 1 { await release.wait() }
            return urlRequest
        }
        let request = request(1)
        try queue.add(request)
        queue.go()
        await eventually { calls.with { $0 } == 1 }
        #expect(queue.pause(request))
        release.open()
        #expect(request.state == .paused)
        #expect(queue.resume(request))
        await queue.run()
        #expect(request.state == .finished)
        #expect(calls.with { $0 } == 2)
        #expect(request.attemptCount == 1)
    }

    @Test func aFollowerCannotBePausedButItsLeaderCan() async throws {
        let gate = TransferGate()
        let transport = InMemoryTransport.ok(gate: gate)
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.duplicatePolicy = .coalesce
        let (leader, follower) = (request(1, timeout: 3_600), request(1, timeout: 3_600))
        try queue.add(leader)
        try queue.add(follower)
        queue.go()
        await transport.waitUntilStarted(1)
        #expect(!queue.pause(follower))
        #expect(queue.pause(leader))
        #expect(follower.state == .pending)
        gate.open()
        #expect(queue.resume(leader))
        await queue.run()
        #expect(follower.state == .finished)
        #expect(leader.state == .finished)
        #expect(transport.statistics.started == 2)
    }

    @Test func aPausedRequestIsCancelledLikeAnyOtherAndEndsTheDrain() async throws {
        let gated = try GatedQueue(limit: 1, count: 2)
        gated.queue.go()
        await gated.transport.waitUntilStarted(1)
        #expect(gated.queue.pause(gated.requests[1]))
        gated.gate.open()
        await eventually { gated.requests[0].state == .finished }
        gated.queue.cancel(gated.requests[1])
        await gated.queue.run()
        #expect(gated.requests[1].state == .cancelled)
        #expect(Self.events(of: 2, gated.recorder) == [.pause(2), .fail(2, .cancelled)])
        #expect(gated.recorder.queueFinishedCount == 1)
    }

    @Test func pauseAndResumeWhereChooseByPredicate() async throws {
        let gated = try GatedQueue(limit: 1, count: 6)
        let queue = gated.queue
        queue.go()
        await gated.transport.waitUntilStarted(1)
        let paused = queue.pause { $0.tag % 2 == 0 }
        #expect(paused.map(\.tag) == [2, 4, 6])
        #expect(queue.pause { $0.tag == 2 }.isEmpty)
        gated.gate.open()
        await eventually { gated.requests[4].state == .finished }
        #expect(gated.transport.startedRequests.map(tag(of:)) == [1, 3, 5])
        #expect(queue.resume { $0.tag > 3 }.map(\.tag) == [4, 6])
        await eventually { gated.requests[5].state == .finished }
        #expect(gated.requests[1].state == .paused)
        #expect(queue.resume { _ in true }.map(\.tag) == [2])
        await queue.run()
        #expect(gated.transport.startedRequests.map(tag(of:)) == [1, 3, 5, 4, 6, 2])
    }

    @Test func aRequestNotInTheQueueIsNeitherPausedNorResumed() {
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok())
        let stranger = request(9)
        #expect(!queue.pause(stranger))
        #expect(!queue.resume(stranger))
        #expect(stranger.state == .pending)
    }
}
