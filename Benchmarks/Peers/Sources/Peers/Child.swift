import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL
import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One side's run of one workload, in a process of its own so that its CPU time and peak memory are its own.
/// Prints `RESULT <seconds> <CPU seconds> <peak RSS bytes> <failures>`, the format the root package's
/// `Benchmarks --peer-child curl …` prints too.
struct Child {
    var side: String
    var urls: [URL]
    var window: Int
    /// Where bodies go; nil keeps them in memory.
    var directory: URL?
    /// A PEM file of CA certificates to trust (the nginx's self-signed certificate).
    var trusted: URL?

    /// `--child SIDE URL|@LIST COUNT WINDOW DIRECTORY|- CAFILE|-`: one URL COUNT times, or the first COUNT lines
    /// of the file LIST.
    init?(arguments: [String]) {
        guard arguments.count == 7, arguments[0] == "--child", let count = Int(arguments[3]),
            let window = Int(arguments[4])
        else { return nil }
        if arguments[2].hasPrefix("@") {
            guard let text = try? String(contentsOfFile: String(arguments[2].dropFirst()), encoding: .utf8) else {
                return nil
            }
            urls = text.split(separator: "\n").prefix(count).compactMap { URL(string: String($0)) }
            guard urls.count == count else { return nil }
        } else {
            guard let url = URL(string: arguments[2]) else { return nil }
            urls = Array(repeating: url, count: count)
        }
        side = arguments[1]
        self.window = window
        directory = arguments[5] == "-" ? nil : URL(fileURLWithPath: arguments[5])
        trusted = arguments[6] == "-" ? nil : URL(fileURLWithPath: arguments[6])
    }

    func run() async throws {
        let fetch: ([URL]) async throws -> Int
        switch side {
        case "nq", "nq-sha256":
            // The same, checking the body's SHA-256 (hex in NQ_SHA256) as it streams.
            let checksum = side == "nq-sha256" ? ProcessInfo.processInfo.environment["NQ_SHA256"].flatMap { Checksum.sha256($0) } : nil
            if side == "nq-sha256", checksum == nil { throw PeerFailure("nq-sha256 needs NQ_SHA256, the body's SHA-256 in hex") }
            var options = CurlTransport.Options()
            options.additionalTrustedCertificates = trusted
            // For comparing engine-thread counts: NQ_ENGINE_THREADS=N (default: the transport's own).
            if let threads = ProcessInfo.processInfo.environment["NQ_ENGINE_THREADS"].flatMap(Int.init) {
                options.engineThreads = threads
            }
            let transport = try CurlTransport(options: options)
            fetch = { urls in
                try await Self.fetchWithQueue(urls, transport: transport, window: window, directory: directory, checksum: checksum)
            }
        case "ahc", "ahc-stream":
            let client = Self.makeClient(trusted: trusted, window: window)
            let streams = side == "ahc-stream"
            try await measure { urls in
                await Self.fetchWithClient(urls, client: client, window: window, directory: directory, streams: streams)
            }
            try await client.shutdown()
            return
        default:
            throw PeerFailure("unknown side \(side)")
        }
        try await measure(fetch)
    }

    /// Warms up (small bodies only: connections, lazy set-up), then times `fetch` over every URL.
    private func measure(_ fetch: ([URL]) async throws -> Int) async throws {
        if directory == nil { _ = try await fetch(Array(urls.prefix(200))) }
        let cpuBefore = cpuSeconds()
        let start = DispatchTime.now().uptimeNanoseconds
        let failures = try await fetch(urls)
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        print("RESULT \(elapsed) \(cpuSeconds() - cpuBefore) \(peakResidentBytes()) \(failures)")
    }

    private static func fetchWithQueue(
        _ urls: [URL], transport: CurlTransport, window: Int, directory: URL?, checksum: Checksum?
    ) async throws -> Int {
        let queue = NetworkQueue(transport: transport)
        queue.maxConcurrentRequestCount = window
        for (index, url) in urls.enumerated() {
            let destination: NetworkRequest.Destination =
                directory.map { .file($0.appendingPathComponent("nq-\(index).bin", isDirectory: false)) } ?? .memory
            try queue.add(NetworkRequest(URLRequest(url: url), destination: destination, integrity: .init(checksum: checksum)))
        }
        let progress = await queue.run()
        return progress.totalRequestCount - progress.finishedRequestCount
    }

    private static func makeClient(trusted: URL?, window: Int) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        if let trusted {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(trusted.path)
            configuration.tlsConfiguration = tls
        }
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: window)
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// AsyncHTTPClient's own ways: `execute` with the body collected for memory; for files either
    /// `FileDownloadDelegate` or (`streams`) the async body written chunk by chunk to a file descriptor, each
    /// `ByteBuffer` written where it is (`write(2)` from its bytes: no copy), the fastest way an AHC user has.
    private static func fetchWithClient(_ urls: [URL], client: HTTPClient, window: Int, directory: URL?, streams: Bool) async -> Int {
        @Sendable func fetch(_ index: Int) async -> Bool {
            do {
                if let directory, streams {
                    let path = directory.appendingPathComponent("ahc-\(index).bin", isDirectory: false).path
                    let response = try await client.execute(HTTPClientRequest(url: urls[index].absoluteString), timeout: .seconds(600))
                    guard response.status == .ok else { return false }
                    let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
                    guard descriptor >= 0 else { return false }
                    defer { close(descriptor) }
                    for try await chunk in response.body {
                        let written = chunk.withUnsafeReadableBytes { bytes -> Bool in
                            var offset = 0
                            while offset < bytes.count {
                                let count = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                                guard count > 0 else { return false }
                                offset += count
                            }
                            return true
                        }
                        guard written else { return false }
                    }
                    return true
                }
                if let directory {
                    let path = directory.appendingPathComponent("ahc-\(index).bin", isDirectory: false).path
                    let delegate = try FileDownloadDelegate(path: path)
                    let request = try HTTPClient.Request(url: urls[index])
                    let progress = try await client.execute(request: request, delegate: delegate).futureResult.get()
                    return progress.head.status == .ok
                }
                let response = try await client.execute(HTTPClientRequest(url: urls[index].absoluteString), timeout: .seconds(60))
                _ = try await response.body.collect(upTo: 1 << 30)
                return response.status == .ok
            } catch {
                return false
            }
        }
        return await withTaskGroup(of: Bool.self) { group in
            var next = 0
            var failures = 0
            while next < min(window, urls.count) {
                let index = next
                group.addTask { await fetch(index) }
                next += 1
            }
            for await succeeded in group {
                if !succeeded { failures += 1 }
                if next < urls.count {
                    let index = next
                    group.addTask { await fetch(index) }
                    next += 1
                }
            }
            return failures
        }
    }
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// Peak resident memory: `VmHWM`, since `ru_maxrss` would carry the parent's peak over `exec`.
func peakResidentBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
        let kilobytes = Int(line.split(separator: " ", omittingEmptySubsequences: true)[1])
    else { return 0 }
    return kilobytes * 1024
}

struct PeerFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
