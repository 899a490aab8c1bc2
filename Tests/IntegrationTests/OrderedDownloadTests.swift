import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// ``OrderedDownload`` over each transport (issue 75): a file over several connections, handed on in order, each byte
/// once; a server without ranges through a temporary file; a chunk that is not its range ends it with the reason.
@Suite(.admitted, .timeLimit(.minutes(10))) struct OrderedDownloadTests {
    /// The loopback server's bytes: byte i is i % 256.
    static func pattern(_ count: Int) -> Data { Data((0..<count).map { UInt8(truncatingIfNeeded: $0) }) }

    static func collect(_ download: OrderedDownload) async throws -> (Data, Int) {
        var whole = Data()
        var pieces = 0
        for try await piece in download {
            whole.append(piece)
            pieces += 1
        }
        return (whole, pieces)
    }

    @Test(arguments: TransportKind.allCases) func aFileComesInOrderOverSeveralConnections(_ transport: TransportKind)
        async throws
    {
        let server = try LoopbackServer()
        defer { server.stop() }
        let queue = NetworkQueue(transport: transport.make())
        queue.go()
        let size = 5_000_000
        let settings = OrderedDownload.Settings(connections: 4, window: 2 << 20, chunkSize: 256 << 10)
        let (bytes, pieces) = try await Self.collect(
            queue.orderedDownload(of: server.url("/bytes/\(size)"), settings: settings))
        #expect(bytes == Self.pattern(size))
        #expect(pieces == (size + (256 << 10) - 1) / (256 << 10))
        // A HEAD, then one ranged GET a chunk, never more than the connections at once.
        #expect(server.statistics.requests == 1 + pieces)
        #expect(server.statistics.maxInFlight <= 4)
    }

    /// The endings of a chunk and of the reader: a chunk whose connection drops mid-body is fetched again by the
    /// queue's retry and the file is whole; a reader that stops after its first chunk cancels the chunks in flight,
    /// and the queue drains.
    @Test(arguments: TransportKind.allCases) func aDroppedChunkIsFetchedAgainAndAReaderThatStopsCancelsTheRest(
        _ transport: TransportKind
    ) async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        let queue = NetworkQueue(transport: transport.make())
        queue.retryPolicy = RetryPolicy(maximumAttempts: 3, backoff: RetryPolicy.Backoff(initialDelay: 0.01))
        queue.go()
        let settings = OrderedDownload.Settings(connections: 4, window: 2 << 20, chunkSize: 256 << 10)
        let size = 3_000_000
        // The first GET of the key is cut at 50% of its body (a chunk's).
        let (bytes, _) = try await Self.collect(
            queue.orderedDownload(of: server.url("/bytes/\(size)?dropAt=50&key=\(transport)"), settings: settings))
        #expect(bytes == Self.pattern(size))
        // A reader that takes one chunk and stops.
        var taken = 0
        for try await piece in queue.orderedDownload(of: server.url("/bytes/50000000?i=2"), settings: settings) {
            taken += piece.count
            break
        }
        #expect(taken == 256 << 10)
        let progress = await queue.run()
        #expect(progress.endedRequestCount == progress.totalRequestCount)
        // Far less than the file was sent: the chunks beyond the window were never asked for.
        #expect(server.statistics.bytesWritten < size + 10_000_000)
    }

    /// A HEAD's length is no body: a file larger than the memory destination's cap (64 MiB) is answered, not failed
    /// as too large (the ordered download of a 1 GiB file failed so at its HEAD).
    @Test(arguments: TransportKind.allCases) func aHeadOfAFileLargerThanTheMemoryCapIsAnAnswer(
        _ transport: TransportKind
    )
        async throws
    {
        let server = try LoopbackServer()
        defer { server.stop() }
        let queue = NetworkQueue(transport: transport.make())
        queue.showsAccurateProgress = false
        var head = URLRequest(url: server.url("/bytes/200000000"))
        head.httpMethod = "HEAD"
        let request = NetworkRequest(head)
        try queue.add(request)
        let progress = await queue.run()
        #expect(progress.finishedRequestCount == 1, "\(String(describing: request.result))")
        #expect(request.response?.head.expectedContentLength == 200_000_000)
    }

    /// Both transports in turn: the temporary folders are counted, and one run's must be gone when it ends.
    @Test func aServerWithoutLengthOrRangesIsFetchedWholeAndHandedOnFromATemporaryFile() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        func folders() throws -> Set<String> {
            Set(
                try FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory()).filter {
                    $0.hasPrefix("nq-ordered-")
                })
        }
        for transport in TransportKind.allCases {
            let queue = NetworkQueue(transport: transport.make())
            queue.go()
            let before = try folders()
            // No length (chunked); a HEAD refused (405): the GET is tried whole.
            for path in ["/chunked/3000000", "/nohead/3000000"] {
                let (bytes, _) = try await Self.collect(queue.orderedDownload(of: server.url(path)))
                #expect(bytes == Self.pattern(3_000_000), "\(transport) \(path)")
            }
            #expect(try folders().subtracting(before).isEmpty)
            // A server that is not there: the HEAD's failure, and no folder made.
            let gone = try LoopbackServer()
            let url = gone.url("/bytes/10")
            gone.stop()
            queue.retryPolicy = RetryPolicy(maximumAttempts: 1)
            await #expect(throws: OrderedDownload.Problem.self) {
                _ = try await Self.collect(queue.orderedDownload(of: url))
            }
            #expect(try folders().subtracting(before).isEmpty)
        }
    }

    @Test(arguments: TransportKind.allCases) func aChunkThatIsNotItsRangeEndsTheDownloadSayingWhy(
        _ transport: TransportKind
    ) async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        let queue = NetworkQueue(transport: transport.make())
        queue.go()
        for (query, words) in [("ignoreRange=1", "sent the whole file"), ("badRange=1", "were asked for")] {
            var handedOn = 0
            do {
                let settings = OrderedDownload.Settings(connections: 2, chunkSize: 256 << 10)
                for try await piece in queue.orderedDownload(
                    of: server.url("/bytes/2000000?\(query)"), settings: settings)
                {
                    handedOn += piece.count
                }
                Issue.record("\(query): no failure")
            } catch let problem as OrderedDownload.Problem {
                #expect("\(problem)".contains(words), "\(problem)")
            }
            // Nothing after the bad chunk: at most the chunks before it, each whole.
            #expect(handedOn % (256 << 10) == 0)
        }
    }
}
