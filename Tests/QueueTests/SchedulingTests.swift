import Foundation
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.admitted, .timeLimit(.minutes(10))) struct SchedulingTests {
    @Test(arguments: [1, 3, 8])
    func neverMoreThanTheLimitInFlight(limit: Int) async throws {
        let gate = TransferGate()
        let transport = InMemoryTransport.ok(gate: gate)
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.maxConcurrentRequestCount = limit
        for tag in 1...20 { try queue.add(request(tag)) }
        queue.go()
        // go() starts transfers on the queue's launcher thread: wait for them; the gate holds them all, so
        // exactly `limit` are running then.
        await transport.waitUntilStarted(limit)
        #expect(transport.statistics.started == limit)
        #expect(queue.requests.filter { $0.state == .running }.count == limit)
        gate.open()
        await queue.run()
        #expect(transport.statistics.maxInFlight == limit)
        #expect(transport.statistics.started == 20)
    }

    @Test func zeroLimitStartsEverythingAtOnce() async throws {
        let transport = InMemoryTransport.ok(gate: TransferGate())
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.maxConcurrentRequestCount = 0
        for tag in 1...50 { try queue.add(request(tag)) }
        queue.go()
        await transport.waitUntilStarted(50)
        #expect(transport.statistics.started == 50)
        queue.cancelAll()
    }

    @Test func defaultsAreAsInASINetworkQueue() {
        let queue = NetworkQueue(transport: InMemoryTransport.ok())
        #expect(queue.retryPolicy.maximumAttempts == 3)
        #expect(queue.adapter == nil)
        #expect(queue.maxConcurrentRequestCount == 4)
        #expect(queue.order == .fifo)
        #expect(queue.cancelsAllOnFailure)
        #expect(!queue.showsAccurateProgress)
        #expect(queue.isSuspended)
    }

    @Test(arguments: [SchedulingOrder.fifo, .lifo])
    func startOrderWithLimitOne(order: SchedulingOrder) async throws {
        let transport = InMemoryTransport.ok()
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.maxConcurrentRequestCount = 1
        queue.order = order
        for tag in 1...6 { try queue.add(request(tag)) }
        await queue.run()
        let expected = order == .fifo ? Array(1...6) : Array((1...6).reversed())
        #expect(transport.startedRequests.map(tag(of:)) == expected)
    }

    @Test func raisingTheLimitStartsMoreAtOnceAndLoweringLetsRunningFinish() async throws {
        let gated = try GatedQueue(limit: 1, count: 6)
        let (queue, transport, gate) = (gated.queue, gated.transport, gated.gate)
        queue.go()
        await transport.waitUntilStarted(1)
        #expect(transport.statistics.started == 1)
        queue.maxConcurrentRequestCount = 3
        await transport.waitUntilStarted(3)
        #expect(transport.statistics.started == 3)
        queue.maxConcurrentRequestCount = 1
        #expect(queue.requests.filter { $0.state == .running }.count == 3)
        gate.open()
        await queue.run()
        #expect(transport.statistics.started == 6)
        #expect(transport.statistics.maxInFlight == 3)
    }

    @Test func suspendStopsNewStartsButRunningRequestsFinish() async throws {
        let gated = try GatedQueue(limit: 2, count: 4)
        let (queue, transport, gate, recorder, requests) = (
            gated.queue, gated.transport, gated.gate, gated.recorder, gated.requests
        )
        queue.go()
        queue.suspend()
        #expect(queue.isSuspended)
        let finished = Box(0)
        let stream = queue.events()
        gate.open()
        for await event in stream {
            if case .didFinish = event { finished.with { $0 += 1 } }
            if finished.current == 2 { break }
        }
        #expect(requests.map(\.state) == [.finished, .finished, .pending, .pending])
        #expect(transport.statistics.started == 2)
        await queue.run()
        #expect(requests.map(\.state) == [.finished, .finished, .finished, .finished])
        #expect(recorder.queueFinishedCount == 1)
    }

    @Test func cancelledPendingRequestNeverStartsAndGetsOnlyDidFail() async throws {
        let gated = try GatedQueue(limit: 1, count: 3)
        let (queue, transport, gate, recorder, requests) = (
            gated.queue, gated.transport, gated.gate, gated.recorder, gated.requests
        )
        queue.go()
        queue.cancel(requests[1])
        #expect(requests[1].state == .cancelled)
        gate.open()
        await queue.run()
        #expect(transport.startedRequests.map(tag(of:)) == [1, 3])
        #expect(recorder.events.filter { $0 == .start(2) || $0 == .fail(2, .cancelled) } == [.fail(2, .cancelled)])
        #expect(recorder.queueFinishedCount == 1)
    }

    @Test func cancellingARunningRequestIsReportedAtOnceAndFreesItsSlot() async throws {
        let gated = try GatedQueue(limit: 1, count: 2)
        let (queue, transport, gate, requests) = (gated.queue, gated.transport, gated.gate, gated.requests)
        queue.go()
        queue.cancel(requests[0])
        #expect(requests[0].state == .cancelled)
        #expect(requests[0].failure == .cancelled)
        await transport.waitUntilStarted(2)
        #expect(transport.statistics.started == 2)
        gate.open()
        await queue.run()
        #expect(requests[1].state == .finished)
    }
}

/// Counts `startTransfer` calls made on a thread while that thread is inside one of the queue's methods.
final class ThreadRecordingTransport: Transport {
    let inner = InMemoryTransport.ok(gate: TransferGate())
    /// The thread now inside a queue method, if any.
    let callerInside = Box(UInt?.none)
    let startsOnCaller = Box(0)

    func startTransfer(
        _ request: URLRequest, options: TransferOptions, events: @escaping @Sendable (TransferEvent) -> Void
    ) -> any TransferHandle {
        let thread = currentThreadID()
        if callerInside.with({ $0 == thread }) { startsOnCaller.with { $0 += 1 } }
        return inner.startTransfer(request, events: events)
    }

    /// Runs `body` marked as the caller's call.
    func asCaller(_ body: () throws -> Void) rethrows {
        callerInside.with { $0 = currentThreadID() }
        defer { callerInside.with { $0 = nil } }
        try body()
    }
}

func currentThreadID() -> UInt {
    #if canImport(Glibc)
        UInt(pthread_self())
    #else
        UInt(bitPattern: pthread_self())
    #endif
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct CallerThreadTests {
    @Test func goAddAndSetLimitNeverStartTransfersOnTheCallersThread() async throws {
        let transport = ThreadRecordingTransport()
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.maxConcurrentRequestCount = 2
        for tag in 1...4 { try queue.add(request(tag)) }
        try transport.asCaller {
            queue.go()
            try queue.add(request(5))
            queue.maxConcurrentRequestCount = 5
        }
        await transport.inner.waitUntilStarted(5)
        #expect(transport.inner.statistics.started == 5)
        #expect(transport.startsOnCaller.with { $0 } == 0)
        queue.cancelAll()
        await queue.run()
    }
}
