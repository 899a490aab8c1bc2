import Foundation
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The debug log, metrics delivery and their cost when unused, with the in-memory transport.
@Suite(.admitted, .timeLimit(.minutes(10))) struct ObservabilityTests {
    /// A queue logging into the returned box (retrying at once, when `retries`).
    static func loggingQueue(_ transport: InMemoryTransport, retries: Bool = false) -> (
        NetworkQueue, Box<[NetworkQueueLogRecord]>
    ) {
        let queue = retries ? NetworkQueue(transport: transport) : NetworkQueue.oneAttempt(transport: transport)
        if retries { queue.retryPolicy = RetryPolicy(backoff: .init(initialDelay: 0, jitter: false)) }
        let records = Box<[NetworkQueueLogRecord]>([])
        queue.logHandler = { record in records.with { $0.append(record) } }
        return (queue, records)
    }

    static func events(_ records: Box<[NetworkQueueLogRecord]>) -> [NetworkQueueLogRecord.Event] {
        records.current.map(\.event)
    }

    @Test func aSuccessLogsEachDecisionInOrder() async throws {
        let (queue, records) = Self.loggingQueue(InMemoryTransport.ok("hello"))
        let request = request(1)
        try queue.add(request)
        await queue.run()
        #expect(Self.events(records) == [.added, .attemptStarted, .headReceived, .finished])
        #expect(records.current.map(\.level) == [.info, .debug, .debug, .info])
        #expect(
            records.current.map(\.message).prefix(3) == [
                "GET http://example.test/1", "attempt 1: GET http://example.test/1", "200, 5 bytes",
            ])
        #expect(records.current[3].message.hasPrefix("200, 5 bytes in "))
        #expect(records.current.allSatisfy { $0.request === request })
        #expect(records.current.map(\.timestamp) == records.current.map(\.timestamp).sorted())
    }

    @Test func aRetryIsLoggedWithItsDelayAndReason() async throws {
        let attempts = Box(0)
        let transport = InMemoryTransport { _ in
            attempts.with {
                $0 += 1
                return $0
            } == 1
                ? [.respond(status: 503, headers: ["Content-Length": "0"])]
                : [.respond(status: 200, headers: ["Content-Length": "2"]), .body(Data("ok".utf8))]
        }
        let (queue, records) = Self.loggingQueue(transport, retries: true)
        try queue.add(request(1))
        await queue.run()
        #expect(
            Self.events(records) == [
                .added, .attemptStarted, .headReceived, .retryScheduled, .attemptStarted, .headReceived, .finished,
            ])
        // Retries are counted as retries: the first of two (three attempts) is 1/2, as the Demo's rows say.
        #expect(records.current[3].message == "retry 1/2 in 0.00 s: HTTP status 503 from http://example.test/1")
        #expect(records.current[3].level == .notice)
        #expect(records.current[4].message == "attempt 2: GET http://example.test/1")
    }

    @Test func redirectsFollowedAndRefusedAreLogged() async throws {
        let refusal = URLError(.appTransportSecurityRequiresSecureConnection)
        let transport = InMemoryTransport { urlRequest in
            let from = urlRequest.url!
            if tag(of: urlRequest) == 1 {
                return [
                    .redirect(
                        TransferRedirect(statusCode: 301, from: from, to: URL(string: "http://example.test/moved")!)),
                    .respond(status: 200, headers: ["Content-Length": "0"]),
                ]
            }
            return [
                .redirect(
                    TransferRedirect(
                        statusCode: 302, from: from, to: URL(string: "http://plain.test/x")!, refusal: refusal)),
                .fail(refusal),
            ]
        }
        let (queue, records) = Self.loggingQueue(transport)
        queue.cancelsAllOnFailure = false
        queue.maxConcurrentRequestCount = 1
        try queue.add(request(1))
        try queue.add(request(2))
        await queue.run()
        let first = records.current.filter { $0.request.tag == 1 }
        let second = records.current.filter { $0.request.tag == 2 }
        #expect(first.map(\.event) == [.added, .attemptStarted, .redirectFollowed, .headReceived, .finished])
        #expect(first[2].message == "301 redirect followed to http://example.test/moved")
        #expect(second.map(\.event) == [.added, .attemptStarted, .redirectRefused, .failed])
        #expect(
            second[2].message
                == "302 redirect to http://plain.test/x refused: transfer failed: refused a redirect from https to http"
        )
        #expect(second[2].level == .warning)
        #expect(second[3].message == "after 1 attempt: transfer failed: refused a redirect from https to http")
        #expect(second[3].level == .error)
    }

    @Test func pauseResumeAndCancelAreLogged() async throws {
        let gate = TransferGate()
        // Held before its head: the pause stops a transfer that has reported nothing yet.
        let transport = InMemoryTransport { _ in
            [.hold(gate), .respond(status: 200, headers: ["Content-Length": "0"])]
        }
        let (queue, records) = Self.loggingQueue(transport)
        let request = request(1)
        try queue.add(request)
        queue.go()
        await transport.waitUntilStarted(1)
        #expect(queue.pause(request))
        #expect(queue.resume(request))
        await transport.waitUntilStarted(2)
        queue.cancel(request)
        await queue.run()
        gate.open()
        #expect(Self.events(records) == [.added, .attemptStarted, .paused, .resumed, .attemptStarted, .cancelled])
        #expect(records.current.last?.message == "cancelled")
    }

    @Test func checksumsAreLoggedVerifiedOrFailed() async throws {
        // SHA-256 of "hello".
        let good = Checksum.sha256("2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824")
        let bad = Checksum.sha256(String(repeating: "0", count: 64))
        let (queue, records) = Self.loggingQueue(InMemoryTransport.ok("hello"))
        queue.cancelsAllOnFailure = false
        queue.maxConcurrentRequestCount = 1
        try queue.add(NetworkRequest(URLRequest(url: url(1)), integrity: .init(checksum: good), tag: 1))
        try queue.add(NetworkRequest(URLRequest(url: url(2)), integrity: .init(checksum: bad), tag: 2))
        await queue.run()
        #expect(
            records.current.filter { $0.request.tag == 1 }.map(\.event) == [
                .added, .attemptStarted, .headReceived, .checksumVerified, .finished,
            ])
        #expect(
            records.current.filter { $0.request.tag == 2 }.map(\.event) == [
                .added, .attemptStarted, .headReceived, .checksumFailed, .failed,
            ])
        #expect(records.current.first { $0.event == .checksumVerified }?.message == "checksum verified (sha256)")
    }

    @Test func noHandlerMeansNoRecordsAndSettingOneLaterLogsFromThen() async throws {
        let (queue, records) = Self.loggingQueue(InMemoryTransport.ok())
        queue.logHandler = nil
        try queue.add(request(1))
        await queue.run()
        #expect(records.current.isEmpty)
        queue.logHandler = { record in records.with { $0.append(record) } }
        try queue.add(request(2))
        await queue.run()
        #expect(records.current.map(\.request.tag) == [2, 2, 2, 2])
    }
}

