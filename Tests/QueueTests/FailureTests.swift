import Foundation
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
@Suite(.admitted, .timeLimit(.minutes(10))) struct FailureTests {
    @Test
    func aFailureCancelsEveryOtherRequestByDefault() async throws {
        // The gate stays closed: request 2's transfer can only end by being cancelled. Request 1 answers only
        // once request 2's transfer has started (else its failure could come first and cancel 2 unstarted).
        let gate = TransferGate()
        let bothStarted = TransferGate()
        let transport = InMemoryTransport { urlRequest in
            tag(of: urlRequest) == 1
                ? [.hold(bothStarted), .respond(status: 404, headers: ["Content-Length": "0"])]
                : [.respond(status: 200), .hold(gate), .body(Data("z".utf8))]
        }
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.maxConcurrentRequestCount = 2
        let recorder = queue.recording()
        for tag in 1...5 { try queue.add(request(tag)) }
        queue.go()
        await transport.waitUntilStarted(2)
        bothStarted.open()
        await queue.run()
        let sibling = NetworkQueueError.cancelledBecauseSiblingFailed(sibling: url(1))
        let terminal = recorder.events.filter {
            if case .fail = $0 { true } else { $0 == .queueFinished }
        }
        #expect(
            terminal == [
                .fail(1, .unacceptableStatus(code: 404, url: url(1))), .fail(2, sibling), .fail(3, sibling),
                .fail(4, sibling), .fail(5, sibling), .queueFinished,
            ])
        // Request 2 was running and got cancelled; 3 to 5 never started.
        await transport.waitUntilIdle()
        #expect(transport.statistics.started == 2)
        // (Request 1's own transfer may also be cancelled, racing its natural end: it is not asserted.)
        #expect(transport.cancelledRequests.map(tag(of:)).filter { $0 != 1 } == [2])
    }

    @Test func withCancelAllOnFailureOffTheOthersFinish() async throws {
        let gate = TransferGate()
        gate.open()
        let queue = NetworkQueue.oneAttempt(transport: transport(failing: 2, status: 500, gate: gate))
        queue.cancelsAllOnFailure = false
        let recorder = queue.recording()
        for tag in 1...4 { try queue.add(request(tag)) }
        let progress = await queue.run()
        #expect(recorder.events.contains(.fail(2, .unacceptableStatus(code: 500, url: url(2)))))
        #expect([1, 3, 4].allSatisfy { recorder.events.contains(.finish($0)) })
        #expect(progress.finishedRequestCount == 3 && progress.failedRequestCount == 1)
        // The failed request had no body to wait for, so all the work that still counted was done.
        #expect(progress.fractionCompleted == 1)
        #expect(recorder.queueFinishedCount == 1)
    }

    @Test func cancellingOneRequestDoesNotCancelItsSiblings() async throws {
        let gated = try GatedQueue(count: 3)
        let (queue, gate, requests) = (gated.queue, gated.gate, gated.requests)
        queue.go()
        queue.cancel(requests[0])
        gate.open()
        await queue.run()
        #expect(requests.map(\.state) == [.cancelled, .finished, .finished])
    }

    @Test func statusValidationIsConfigurable() async throws {
        let transport = InMemoryTransport { _ in [.respond(status: 404, headers: ["Content-Length": "0"])] }
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.cancelsAllOnFailure = false
        let strict = request(1)
        let anything = request(2, acceptable: nil)
        let wide = request(3, acceptable: 200..<500)
        for request in [strict, anything, wide] { try queue.add(request) }
        await queue.run()
        #expect(strict.state == .failed)
        #expect(strict.failure == .unacceptableStatus(code: 404, url: url(1)))
        #expect(anything.state == .finished)
        #expect(wide.state == .finished)
    }

    @Test func contentTypeValidationComparesTheMimeTypeOnly() async throws {
        let transport = InMemoryTransport { urlRequest in
            let type = tag(of: urlRequest) == 1 ? "Application/JSON; charset=utf-8" : "text/html"
            return [
                .respond(status: 200, headers: ["Content-Type": type, "Content-Length": "2"]), .body(Data("{}".utf8)),
            ]
        }
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.cancelsAllOnFailure = false
        let json = NetworkRequest(
            URLRequest(url: url(1)), validation: .init(acceptableContentTypes: ["application/json"]))
        let html = NetworkRequest(
            URLRequest(url: url(2)), validation: .init(acceptableContentTypes: ["application/json"]))
        try queue.add(json)
        try queue.add(html)
        await queue.run()
        #expect(json.state == .finished)
        #expect(html.failure == .unacceptableContentType("text/html", url: url(2)))
    }

    @Test func aContentLengthOverTheLimitFailsBeforeAnyBody() async throws {
        let transport = InMemoryTransport { _ in
            [
                .respond(status: 200, headers: ["Content-Length": "1000000"]), .hold(TransferGate()),
                .body(Data(count: 10)),
            ]
        }
        let queue = NetworkQueue.oneAttempt(transport: transport)
        let large = NetworkRequest(URLRequest(url: url(1)), validation: .init(maximumResponseSize: 1_000))
        try queue.add(large)
        let progress = await queue.run()
        #expect(large.failure == .responseTooLarge(limit: 1_000, url: url(1)))
        #expect(progress.bytesReceived == 0)
    }

    @Test func badInputFailsWithAClearErrorAndNeverStarts() async throws {
        let transport = InMemoryTransport.ok()
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.cancelsAllOnFailure = false
        let recorder = queue.recording()
        var noURL = URLRequest(url: url(0))
        noURL.url = nil
        let cases: [(URLRequest, NetworkQueueError.InvalidRequestReason)] = [
            (URLRequest(url: URL(string: "ftp://example.test/file")!), .unsupportedScheme("ftp")),
            (URLRequest(url: URL(string: "file:///etc/hosts")!), .unsupportedScheme("file")),
            (URLRequest(url: URL(string: "relative/path")!), .unsupportedScheme(nil)),
            (URLRequest(url: URL(string: "http:///nohost")!), .missingHost(URL(string: "http:///nohost")!)),
            (noURL, .missingURL),
        ]
        for (tag, (urlRequest, _)) in cases.enumerated() { try queue.add(NetworkRequest(urlRequest, tag: tag)) }
        try queue.add(request(99))
        await queue.run()
        for (tag, (_, reason)) in cases.enumerated() {
            #expect(
                recorder.events.filter { $0 == .start(tag) || $0 == .fail(tag, .invalidRequest(reason)) } == [
                    .fail(tag, .invalidRequest(reason))
                ])
        }
        #expect(recorder.events.contains(.finish(99)))
        #expect(transport.startedRequests.map(tag(of:)) == [99])
    }

    @Test func severalInvalidRequestsWithCancelAllOnFailureEachGetExactlyOneTerminalEvent() async throws {
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok())
        queue.maxConcurrentRequestCount = 4
        let recorder = queue.recording()
        for tag in 1...3 {
            try queue.add(NetworkRequest(URLRequest(url: URL(string: "ftp://x.test/\(tag)")!), tag: tag))
        }
        for tag in 4...5 { try queue.add(request(tag)) }
        await queue.run()
        let terminals = recorder.events.compactMap { entry -> Int? in
            switch entry {
            case .finish(let tag), .fail(let tag, _): tag
            default: nil
            }
        }
        // Request 1 fails first; the others are cancelled before any of them starts.
        let sibling = NetworkQueueError.cancelledBecauseSiblingFailed(sibling: URL(string: "ftp://x.test/1"))
        #expect(
            recorder.events == [.fail(1, .invalidRequest(.unsupportedScheme("ftp")))]
                + (2...5).map { .fail($0, sibling) }
                + [.queueFinished])
        #expect(terminals.sorted() == [1, 2, 3, 4, 5])
        #expect(queue.requestCount == 0)
    }

    @Test func tenThousandInvalidRequestsInARowFailOneByOneWithoutRecursing() async throws {
        let transport = InMemoryTransport.ok()
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.cancelsAllOnFailure = false
        queue.maxConcurrentRequestCount = 1
        let invalid = (1...10_000).map { NetworkRequest(URLRequest(url: URL(string: "file:///tmp/\($0)")!), tag: $0) }
        for request in invalid { try queue.add(request) }
        try queue.add(request(0))
        let progress = await queue.run()
        #expect(invalid.allSatisfy { $0.failure == .invalidRequest(.unsupportedScheme("file")) })
        #expect(progress.failedRequestCount == 10_000)
        #expect(progress.finishedRequestCount == 1)
        #expect(transport.startedRequests.map(tag(of:)) == [0])
    }

    @Test func addingTheSameRequestTwiceThrows() throws {
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok())
        let other = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok())
        let request = request(1)
        try queue.add(request)
        #expect(throws: NetworkQueueError.invalidRequest(.alreadyAdded)) { try queue.add(request) }
        #expect(throws: NetworkQueueError.invalidRequest(.alreadyAdded)) { try other.add(request) }
        #expect(queue.requestCount == 1)
        #expect(other.requestCount == 0)
    }

    @Test func negativeLimitIsClampedToUnlimited() {
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok())
        queue.maxConcurrentRequestCount = -5
        #expect(queue.maxConcurrentRequestCount == 0)
    }

    @Test func resetCancelsEverythingAndTheQueueCanBeUsedAgain() async throws {
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok(gate: TransferGate()))
        let recorder = queue.recording()
        let first = (1...3).map { request($0) }
        for request in first { try queue.add(request) }
        queue.go()
        queue.reset()
        #expect(first.map(\.state) == [.cancelled, .cancelled, .cancelled])
        #expect(queue.isSuspended)
        #expect(queue.progress == .zero)
        #expect(queue.requestCount == 0)
        let again = request(4)
        try queue.add(again)
        #expect(again.state == .pending)
        queue.cancelAll()
        await queue.run()
        #expect(recorder.queueFinishedCount == 2)
    }

    @Test func subSecondTimeoutFailsWithTimedOut() async throws {
        // The transfer never moves a byte; the queue's clock is driven by hand, so nothing waits for real.
        let clock = ManualClock()
        let transport = InMemoryTransport { _ in [.hold(TransferGate())] }
        let queue = NetworkQueue.oneAttempt(transport: transport, clock: clock)
        let request = request(1, timeout: 0.2)
        try queue.add(request)
        queue.go()
        await transport.waitUntilStarted(1)
        clock.advance(by: 0.19)
        #expect(request.state == .running)
        clock.advance(by: 0.01)
        #expect(request.state == .failed)
        await queue.run()
        #expect(request.transportErrorCode == .timedOut)
        await transport.waitUntilIdle()
        #expect(transport.statistics.cancelled == 1)
    }

    @Test func aCancelledRequestStaysCancelledWhenTheTransportLaterSucceeds() async throws {
        let transport = StubbornTransport()
        let queue = NetworkQueue.oneAttempt(transport: transport)
        let recorder = queue.recording()
        let request = request(1)
        try queue.add(request)
        queue.go()
        await transport.waitUntilStarted()  // the launch is asynchronous: cancel what the transport has seen
        queue.cancel(request)
        await queue.run()
        // The transport ignored the cancel and now reports a full success; the queue must drop it.
        transport.deliverLateSuccess()
        #expect(transport.pending.current.count == 1)
        await queue.run()  // flushes anything the late events might have posted
        #expect(request.state == .cancelled)
        #expect(recorder.events == [.start(1), .fail(1, .cancelled), .queueFinished])
        #expect(queue.progress.bytesReceived == 0)
    }

    @Test func aSecondResponseRestartsTheBytesInsteadOfCountingTwice() async throws {
        let transport = InMemoryTransport { _ in
            [
                .respond(status: 200, headers: ["Content-Length": "4"]), .body(Data("ab".utf8)),
                .respond(status: 200, headers: ["Content-Length": "4"]), .body(Data("abcd".utf8)),
            ]
        }
        let queue = NetworkQueue.oneAttempt(transport: transport)
        let request = request(1)
        try queue.add(request)
        let progress = await queue.run()
        #expect(try request.result?.get().body == Data("abcd".utf8))
        #expect(progress.bytesReceived == 4)
        #expect(progress.bytesExpectedToReceive == 4)
        #expect(progress.fractionCompleted == 1)
    }

    @Test func transportErrorsAndTooLargeBodiesFail() async throws {
        let transport = InMemoryTransport { urlRequest in
            tag(of: urlRequest) == 1
                ? [.respond(status: 200), .body(Data(count: 10)), .fail(URLError(.networkConnectionLost))]
                : [.respond(status: 200), .body(Data(count: 600))]
        }
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.cancelsAllOnFailure = false
        let lost = request(1)
        let large = NetworkRequest(URLRequest(url: url(2)), validation: .init(maximumResponseSize: 500))
        try queue.add(lost)
        try queue.add(large)
        await queue.run()
        #expect(lost.transportErrorCode == .networkConnectionLost)
        #expect(large.failure == .responseTooLarge(limit: 500, url: url(2)))
    }
}
