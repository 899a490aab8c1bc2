import Foundation
import LoopbackServer
@_spi(Benchmarks) import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How often a split file's pieces reach the queue's lock: one file over 8 connections from an in-process
/// loopback server, over curl, with the library's lock counter on. Each piece is written through its connection's
/// cursor and counted by a notice batched with the engine pass's others; the queue's lock is taken once per pass that
/// had any, plus the rare asks (heads, a range's end, the loans, the timer).
enum SplitLockBenchmark {
    static func run(size: Int) async throws -> [Result] {
        let server = try LoopbackServer()
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nq-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let queue = NetworkQueue(transport: try CurlTransport())
        let file = directory.appendingPathComponent("split.bin")
        let request = NetworkRequest(
            URLRequest(url: server.url("/bytes/\(size)")), destination: .file(file),
            fileOptions: .init(maximumConnections: 8))
        try queue.add(request)
        LockCounter.start()
        await queue.run()
        // The walk's own: less the run's (its go() and its wait for the drain, one acquisition) and the delivery of
        // didStart, before the launch.
        let beforeFirstCount = LockCounter.acquisitionsBeforeFirstCount.map { $0 - 2 }
        let (acquisitions, passes, pieces, asks) = LockCounter.stop()
        let written = try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int
        guard request.state == .finished, written == size else { throw CocoaError(.fileWriteUnknown) }
        let name = "split \(size / 1_000_000) MB × 8 connections, curl"
        // The pieces' own: one per pass that handed their notices in, and one per piece the engine was asked about.
        let ofPieces = passes + asks
        let perPass = Double(ofPieces) / Double(max(1, passes))
        let perPiece = Double(ofPieces) / Double(max(1, pieces))
        print(
            "split locks: \(acquisitions) queue-lock acquisitions in all, \(beforeFirstCount ?? -1) from the launch "
                + "to the first counted byte; \(pieces) pieces in \(passes) engine passes, \(asks) of them asked about")
        return [
            Result(
                benchmark: name + ": queue-lock acquisitions from the launch before the first counted byte",
                metric: "locks",
                networkQueue: Double(beforeFirstCount ?? -1), baselineName: "-", baseline: nil, ratio: nil,
                target: "<= 2", met: beforeFirstCount.map { $0 <= 2 }, runs: 1),
            Result(
                benchmark: name + ": the pieces' queue-lock acquisitions per engine pass", metric: "locks/pass",
                networkQueue: perPass, baselineName: "-", baseline: nil, ratio: nil, target: "<= 1 + asks/passes",
                met: nil, runs: 1),
            Result(
                benchmark: name + ": the pieces' queue-lock acquisitions per piece", metric: "locks/piece",
                networkQueue: perPiece, baselineName: "an ask and its writes' (before)", baseline: 2,
                ratio: 2 / perPiece, target: "-", met: nil, runs: 1),
        ]
    }
}
