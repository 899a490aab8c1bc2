import Foundation
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request for `http://source.test/<tag>`, tagged.
private func request(_ tag: Int, priority: NetworkRequest.Priority = .normal) -> NetworkRequest {
    NetworkRequest(url: URL(string: "http://source.test/\(tag)")!, priority: priority, tag: tag)
}

/// A source of requests tagged 1…`count` (endless when `count` is nil) that counts every `next()` and can
/// be told to throw after a number of them. `onNext` sees each tag as it is given.
private struct CountingSource: AsyncSequence, Sendable {
    let count: Int?
    var throwsAfter: Int?
    var onNext: @Sendable (Int) -> Void = { _ in }
    /// The call that waits inside `next()` until `hold` finishes (or its task is cancelled), setting `isHeld`.
    var holdAt: Int?
    var hold: AsyncStream<Void>?
    let isHeld = Box(false)
    let calls = Box(0)
    /// Set when the reader let go of the iterator: it will call `next()` no more.
    let released = Box(false)

    struct ReadFailure: Error, CustomStringConvertible {
        var description: String { "the list could not be read" }
    }

    final class Release: Sendable {
        let released: Box<Bool>
        init(_ released: Box<Bool>) { self.released = released }
        deinit { released.with { $0 = true } }
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let source: CountingSource
        let release: Release
        mutating func next() async throws -> NetworkRequest? {
            let call = source.calls.with { calls in
                calls += 1
                return calls
            }
            if let throwsAfter = source.throwsAfter, call > throwsAfter { throw ReadFailure() }
            if let count = source.count, call > count { return nil }
            if call == source.holdAt, let hold = source.hold {
                source.isHeld.with { $0 = true }
                for await _ in hold {}
            }
            source.onNext(call)
            return request(call)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(source: self, release: Release(released)) }
}

/// A source that gives requests 1…`count`, then waits on `stall` (until its task is cancelled).
private struct StallingSource: AsyncSequence, Sendable {
    let count: Int
    let stall: AsyncStream<Never>
    /// The tags given so far.
    let given = Box<[Int]>([])
    /// True once a `next()` waits past the last request (the reader added every request given before it).
    let stalled = Box(false)

