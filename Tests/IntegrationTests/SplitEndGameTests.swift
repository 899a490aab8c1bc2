import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue 62: what a split file's mirrors do to it, now that the request's machine decides for the file: a mirror's
/// 429 holds its server for the batch, a mirror that lies under the file's validator cannot fail a checksummed file,
/// and a stalled mirror is raced at the end of the file instead of waited for. Over each transport, against loopback
/// servers.
@Suite(.admitted, .timeLimit(.minutes(10))) struct SplitEndGameTests {
    static let size = SplitIntegrationTests.size

    /// A mirror answers every range with a 429 asking for 3 s: the file completes from the request's own URL, and the
    /// mirror's server is held for the batch: a request to it added once the hold is logged reaches it no sooner
    /// than 3 s after its first 429. Before, a split file's heads bypassed the host books: nothing was held.
    @Test(arguments: TransportKind.allCases) func aMirrorsTooManyRequestsHoldsItsServerForTheBatch(
        _ transport: TransportKind
    ) async throws {
        let (first, second) = (try LoopbackServer(), try LoopbackServer())
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("held.bin")
        let mirror = second.url("/flaky/\(Self.size)?key=m&failures=1000&status=429&retryAfter=3")
        // The request's URL's first GET stalls at 256 KiB (its later ones do not): its stream never reaches the
        // mirror's ranges, so the mirror's answers decide however late a loaded machine hands them over.
        let origin = first.url("/bytes/\(Self.size)?rate=1000000&key=held&stallOnce=1&stallByte=262144&stall=15000")
        let request = SplitIntegrationTests.request(origin, to: file, connections: 4, mirrors: [mirror])
        let later = NetworkRequest(url: second.url("/bytes/100?n=later"))
        let queue = NetworkQueue(transport: transport.make())
        queue.maxConcurrentRequestCount = 8
        queue.collectsMetrics = true
        let log = Box<[NetworkQueueLogRecord]>([])
        queue.logHandler = { [weak queue] record in
            log.with { $0.append(record) }
            if record.event == .hostHeld { try? queue?.add(later) }
        }
        try queue.add(request)
        await queue.run()
        #expect(request.failure == nil, "\(String(describing: request.failure))")
        #expect(try Data(contentsOf: file) == pattern(0..<Self.size))
        let holds = log.current.filter { $0.event == .hostHeld }
        #expect(!holds.isEmpty)
        let server = "127.0.0.1:\(second.port)"
        for hold in holds {
            #expect(hold.message.contains(server) && hold.message.contains("429 with Retry-After"), "\(hold.message)")
        }
        #expect(later.state == .finished)
        let arrivals = zip(second.statistics.log, second.statistics.arrivals)
        let firstRefusal = arrivals.first { $0.0.contains("/flaky/") }?.1
        let laterArrival = arrivals.first { $0.0.contains("n=later") }?.1
        #expect(firstRefusal != nil && laterArrival != nil, "\(second.statistics.log)")
        if let firstRefusal, let laterArrival { #expect(laterArrival - firstRefusal >= 3, "\(arrivals)") }
        let sources = request.metrics?.final?.segments?.locations ?? []
        #expect(sources.map(\.bytes) == [Int64(Self.size), 0], "\(sources)")
        #expect(sources.map(\.wasDropped) == [false, true], "\(sources)")
    }

    /// A mirror sends other bytes under the same length and entity tag, and the request names the file's SHA-256: the
    /// whole file fails its checksum once, and is fetched again from the request's URL alone (the location whose
    /// answer began it), which succeeds. The mirror is named untrusted in the metrics. Before, the file failed.
    ///
    /// The request's URL's first GET stalls at 256 KiB for 15 s (its later ones do not), so the mirror surely serves
    /// some of the first fetch however slowly the machine runs: its ranges wait for it (a CI run under load handed
    /// URLSession's heads over more than 5 s late), and the end game races the stalled one from the fastest location.
    @Test(arguments: TransportKind.allCases) func aMirrorThatLiesUnderTheSameValidatorCannotFailAChecksummedFile(
        _ transport: TransportKind
    ) async throws {
        let (first, second) = (try LoopbackServer(), try LoopbackServer())
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("checked.bin")
        let path = "/bytes/\(Self.size)"
        let request = NetworkRequest(
            url: first.url(path + "?rate=1000000&key=lie&stallOnce=1&stallByte=262144&stall=15000"),
            destination: .file(file),
            integrity: .init(checksum: IntegrityTests.sha256(0..<Self.size)),
            fileOptions: .init(
                maximumConnections: 4, mirrors: [second.url(path + "?seed=7")],
                minimumSegmentSize: SplitIntegrationTests.segment))
        // One attempt, its file sent again once (as a continued part that fails its checksum is): two heads.
        let (_, recorder) = try await SplitIntegrationTests.run(request, transport, file: file, heads: 2)
        let sources = request.metrics?.final?.segments?.locations ?? []
        #expect(sources.map(\.bytes) == [Int64(Self.size), 0], "\(sources)")
        #expect(sources.map(\.untrusted) == [false, true], "\(sources)")
        #expect(sources.map(\.wasDropped) == [false, true], "\(sources)")
        // The first fetch reached the mirror: it was asked for ranges and sent some of them.
        #expect(!SplitIntegrationTests.ranges(second).isEmpty && second.statistics.bytesWritten > 0)
        #expect(!recorder.events.contains { if case .retry = $0 { true } else { false } })
    }

    /// A good source and a mirror whose every connection sends its head and then nothing: once no range waits, a
    /// connection of the good source races each of the mirror's ranges and wins; the mirror's connections stop, and
    /// nothing is dropped. Before, the mirror was dropped after 5 s of nothing (the file took 10.4 s where it needs
    /// under 1).
    @Test(arguments: TransportKind.allCases) func aStalledMirrorIsRacedAtTheEndOfTheFile(_ transport: TransportKind)
        async throws
    {
        let (first, second) = (try LoopbackServer(), try LoopbackServer())
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("raced.bin")
        let path = "/bytes/\(Self.size)?rate=4000000"
        let request = SplitIntegrationTests.request(
            first.url(path), to: file, connections: 4, mirrors: [second.url(path + "&stallAt=0&stall=120000")])
        let log = Box<[NetworkQueueLogRecord]>([])
        let timed = Box<[String]>([])
        let began = Date()
        let queue = NetworkQueue(transport: transport.make())
        queue.maxConcurrentRequestCount = 8
        queue.collectsMetrics = true
        queue.logHandler = { record in
            log.with { $0.append(record) }
            let line = String(format: "%.3f ", Date().timeIntervalSince(began)) + "\(record.event) \(record.message)"
            timed.with { $0.append(line) }
        }
        try queue.add(request)
        await queue.run()
        #expect(
            request.failure == nil && request.attemptCount == 1,
            "\(String(describing: request.failure)) \(request.attemptCount) attempts; \(timed.current)")
        #expect(try Data(contentsOf: file) == pattern(0..<Self.size))
        let sources = request.metrics?.final?.segments?.locations ?? []
        #expect(sources.map(\.bytes) == [Int64(Self.size), 0], "\(sources)")
        #expect(sources.map(\.wasDropped) == [false, false], "\(sources)")
        let records = log.current
        #expect(!records.contains { $0.event == .locationDropped }, "\(records.map(\.message))")
        // A mirror's range is raced once its head came (one still waiting for its head when the first connection's
        // stream reaches it is taken over instead, as on a machine slowed by the thread sanitizer): never more races
        // than ranges asked of it. `SplitMachineTests` pins each race down alone.
        let asked = SplitIntegrationTests.ranges(second).count
        let raced = records.filter { $0.message.contains("raced by another connection: it brought nothing") }
        #expect(raced.count <= asked, "\(records.map(\.message))")
        await eventually { second.statistics.inFlight == 0 }
        #expect(second.statistics.inFlight == 0)
    }
}
