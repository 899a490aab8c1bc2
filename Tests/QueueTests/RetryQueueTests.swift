import Foundation
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Retries, adapt hooks and decoding through the whole queue, over the in-memory transport; waits are
/// on an injected clock the test moves.
@Suite(.admitted, .timeLimit(.minutes(10))) struct RetryQueueTests {
    /// A transport whose n-th transfer (1-based) follows `script(n)`.
    static func counting(_ script: @escaping @Sendable (Int) -> [InMemoryTransport.Step]) -> InMemoryTransport {
        let count = Box(0)
        return InMemoryTransport { _ in
            script(
                count.with { count in
                    count += 1
                    return count
                })
        }
    }

    static let okBody: [InMemoryTransport.Step] = [
        .respond(status: 200, headers: ["Content-Length": "3"]), .body(Data("abc".utf8)),
    ]

    /// Waits for the first willRetry of `stream`.
    static func nextRetry(_ stream: AsyncStream<NetworkQueueEvent>) async -> TimeInterval? {
        for await event in stream { if case .willRetry(_, let delay, _) = event { return delay } }
        return nil
    }

    @Test func retryAfterOneSecondWaitsOneSecondOfClockTimeNotZeroNorThree() async throws {
        let clock = ManualClock()
        let transport = Self.counting { $0 == 1 ? [.respond(status: 503, headers: ["Retry-After": "1"])] : Self.okBody }
        let queue = NetworkQueue(transport: transport, clock: clock)
        let events = queue.events()
        let request = request(1)
        try queue.add(request)
        queue.go()
        #expect(await Self.nextRetry(events) == 1)
        #expect(request.state == .waitingToRetry)
        clock.advance(by: 0.999)
        #expect(request.state == .waitingToRetry)
        #expect(transport.statistics.started == 1)
        clock.advance(by: 0.001)
        #expect(request.state != .waitingToRetry)
        await queue.run()
        #expect(request.state == .finished)
        #expect(request.attemptCount == 2)
        #expect(transport.statistics.started == 2)
        #expect(try request.result?.get().body == Data("abc".utf8))
    }

    @Test func eventsShowOneStartAndAWillRetryBetweenTheAttempts() async throws {
        let clock = ManualClock()
        let transport = Self.counting { $0 == 1 ? [.respond(status: 503, headers: ["Retry-After": "2"])] : Self.okBody }
        let queue = NetworkQueue(transport: transport, clock: clock)
        let recorder = queue.recording()
        let events = queue.events()
        try queue.add(request(4))
        queue.go()
        _ = await Self.nextRetry(events)
        clock.advance(by: 2)
        await queue.run()
        #expect(
            recorder.events == [
                .start(4), .headers(4, 503), .retry(4, 2, .unacceptableStatus(code: 503, url: url(4))),
                .headers(4, 200), .finish(4),
                .queueFinished,
            ])
    }

    @Test func noRetryPolicyFailsAtOnce() async throws {
        let transport = Self.counting { _ in [.respond(status: 503)] }
        let queue = NetworkQueue(transport: transport)
        queue.retryPolicy = .never
        let request = request(1)
        try queue.add(request)
        await queue.run()
        #expect(request.failure == .unacceptableStatus(code: 503, url: url(1)))
        #expect(request.attemptCount == 1)
        #expect(transport.statistics.started == 1)
    }

    @Test func aRequestsOwnPolicyReplacesTheQueues() async throws {
        let transport = Self.counting { _ in [.fail(URLError(.networkConnectionLost))] }
        let queue = NetworkQueue(transport: transport)
        queue.retryPolicy = .never
        let request = NetworkRequest(
            URLRequest(url: url(1)),
            retryPolicy: RetryPolicy(maximumAttempts: 4, backoff: .init(initialDelay: 0)),
            tag: 1)
        try queue.add(request)
        await queue.run()
        #expect(request.failure == .transport(URLError(.networkConnectionLost)))
        #expect(request.attemptCount == 4)
        #expect(transport.statistics.started == 4)
    }

    @Test func adaptRunsOncePerAttemptQueueHookFirst() async throws {
        let transport = Self.counting { $0 < 3 ? [.fail(URLError(.networkConnectionLost))] : Self.okBody }
        let queue = NetworkQueue(transport: transport)
        queue.retryPolicy = RetryPolicy(backoff: .init(initialDelay: 0))
        let calls = Box([String]())
        queue.adapter = { urlRequest in
            var urlRequest = urlRequest
            let n = calls.with { calls in
                calls.append("queue")
                return calls.count / 2 + 1
            }
            urlRequest.setValue("token-\(n)", forHTTPHeaderField: "Authorization")
            return urlRequest
        }
        let request = NetworkRequest(
            URLRequest(url: url(1)),
            handlers: .init(adapt: { urlRequest in
                var urlRequest = urlRequest
                calls.with { $0.append("request") }
                let token = urlRequest.value(forHTTPHeaderField: "Authorization") ?? "none"
                urlRequest.setValue("\(token)+signed", forHTTPHeaderField: "Authorization")
                return urlRequest
            }),
            tag: 1)
        try queue.add(request)
        await queue.run()
        #expect(request.state == .finished)
        #expect(calls.with { $0 } == ["queue", "request", "queue", "request", "queue", "request"])
        #expect(
            transport.startedRequests.map { $0.value(forHTTPHeaderField: "Authorization") }
                == ["token-1+signed", "token-2+signed", "token-3+signed"])
    }

    @Test func aThrowingAdaptFailsTheRequestWithTheUnderlyingErrorAndSendsNothing() async throws {
        struct TokenExpired: Error {}
        let transport = InMemoryTransport.ok()
        let queue = NetworkQueue(transport: transport)
        let recorder = queue.recording()
        queue.adapter = { _ in throw TokenExpired() }
        let request = request(1)
        try queue.add(request)
        await queue.run()
        guard case .adaptationFailed(let underlying)? = request.failure else {
            Issue.record("expected adaptationFailed, got \(String(describing: request.failure))")
            return
        }
        #expect(underlying.error is TokenExpired)
        #expect(transport.statistics.started == 0)
        // It never started: only didFail.
        #expect(recorder.events == [.fail(1, .adaptationFailed(.init(TokenExpired()))), .queueFinished])
    }

    struct Item: Decodable, Sendable, Equatable {
        let name: String
        let count: Int
    }

    @Test func aDecodedRequestReturnsItsValueAfterDidFinish() async throws {
        let json = Data(#"{"name":"disk","count":3}"#.utf8)
        let transport = InMemoryTransport { _ in [.respond(status: 200), .body(json)] }
        let queue = NetworkQueue(transport: transport)
        let recorder = queue.recording()
        let decoded = try queue.add(request(1), decoding: Item.self) { result in
            if case .success = result { recorder.append(.handler(1)) }
        }
        queue.go()
        #expect(try await decoded.value() == Item(name: "disk", count: 3))
        await queue.run()
        await eventually { recorder.events.contains(.handler(1)) }
        // The typed completion comes after the request's didFinish.
        let log = recorder.events
        #expect(try #require(log.firstIndex(of: .finish(1))) < #require(log.firstIndex(of: .handler(1))))
    }

    @Test func aBodyThatDoesNotDecodeFailsWithItsStatusAndFirstBytes() async throws {
        let page = "<html>" + String(repeating: "x", count: 400) + "</html>"
        let transport = InMemoryTransport { _ in [.respond(status: 200), .body(Data(page.utf8))] }
        let queue = NetworkQueue(transport: transport)
        let decoded = try queue.add(request(1), decoding: Item.self)
        await queue.run()
        #expect(decoded.request.state == .finished)  // the transfer itself succeeded
        do {
            _ = try await decoded.value()
            Issue.record("decoding HTML succeeded")
        } catch .decodingFailed(let failure) {
            #expect(failure.statusCode == 200)
            #expect(failure.bodyLength == page.utf8.count)
            #expect(failure.bodyPrefix.count == 256)
            #expect(failure.bodyPrefixText.hasPrefix("<html>xxx"))
            #expect(failure.underlying.error is DecodingError)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func aFailedDecodedRequestThrowsTheRequestsFailure() async throws {
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport { _ in [.respond(status: 404)] })
        let decoded = try queue.add(request(2), decoding: Item.self)
        queue.go()
        await #expect(throws: NetworkQueueError.unacceptableStatus(code: 404, url: url(2))) {
            try await decoded.value()
        }
    }

    @Test func cancellingTheTaskAwaitingAValueCancelsItsRequest() async throws {
        let gate = TransferGate()
        let queue = NetworkQueue(transport: InMemoryTransport.ok(gate: gate))
        let decoded = try queue.add(request(3), decoding: Item.self)
        queue.go()
        let waiter = Task { try await decoded.value() }
        waiter.cancel()
        await #expect(throws: NetworkQueueError.cancelled) { try await waiter.value }
        #expect(decoded.request.state == .cancelled)
        gate.open()
    }

    @Test func aCancelAllEndsDecodedRequestsThatNeverStarted() async throws {
        let queue = NetworkQueue(transport: InMemoryTransport.ok())
        let decoded = try (1...3).map { try queue.add(request($0), decoding: Item.self) }
        queue.cancelAll()
        for value in decoded { await #expect(throws: NetworkQueueError.cancelled) { try await value.value() } }
    }
}