    struct AsyncIterator: AsyncIteratorProtocol {
        let source: StallingSource
        mutating func next() async -> NetworkRequest? {
            let tag = source.given.current.count + 1
            guard tag <= source.count else {
                source.stalled.with { $0 = true }
                var waiting = source.stall.makeAsyncIterator()
                _ = await waiting.next()
                return nil
            }
            source.given.with { $0.append(tag) }
            return request(tag)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(source: self) }
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct SourceTests {
    /// The look-ahead at the default limit of 4 (see `add(contentsOf:)`).
    static let lookAhead = 256

    /// 100,000 requests (`NQ_BIG_BATCH`; a tenth under the sanitizers).
    @Test func aBigBatchFromASourceIsReadOnlyAsTheQueueNeedsIt() async throws {
        try await HeavyTests.exclusively { try await bigBatchFromASource() }
    }

    private func bigBatchFromASource() async throws {
        let count = TestEnvironment.bigBatch
        let transport = InMemoryTransport.instant(body: Data("ok".utf8))
        let queue = NetworkQueue.oneAttempt(transport: transport)
        let recorder = queue.recording()
        let mostAhead = Box(0)
        let source = CountingSource(count: count) { given in
            // Read but not started: given − started. The queue may have started up to its limit (4) that the
            // transport has not seen yet.
            let ahead = given - transport.statistics.started
            mostAhead.with { $0 = max($0, ahead) }
        }
        queue.add(contentsOf: source)
        queue.go()
        let progress = await queue.run()
        #expect(mostAhead.current <= Self.lookAhead + 4)
        // Reading is what bounds it: the source was read ahead, not one request at a time.
        #expect(mostAhead.current > 4)
        #expect(source.calls.current == count + 1)
        #expect(progress.finishedRequestCount == count)
        #expect(progress.totalRequestCount == count)
        #expect(progress.isTotalFinal)
        #expect(progress.fractionCompleted == 1.0)
        // Every request exactly one ending.
        let finished = recorder.events.compactMap { entry -> Int? in
            if case .finish(let tag) = entry { tag } else { nil }
        }
        #expect(finished.count == count)
        #expect(Set(finished).count == count)
        #expect(recorder.queueFinishedCount == 1)
    }

    /// 100,000 small files read from a source with accurate progress (`NQ_BIG_BATCH`; a tenth under the sanitizers):
    /// their server's first 4 HEADs find them small and the rest go without one, each weighing the mean size until
    /// its head; the total ends exact and the fraction at 1.0.
    @Test func aBigBatchWithAccurateProgressAsksItsServerFourHeads() async throws {
        try await HeavyTests.exclusively { try await sampledBigBatch() }
    }

    private func sampledBigBatch() async throws {
        let count = TestEnvironment.bigBatch
        let heads = Box(0)
        let body = Data("ok".utf8)
        let transport = InMemoryTransport { request in
            guard request.httpMethod == "HEAD" else {
                return [.respond(status: 200, headers: ["Content-Length": "2"]), .body(body)]
            }
            heads.with { $0 += 1 }
            return [.respond(status: 200, headers: ["Content-Length": "2"])]
        }
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.showsAccurateProgress = true
        let recorder = queue.recording()
        queue.add(contentsOf: CountingSource(count: count) { _ in })
        let progress = await queue.run()
        #expect(heads.current == 4)
        #expect(transport.statistics.started == count + 4)
        let updates = recorder.progresses.current
        #expect(updates.contains { $0.isEstimated })
        for (earlier, later) in zip(updates, updates.dropFirst()) {
            #expect(later.fractionCompleted >= earlier.fractionCompleted)
        }
        #expect(progress.finishedRequestCount == count)
        #expect(progress.bytesExpectedToReceive == Int64(2 * count))
        #expect(progress.fractionCompleted == 1.0 && !progress.isEstimated)
    }

    /// The form the docs show: a lazy map over a million numbers. Each request is made when the queue reads it,
    /// so at most the look-ahead of them ever exist (an eager `map` would have made all of them inside `add`).
    @Test func theDocumentedLazyFormMakesEachRequestWhenItIsRead() async throws {
        let made = Box(0)
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.instant())
        let recorder = queue.recording()
        queue.add(
            contentsOf: (1...1_000_000).lazy.map { tag in
                made.with { $0 += 1 }
                return request(tag)
            })
        #expect(made.current <= Self.lookAhead)
        #expect(queue.progress.estimatedRequestCount == 1_000_000)
        await eventually { queue.requestCount == Self.lookAhead }
        #expect(made.current == Self.lookAhead)
        queue.cancelAll()
        queue.go()
        let progress = await queue.run()
        #expect(made.current == Self.lookAhead)
        #expect(progress.cancelledRequestCount == Self.lookAhead)
        #expect(recorder.events.filter { if case .fail = $0 { true } else { false } }.count == Self.lookAhead)
    }

    /// A source that gives ten requests and then waits: they start and end while it waits, and the drain waits for
    /// the source.
    @Test func aSourceThatGivesTenThenWaitsRunsTheTen() async throws {
        let (stream, continuation) = AsyncStream<NetworkRequest>.makeStream()
        for tag in 1...10 { continuation.yield(request(tag)) }
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.instant())
        let recorder = queue.recording()
        queue.add(contentsOf: stream)
        queue.go()
        await eventually { queue.progress.finishedRequestCount == 10 }
        #expect(recorder.queueFinishedCount == 0)
        #expect(!queue.progress.isTotalFinal)
        continuation.yield(request(11))
        continuation.finish()
        let progress = await queue.run()
        #expect(progress.finishedRequestCount == 11)
        #expect(recorder.queueFinishedCount == 1)
    }