/// Metrics reach the delegate, the events, the request and its response, and are asked for only when read.
@Suite(.admitted, .timeLimit(.minutes(10))) struct MetricsDeliveryTests {
    final class MetricsRecorder: NetworkQueueDelegate {
        let seen = Box<[String]>([])
        func networkQueue(_ queue: NetworkQueue, didCollectMetrics request: NetworkRequest, metrics: TransferMetrics) {
            seen.with { $0.append("metrics \(request.tag) \(metrics.attempt)") }
        }
        func networkQueue(
            _ queue: NetworkQueue, willRetry request: NetworkRequest, after delay: TimeInterval,
            error: NetworkQueueError
        ) {
            seen.with { $0.append("retry \(request.tag)") }
        }
        func networkQueue(_ queue: NetworkQueue, didFinish request: NetworkRequest, response: NetworkResponse) {
            seen.with { $0.append("finish \(request.tag)") }
        }
    }

    /// Answers 503 first (the queue stops that transfer at its head), then 200 with metrics whose total is 2 s.
    static func flakyMeasuringTransport() -> InMemoryTransport {
        let attempts = Box(0)
        return InMemoryTransport { _ in
            let attempt = attempts.with {
                $0 += 1
                return $0
            }
            let metrics = TransferMetrics(
                totalDuration: Double(attempt), httpVersion: "HTTP/1.1", isReusedConnection: attempt > 1)
            return attempt == 1
                ? [.respond(status: 503, headers: ["Content-Length": "0"]), .metrics(metrics)]
                : [.respond(status: 200, headers: ["Content-Length": "2"]), .body(Data("ok".utf8)), .metrics(metrics)]
        }
    }

    @Test func eachAttemptsMetricsReachTheDelegateTheRequestAndTheResponse() async throws {
        let transport = Self.flakyMeasuringTransport()
        let queue = NetworkQueue(transport: transport)
        queue.retryPolicy = RetryPolicy(backoff: .init(initialDelay: 0, jitter: false))
        let delegate = MetricsRecorder()
        queue.delegate = delegate
        // A delegate that reads metrics asks for them: nothing is detected at run time.
        queue.collectsMetrics = true
        let request = request(1)
        try queue.add(request)
        await queue.run()
        #expect(delegate.seen.current == ["metrics 1 1", "retry 1", "metrics 1 2", "finish 1"])
        #expect(transport.metricsAsked == [true, true])
        let metrics = try #require(request.metrics)
        #expect(metrics.attempts.map(\.attempt) == [1, 2])
        // The 503 attempt, stopped by the queue at its head: measured on the queue's clock.
        let stopped = metrics.attempts[0]
        #expect(stopped.httpVersion == "HTTP/1.1")
        #expect(stopped.timeToFirstByte != nil && stopped.timeToFirstByte! <= stopped.totalDuration)
        #expect(stopped.bytesReceived == nil && stopped.isReusedConnection == nil)
        #expect(
            metrics.final
                == TransferMetrics(attempt: 2, totalDuration: 2, httpVersion: "HTTP/1.1", isReusedConnection: true))
        #expect(try request.result?.get().metrics == metrics)
    }

    @Test func nobodyReadingMeansNoMetricsAskedOrKept() async throws {
        let transport = Self.flakyMeasuringTransport()
        let queue = NetworkQueue(transport: transport)
        queue.retryPolicy = RetryPolicy(backoff: .init(initialDelay: 0, jitter: false))
        let request = request(1)
        try queue.add(request)
        await queue.run()
        #expect(transport.metricsAsked == [false, false])
        #expect(request.metrics == nil)
        #expect(try request.result?.get().metrics == nil)
    }

    @Test func aDelegateAloneIsNeverAskedForMetricsUntilTheSettingSaysSo() async throws {
        let transport = InMemoryTransport { _ in
            [.respond(status: 200, headers: ["Content-Length": "0"]), .metrics(TransferMetrics(totalDuration: 0.5))]
        }
        let queue = NetworkQueue.oneAttempt(transport: transport)
        let delegate = MetricsRecorder()
        queue.delegate = delegate
        try queue.add(request(1))
        await queue.run()
        #expect(transport.metricsAsked == [false])
        #expect(delegate.seen.current == ["finish 1"])
        queue.collectsMetrics = true
        let second = request(2)
        try queue.add(second)
        await queue.run()
        #expect(transport.metricsAsked == [false, true])
        #expect(delegate.seen.current == ["finish 1", "metrics 2 1", "finish 2"])
        #expect(second.metrics?.attempts == [TransferMetrics(attempt: 1, totalDuration: 0.5)])
    }

    @Test func anEventsSubscriberHearsMetricsInOrder() async throws {
        let transport = InMemoryTransport { _ in
            [.respond(status: 200, headers: ["Content-Length": "0"]), .metrics(TransferMetrics(totalDuration: 0.25))]
        }
        let queue = NetworkQueue.oneAttempt(transport: transport)
        let stream = queue.events()
        try queue.add(request(4))
        queue.go()
        var names: [String] = []
        for await event in stream {
            switch event {
            case .didCollectMetrics(let request, let metrics):
                names.append("metrics \(request.tag) \(metrics.attempt) \(metrics.totalDuration)")
            case .didFinish(let request, _): names.append("finish \(request.tag)")
            case .queueDidFinish: names.append("done")
            default: continue
            }
            if names.last == "done" { break }
        }
        #expect(names == ["metrics 4 1 0.25", "finish 4", "done"])
        #expect(transport.metricsAsked == [true])
    }
}
