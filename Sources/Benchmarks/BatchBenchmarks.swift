import Foundation
import LoopbackServer
import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The bandwidth cap's accuracy and what resuming saves, against an in-process loopback server (whose
/// counters give the bytes on the wire).
enum BatchBenchmarks {
    /// Four transfers under a queue-wide cap for `duration` seconds: achieved rate / cap.
    static func rateCap(cap: Int, duration: Double) async throws -> Result {
        let server = try LoopbackServer()
        let queue = NetworkQueue(transport: try CurlTransport())
        queue.maximumBytesPerSecond = cap
        // Each body could take the whole cap for the whole run: the cap, not the bodies, sets the pace.
        let size = Int(Double(cap) * (duration + 2))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nq-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for index in 0..<4 {
            let file = directory.appendingPathComponent("\(index).bin")
            try queue.add(
                NetworkRequest(URLRequest(url: server.url("/bytes/\(size)?i=\(index)")), destination: .file(file)))
        }
        // Measured from the first byte, so that connection set-up does not count.
        let began = Date()
        queue.go()
        var start: (time: Date, bytes: Int64)?
        while Date().timeIntervalSince(began) < duration + 2 {
            try await Task.sleep(nanoseconds: 20_000_000)
            let bytes = queue.progress.bytesReceived
            if start == nil, bytes > 0 { start = (Date(), bytes) }
            if let start, Date().timeIntervalSince(start.time) >= duration { break }
        }
        let end = (Date(), queue.progress.bytesReceived)
        queue.cancelAll()
        guard let start else { throw CocoaError(.featureUnsupported) }
        let achieved = Double(end.1 - start.bytes) / end.0.timeIntervalSince(start.time)
        let ratio = achieved / Double(cap)
        return Result(
            benchmark: "rate cap \(cap / 1_000_000) MB/s, 4 transfers, \(Int(duration)) s, curl", metric: "B/s",
            networkQueue: achieved,
            baselineName: "the cap", baseline: Double(cap), ratio: ratio, target: "0.9 <= ratio <= 1.1",
            met: (0.9...1.1).contains(ratio), runs: 1)
    }

    /// `count` files of `size` bytes under a cap of `cap`: the time the ideal pace takes (all bytes / cap)
    /// against the time taken from `go()` to the end, and the busiest second on the server's own counter.
    static func rateCapSmallFiles(cap: Int, count: Int, size: Int) async throws -> [Result] {
        let server = try LoopbackServer()
        let queue = NetworkQueue(transport: try CurlTransport())
        queue.maxConcurrentRequestCount = count
        queue.maximumBytesPerSecond = cap
        for index in 0..<count {
            try queue.add(NetworkRequest(URLRequest(url: server.url("/bytes/\(size)?sndbuf=32768&i=\(index)"))))
        }
        server.resetStatistics()
        let began = Date()
        await queue.run()
        let elapsed = Date().timeIntervalSince(began)
        let ideal = Double(count * size) / Double(cap)
        let seconds = server.statistics.bytesPerSecond
        // The first second also fills the kernel's buffers; the last is partial.
        let busiest = seconds.dropFirst().dropLast().max() ?? 0
        let name = "rate cap \(cap / 1_000) kB/s, \(count) × \(size / 1_000) kB, curl"
        return [
            Result(
                benchmark: name + ": duration", metric: "s", networkQueue: elapsed, baselineName: "all bytes / cap",
                baseline: ideal, ratio: ideal / elapsed, target: "0.9 <= ratio <= 1.1",
                met: (0.9...1.1).contains(ideal / elapsed),
                runs: 1),
            Result(
                benchmark: name + ": busiest second", metric: "B", networkQueue: Double(busiest),
                baselineName: "the cap",
                baseline: Double(cap), ratio: Double(busiest) / Double(cap), target: "ratio <= 1.1",
                met: Double(busiest) <= Double(cap) * 1.1, runs: 1),
        ]
    }

    /// A file of `size` bytes whose first transfer is cut at 50% and retried: the bytes sent after the cut,
    /// against the whole file a download without resume sends again.
    static func resume(size: Int) async throws -> Result {
        let server = try LoopbackServer()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nq-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let queue = NetworkQueue(transport: try CurlTransport())
        queue.retryPolicy = RetryPolicy(backoff: .init(initialDelay: 0))
        let file = directory.appendingPathComponent("big.bin")
        let request = NetworkRequest(
            URLRequest(url: server.url("/bytes/\(size)?dropAt=50&key=bench")), destination: .file(file))
        try queue.add(request)
        await queue.run()
        let written = try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int
        guard request.state == .finished, written == size else { throw CocoaError(.fileWriteUnknown) }
        let afterCut = Double(server.statistics.bytesWritten - size / 2)
        let ratio = Double(size) / afterCut
        return Result(
            benchmark: "resume \(size / 1_000_000) MB cut at 50%, curl", metric: "bytes after cut",
            networkQueue: afterCut,
            baselineName: "no resume (whole file)", baseline: Double(size), ratio: ratio, target: "ratio >= 1.9",
            met: ratio >= 1.9, runs: 1)
    }
}