    /// Every request a source gave ends with one event when cancelAll stops the source, also while the source
    /// is in the middle of a grant (it gave ten, and waits in its eleventh `next()`).
    @Test func cancelAllEndsEveryRequestReadWithAnEvent() async throws {
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok(gate: TransferGate()))
        let recorder = queue.recording()
        let (stall, holder) = AsyncStream<Never>.makeStream()
        let source = StallingSource(count: 10, stall: stall)
        queue.add(contentsOf: source)
        queue.go()
        // Waiting in its eleventh `next()`: the reader added the ten it gave (a request a `next()` still returns after the
        // stop is never read by the queue, and ends with no event: waiting for ten given raced the tenth's add).
        await eventually { source.stalled.current }
        queue.cancelAll()
        await queue.run()
        let failed = recorder.events.compactMap { entry -> Int? in
            if case .fail(let tag, _) = entry { tag } else { nil }
        }
        #expect(failed.sorted() == Array(1...10))
        #expect(recorder.queueFinishedCount == 1)
        holder.finish()
    }

    /// A listener that subscribes after adding a source (before go()) hears all of it: the source's end is
    /// never reported before go(), however fast it was read.
    @Test(arguments: [0, 2])
    func aListenerAfterAddingHearsTheEndOfASourceReadBeforeGo(count: Int) async throws {
        for _ in 0..<50 {
            let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.instant())
            queue.add(contentsOf: (0..<count).map { request($0 + 1) })
            await eventually { queue.progress.isTotalFinal }
            let recorder = queue.recording()
            queue.go()
            let progress = await queue.run()
            #expect(recorder.queueFinishedCount == 1)
            #expect(progress.finishedRequestCount == count)
            #expect(recorder.events.filter { if case .finish = $0 { true } else { false } }.count == count)
        }
    }

    @Test func aListenerAfterAddingHearsASourceThatFailedBeforeGo() async throws {
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.instant())
        queue.add(contentsOf: CountingSource(count: nil, throwsAfter: 2))
        await eventually { queue.progress.isTotalFinal }
        let recorder = queue.recording()
        queue.go()
        let progress = await queue.run()
        #expect(recorder.events.filter { if case .sourceFailed = $0 { true } else { false } }.count == 1)
        #expect(progress.cancelledRequestCount == 2)
        #expect(recorder.queueFinishedCount == 1)
    }

    @Test(arguments: [SchedulingOrder.fifo, .lifo])
    func orderRulesApplyToWhatWasRead(order: SchedulingOrder) async throws {
        let transport = InMemoryTransport.instant()
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.maxConcurrentRequestCount = 1
        queue.order = order
        let source = CountingSource(count: 10)
        queue.add(contentsOf: source)
        // A suspended queue reads up to its look-ahead: all ten, and the end.
        await eventually { queue.progress.isTotalFinal }
        #expect(queue.requestCount == 10)
        queue.go()
        await queue.run()
        let tags = transport.startedRequests.map { Int($0.url!.lastPathComponent)! }
        #expect(tags == (order == .fifo ? Array(1...10) : Array((1...10).reversed())))
    }

    @Test func prioritiesApplyToWhatWasRead() async throws {
        let transport = InMemoryTransport.instant()
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.maxConcurrentRequestCount = 1
        let requests = (1...6).map { request($0, priority: $0 % 2 == 0 ? .high : .low) }
        queue.add(contentsOf: requests)
        await eventually { queue.progress.isTotalFinal }
        queue.go()
        await queue.run()
        let tags = transport.startedRequests.map { Int($0.url!.lastPathComponent)! }
        #expect(tags == [2, 4, 6, 1, 3, 5])
    }

    @Test func cancelAllStopsReading() async throws {
        let gate = TransferGate()
        let transport = InMemoryTransport.ok(gate: gate)
        let queue = NetworkQueue.oneAttempt(transport: transport)
        let recorder = queue.recording()
        // Its reader is held inside a `next()` when the batch is cancelled: that call is the last.
        let (hold, holding) = AsyncStream<Void>.makeStream()
        var source = CountingSource(count: nil)
        (source.holdAt, source.hold) = (Self.lookAhead / 2, hold)
        queue.add(contentsOf: source)
        queue.go()
        await transport.waitUntilStarted(4)
        await eventually { source.isHeld.current }
        queue.cancelAll()
        holding.finish()
        let progress = await queue.run()
        // The reader lets go of the source without another `next()`.
        await eventually { source.released.current }
        #expect(source.calls.current == Self.lookAhead / 2)
        #expect(progress.isTotalFinal)
        #expect(progress.finishedRequestCount == 0)
        #expect(progress.cancelledRequestCount == progress.totalRequestCount)
        #expect(recorder.queueFinishedCount == 1)
        gate.open()
    }

    @Test func resetStopsReadingToo() async throws {
        let gate = TransferGate()
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok(gate: gate))
        // Held inside a `next()` at the reset, as in `cancelAllStopsReading`: a count read after `reset()` returned
        // raced the reader, which may have decided on its next call just before (once under the thread sanitizer).
        let (hold, holding) = AsyncStream<Void>.makeStream()
        var source = CountingSource(count: nil)
        (source.holdAt, source.hold) = (Self.lookAhead / 2, hold)
        queue.add(contentsOf: source)
        await eventually { source.isHeld.current }
        queue.reset()
        holding.finish()
        await eventually { source.released.current }
        #expect(source.calls.current == Self.lookAhead / 2)
        #expect(queue.requestCount == 0)
        #expect(queue.isSuspended)
        gate.open()
    }

    @Test func aThrowingSourceEndsWithATypedEventAndTheOthersRunOn() async throws {
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.instant())
        queue.cancelsAllOnFailure = false
        let recorder = queue.recording()
        let source = CountingSource(count: nil, throwsAfter: 5)
        queue.add(contentsOf: source)
        queue.go()
        let progress = await queue.run()
        #expect(progress.finishedRequestCount == 5)
        #expect(progress.totalRequestCount == 5)
        #expect(progress.isTotalFinal)
        #expect(progress.fractionCompleted == 1.0)
        let failures = recorder.events.compactMap { entry -> NetworkQueueError? in
            if case .sourceFailed(let error) = entry { error } else { nil }
        }
        #expect(failures.count == 1)
        guard case .sourceFailed(let underlying)? = failures.first else {
            Issue.record("no sourceDidFail")
            return
        }
        #expect(underlying.description == "the list could not be read")
        #expect(underlying.error is CountingSource.ReadFailure)
        #expect(source.calls.current == 6)
    }

    @Test func aThrowingSourceCancelsTheBatchWhenCancelAllOnFailureIsOn() async throws {
        // Transfers of half a second: the throw comes a few reads after the start, while the first requests still run
        // (an instant transport could end every request before it, leaving nothing to cancel).
        let queue = NetworkQueue.oneAttempt(
            transport: InMemoryTransport { _ in [.respond(status: 200), .wait(0.5)] })
        let recorder = queue.recording()
        // An endless source and one that throws at its fourth read: they take turns, so the second is read.
        let other = CountingSource(count: nil)
        queue.add(contentsOf: other)
        queue.add(contentsOf: CountingSource(count: nil, throwsAfter: 3))
        queue.go()
        let progress = await queue.run()
        #expect(progress.isTotalFinal)
        #expect(progress.cancelledRequestCount > 0)
        #expect(progress.failedRequestCount == 0)
        #expect(progress.finishedRequestCount + progress.cancelledRequestCount == progress.totalRequestCount)
        let cancelled = recorder.events.filter { entry in
            if case .fail(_, .cancelledBecauseSourceFailed) = entry { true } else { false }
        }
        #expect(cancelled.count == progress.cancelledRequestCount)
        #expect(recorder.events.filter { if case .sourceFailed = $0 { true } else { false } }.count == 1)
        // The other source was stopped too, and the drain ended once.
        await eventually { other.released.current }
        #expect(recorder.queueFinishedCount == 1)
    }

    @Test func twoEndlessSourcesTakeTurns() async throws {
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.instant())
        let first = CountingSource(count: nil)
        let second = CountingSource(count: nil)
        queue.add(contentsOf: first)
        queue.add(contentsOf: second)
        queue.go()
        // Each reader's task starts when the machine gets to it: count from when both have read.
        await eventually { first.calls.current > 0 && second.calls.current > 0 }
        let (a0, b0, finished0) = (first.calls.current, second.calls.current, queue.progress.finishedRequestCount)
        // Liveness only, not a timing: under the thread sanitizer with seven other suites on two cores these
        // requests took over a minute (alone, two seconds), so the wait is long.
        await eventually(within: 240) { queue.progress.finishedRequestCount >= finished0 + 2_000 }
        queue.cancelAll()
        await eventually { first.released.current && second.released.current }
        // A source waiting for room is served before one that asks after it: neither starves. (Over 2,000
        // requests each got several batches; a source that always asked first would have had them all.)
        let (a, b) = (first.calls.current - a0, second.calls.current - b0)
        #expect(a > Self.lookAhead && b > Self.lookAhead)
        // At most the look-ahead of them was read before the count began.
        #expect(a + b >= 2_000 - Self.lookAhead)
    }

    @Test func twoSourcesBothRunToTheirEnds() async throws {
        let transport = InMemoryTransport.instant()
        let queue = NetworkQueue.oneAttempt(transport: transport)
        let first = (1...300).map { request($0) }
        let second = (1_001...1_300).map { request($0) }
        queue.add(contentsOf: first)
        queue.add(contentsOf: second)
        queue.go()
        let progress = await queue.run()
        #expect(progress.finishedRequestCount == 600)
        #expect(first.allSatisfy { $0.state == .finished } && second.allSatisfy { $0.state == .finished })
        #expect(Set(transport.startedRequests.map(\.url)).count == 600)
    }

    @Test func progressIsEstimatedUntilTheSourceEndsThenExactlyOne() async throws {
        let body = Data(repeating: 7, count: 1_000)
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.instant(body: body))
        let recorder = queue.recording()
        queue.add(contentsOf: CountingSource(count: 2_000), expectedCount: 2_000)
        #expect(queue.progress.isTotalFinal == false)
        #expect(queue.progress.estimatedRequestCount == 2_000)
        queue.go()
        let progress = await queue.run()
        let updates = recorder.progresses.current
        #expect(updates.count > 2)
        // Never backwards; below 1.0 and not final while the source was open; exactly 1.0 at the end.
        for (earlier, later) in zip(updates, updates.dropFirst()) {
            #expect(later.fractionCompleted >= earlier.fractionCompleted)
        }
        for update in updates where !update.isTotalFinal {
            #expect(update.fractionCompleted < 1.0)
            #expect(update.bytesExpectedToReceive == nil)
        }
        #expect(updates.contains { !$0.isTotalFinal && $0.fractionCompleted > 0.1 })
        #expect(progress.isTotalFinal)
        #expect(!progress.isEstimated)
        #expect(progress.fractionCompleted == 1.0)
        #expect(progress.bytesExpectedToReceive == 2_000_000)
        #expect(progress.estimatedBytesExpectedToReceive == 2_000_000)
        #expect(updates.last?.fractionCompleted == 1.0)
    }

    @Test func aRequestAddedBeforeFailsTheSourceAndOneWhoseFileIsInUseFailsAlone() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nq-source-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let gate = TransferGate()
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok(gate: gate))
        queue.cancelsAllOnFailure = false
        let recorder = queue.recording()
        let file = directory.appendingPathComponent("one.bin")
        let holder = NetworkRequest(url: URL(string: "http://source.test/holder")!, destination: .file(file), tag: 100)
        try queue.add(holder)
        let added = request(7)
        try queue.add(added)
        let clash = NetworkRequest(url: URL(string: "http://source.test/clash")!, destination: .file(file), tag: 101)
        queue.add(contentsOf: [request(1), clash, request(2), added, request(3)])
        // Read to its failure while suspended: nothing of it is heard before go(), so that a listener that
        // subscribes now hears it all.
        await eventually { queue.progress.isTotalFinal }
        #expect(clash.state == .pending)
        #expect(!recorder.events.contains { if case .sourceFailed = $0 { true } else { false } })
        queue.go()
        await eventually { clash.state == .failed }
        #expect(clash.failure == .invalidRequest(.destinationInUse(file)))
        gate.open()
        let progress = await queue.run()
        // 1, 2 and the two added eagerly ran; 3 was never read past the request added before.
        #expect(progress.finishedRequestCount == 4)
        #expect(progress.failedRequestCount == 1)
        let failures = recorder.events.compactMap { entry -> NetworkQueueError? in
            if case .sourceFailed(let error) = entry { error } else { nil }
        }
        #expect(failures == [.sourceFailed(.init(NetworkQueueError.invalidRequest(.alreadyAdded)))])
    }
}
