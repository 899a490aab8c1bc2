import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Metrics and the log against the loopback server, over each transport.
@Suite(.admitted, .timeLimit(.minutes(10))) struct MetricsIntegrationTests {
    static func measuringQueue(_ transport: TransportKind) -> NetworkQueue {
        let queue = NetworkQueue.oneAttempt(transport: transport.make())
        queue.collectsMetrics = true
        queue.maxConcurrentRequestCount = 1
        return queue
    }

    @Test(arguments: TransportKind.allCases) func aReusedConnectionSaysSoOnTheSecondRequest(_ transport: TransportKind)
        async throws
    {
        let server = try LoopbackServer()
        let queue = Self.measuringQueue(transport)
        let first = request(server.url("/bytes/1000"), tag: 1)
        let second = request(server.url("/bytes/1000"), tag: 2)
        try queue.add(first)
        try queue.add(second)
        await queue.run()
        let one = try #require(first.metrics?.final)
        let two = try #require(second.metrics?.final)
        #expect(first.metrics?.attempts.count == 1 && one.attempt == 1)
        #expect(try first.result?.get().metrics == first.metrics)
        for metrics in [one, two] {
            #expect(metrics.timeToFirstByte != nil && metrics.timeToFirstByte! <= metrics.totalDuration)
            #expect(metrics.redirectCount == 0 && metrics.redirectDuration == 0)
        }
        switch transport {
        case .curl:
            #expect(one.isReusedConnection == false && two.isReusedConnection == true)
            #expect(one.connectDuration != nil && two.connectDuration == nil)
            #expect(one.domainLookupDuration != nil && one.secureConnectionDuration == nil)
            #expect(one.httpVersion == "HTTP/1.1")
            #expect(one.remoteAddress == "127.0.0.1" && one.remotePort == Int(server.port))
            // Head and body: more than the body, less than the body and a few hundred bytes of head.
            #expect(one.bytesReceived.map { $0 > 1000 && $0 < 2000 } == true)
            #expect(one.bytesSent.map { $0 > 20 && $0 < 1000 } == true)
        case .urlSession:
            #if canImport(FoundationNetworking)
                // FoundationNetworking delivers no URLSessionTaskMetrics: what the transport measures itself.
                #expect(one.isReusedConnection == nil && one.httpVersion == nil && one.connectDuration == nil)
                #expect(one.bytesReceived == 1000 && one.bytesSent == 0)
            #endif
        }
    }

    @Test(arguments: TransportKind.allCases) func redirectsAreCountedTimedAndLogged(_ transport: TransportKind)
        async throws
    {
        let server = try LoopbackServer()
        let queue = Self.measuringQueue(transport)
        let records = Box<[NetworkQueueLogRecord]>([])
        queue.logHandler = { record in records.with { $0.append(record) } }
        let redirected = request(server.url("/redirect/2"), tag: 1)
        try queue.add(redirected)
        await queue.run()
        #expect(redirected.state == .finished)
        let metrics = try #require(redirected.metrics?.final)
        #expect(metrics.redirectCount == 2)
        #expect(records.current.filter { $0.event == .redirectFollowed }.count == 2)
        #expect(records.current.map(\.event).first == .added && records.current.map(\.event).last == .finished)
        if transport == .curl {
            #expect(metrics.redirectDuration > 0 && metrics.redirectDuration <= metrics.timeToFirstByte!)
            #expect(metrics.bytesReceived.map { $0 > 16 } == true)
        }
    }

    @Test(arguments: TransportKind.allCases) func anUploadCountsItsBodySent(_ transport: TransportKind) async throws {
        let server = try LoopbackServer()
        let queue = Self.measuringQueue(transport)
        var urlRequest = URLRequest(url: server.url("/upload"))
        urlRequest.httpMethod = "POST"
        urlRequest.httpBody = Data(count: 100_000)
        let upload = NetworkRequest(urlRequest, tag: 1)
        try queue.add(upload)
        await queue.run()
        let metrics = try #require(upload.metrics?.final)
        let sent = try #require(metrics.bytesSent)
        #expect(sent >= 100_000 && sent < 101_000)
    }

    @Test(arguments: TransportKind.allCases) func aQueueNobodyAsksKeepsNoMetrics(_ transport: TransportKind)
        async throws
    {
        let server = try LoopbackServer()
        let queue = NetworkQueue.oneAttempt(transport: transport.make())
        let plain = request(server.url("/bytes/100"), tag: 1)
        try queue.add(plain)
        await queue.run()
        #expect(plain.state == .finished)
        #expect(plain.metrics == nil)
    }
}
