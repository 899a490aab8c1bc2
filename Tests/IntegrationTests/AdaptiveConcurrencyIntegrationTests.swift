import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// ``NetworkQueue/adaptiveConcurrency`` over real transports against loopback servers shaped by load (issue 75). The
/// verdicts are bounds the queue guarantees whatever the machine's speed: never above a cap, never back to a level a
/// server refused, every file fetched; how fast the level is found is the benchmark's (`--only adaptive`).
@Suite(.admitted, .timeLimit(.minutes(10))) struct AdaptiveConcurrencyIntegrationTests {
    /// The levels the log announced, in order: (from, to, in flight at an overload or nil).
    static func changes(_ log: Box<[NetworkQueueLogRecord]>) -> [(from: Int, to: Int, overloadedWith: Int?)] {
        // A server's lines (the queue's own begin "the queue:").
        log.with { $0 }.filter { $0.event == .concurrencyChanged && $0.message.hasPrefix("http") }.compactMap {
            record in
            let text = record.message
            guard let arrow = text.range(of: " → "),
                let end = text.range(of: " at a time", range: arrow.upperBound..<text.endIndex)
            else { return nil }
            let from = Int(text[..<arrow.lowerBound].split(separator: " ").last ?? "") ?? -1
            let to = Int(text[arrow.upperBound..<end.lowerBound]) ?? -1
            var overloaded: Int?
            if let with = text.range(of: "overloaded with ") {
                overloaded = Int(text[with.upperBound...].prefix { $0.isNumber })
            }
            return (from, to, overloaded)
        }
    }

    static func queue(_ transport: TransportKind) -> (NetworkQueue, Box<[NetworkQueueLogRecord]>) {
        let queue = NetworkQueue(transport: transport.make())
        queue.showsAccurateProgress = false
        let log = Box<[NetworkQueueLogRecord]>([])
        queue.logHandler = { record in log.with { $0.append(record) } }
        return (queue, log)
    }

    @Test(arguments: TransportKind.allCases) func theLevelNeverPassesTheCapsTheUserSet(_ transport: TransportKind)
        async throws
    {
        let server = try LoopbackServer()
        defer { server.stop() }
        for (maximum, perHost, key) in [(5, 0, "a"), (64, 3, "b")] {
            let (queue, log) = Self.queue(transport)
            queue.maxConcurrentRequestCount = 64
            queue.maxConcurrentRequestsPerHost = perHost
            queue.adaptiveConcurrency = AdaptiveConcurrency(maximum: maximum)
            #expect(queue.adaptiveConcurrency?.maximum == maximum)
            for index in 0..<150 {
                try queue.add(NetworkRequest(url: server.url("/crowd/2000?max=1000&ms=10&key=\(key)&i=\(index)")))
            }
            let progress = await queue.run()
            #expect(progress.finishedRequestCount == 150)
            let bound = perHost > 0 ? min(perHost, maximum) : maximum
            #expect(server.peakCrowd(key: key) <= bound, "\(server.peakCrowd(key: key))")
            #expect(Self.changes(log).allSatisfy { $0.to <= maximum }, "\(Self.changes(log))")
        }
    }

    @Test(arguments: TransportKind.allCases) func aServerThatRefusesACrowdIsNeverAskedAtARefusedLevelAgain(
        _ transport: TransportKind
    ) async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        let (queue, log) = Self.queue(transport)
        queue.maxConcurrentRequestCount = 16
        queue.adaptiveConcurrency = AdaptiveConcurrency(maximum: 16)
        queue.retryPolicy = RetryPolicy(
            maximumAttempts: 30, backoff: RetryPolicy.Backoff(initialDelay: 0.01, maximumDelay: 0.05))
        for index in 0..<300 { try queue.add(NetworkRequest(url: server.url("/crowd/1000?max=6&ms=20&i=\(index)"))) }
        let progress = await queue.run()
        #expect(progress.finishedRequestCount == 300)
        #expect(progress.concurrencyLevel != nil)
        // After an overload with N in flight, no level reaches N again (the ceiling holds for 300 s, longer than this).
        var ceiling = Int.max
        for change in Self.changes(log) {
            #expect(change.to < ceiling, "\(Self.changes(log))")
            if let refused = change.overloadedWith { ceiling = min(ceiling, refused) }
        }
        // Every refusal came with more than 6 in flight, and the queue never asked for more than its cap.
        #expect(server.peakCrowd() <= 16)
    }
}

extension AdaptiveConcurrencyIntegrationTests {
    /// The queue's own level: over a hundred servers with no limit of their own (each a key of the latency route), the
    /// queue grows from 4 toward its limit, never past it, and says so in the log.
    @Test func theQueuesOwnLevelGrowsWithinItsLimit() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        let (queue, log) = Self.queue(.curl)
        queue.maxConcurrentRequestCount = 24
        queue.adaptiveConcurrency = AdaptiveConcurrency(maximum: 64)
        for index in 0..<400 {
            try queue.add(NetworkRequest(url: server.url("/crowd/1000?max=1000&ms=20&key=q&i=\(index)")))
        }
        let progress = await queue.run()
        #expect(progress.finishedRequestCount == 400)
        #expect(server.peakCrowd(key: "q") <= 24)
        let queueLevels = log.with { $0 }.filter {
            $0.event == .concurrencyChanged && $0.message.hasPrefix("the queue:")
        }
        .compactMap { record in
            record.message.range(of: " → ").flatMap { Int(record.message[$0.upperBound...].prefix { $0.isNumber }) }
        }
        #expect(queueLevels.allSatisfy { (1...24).contains($0) }, "\(queueLevels)")
    }
}
