import Foundation
import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a checksum costs: one large download to a file over libcurl, with the body's SHA-256 checked as
/// it streams, against the same download without one (alternating runs, medians).
enum IntegrityBenchmark {
    /// Seconds for one download of `url` to `file`, with `checksum` when given; throws if it failed.
    static func once(_ url: URL, to file: URL, checksum: Checksum?) async throws -> Double {
        let queue = NetworkQueue(transport: try CurlTransport())
        let request = NetworkRequest(
            URLRequest(url: url), destination: .file(file), integrity: .init(checksum: checksum))
        try queue.add(request)
        let elapsed = await seconds { await queue.run() }
        if case .failure(let error)? = request.result { throw error }
        try FileManager.default.removeItem(at: file)
        return elapsed
    }

    static func run(server: ServerProcess, size: Int, runs: Int) async throws -> [Result] {
        let url = server.url("/bytes/\(size)")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nq-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("big.bin")
        // The expected digest, from a first download (also the warm-up).
        let queue = NetworkQueue(transport: try CurlTransport())
        try queue.add(NetworkRequest(URLRequest(url: url), destination: .file(file)))
        await queue.run()
        let checksum = Checksum(hashing: try Data(contentsOf: file, options: .alwaysMapped), .sha256)
        try FileManager.default.removeItem(at: file)
        var plain: [Double] = []
        var checked: [Double] = []
        for _ in 0..<runs {
            plain.append(try await once(url, to: file, checksum: nil))
            checked.append(try await once(url, to: file, checksum: checksum))
        }
        let megabytes = Double(size) / 1e6
        let with = megabytes / median(checked)
        let without = megabytes / median(plain)
        let ratio = with / without
        return [
            Result(
                benchmark: "\(size / 1_000_000) MB to a file with a SHA-256 checksum, curl", metric: "MB/s",
                networkQueue: with,
                baselineName: "the same without a checksum", baseline: without, ratio: ratio, target: "ratio >= 0.85",
                met: ratio >= 0.85, runs: runs)
        ]
    }
}
