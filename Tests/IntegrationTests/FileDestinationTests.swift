import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A fresh empty directory for one test.
func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("nq-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

func fileRequest(_ url: URL, to file: URL, tag: Int = 0) -> NetworkRequest {
    NetworkRequest(URLRequest(url: url), destination: .file(file), tag: tag)
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct FileDestinationTests {
    @Test(arguments: TransportKind.allCases) func theBodyIsStreamedToTheFileAndMovedIntoPlace(
        _ transport: TransportKind
    ) async throws {
        let server = try LoopbackServer()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("body.bin")
        try Data("old".utf8).write(to: file)
        let (queue, _) = makeQueue(transport)
        let request = fileRequest(server.url("/bytes/3000000"), to: file)
        try queue.add(request)
        let progress = await queue.run()
        let response = try #require(try request.result?.get())
        #expect(response.fileURL == file)
        #expect(response.body.isEmpty)
        #expect(try Data(contentsOf: file) == pattern(0..<3_000_000))
        #expect(!FileManager.default.fileExists(atPath: file.path + ".part"))
        #expect(progress.bytesReceived == 3_000_000)
        #expect(request.downloadProgress.completedBytes == 3_000_000)
    }

    @Test(arguments: TransportKind.allCases, ["/status/404", "/drop/400000"])
    func aFailedRequestLeavesNoFile(_ transport: TransportKind, path: String) async throws {
        let server = try LoopbackServer()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("body.bin")
        let (queue, _) = makeQueue(transport)
        let request = fileRequest(server.url(path), to: file)
        try queue.add(request)
        await queue.run()
        #expect(request.state == .failed)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test(arguments: TransportKind.allCases) func aCancelledRequestLeavesNoPartialFile(_ transport: TransportKind)
        async throws
    {
        let server = try LoopbackServer()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (queue, _) = makeQueue(transport)
        let request = fileRequest(
            server.url("/bytes/100000000?rate=1000000"), to: directory.appendingPathComponent("big.bin"))
        try queue.add(request)
        let stream = queue.events()
        queue.go()
        await first(stream) { if case .didReceiveHeaders = $0 { true } else { false } }
        queue.cancel(request)
        #expect(request.state == .cancelled)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
        await queue.run()
    }

    @Test(arguments: TransportKind.allCases) func anUnwritableDestinationFailsClearlyAndIsNeverSent(
        _ transport: TransportKind
    ) async throws {
        let server = try LoopbackServer()
        let (queue, recorder) = makeQueue(transport)
        let file = URL(fileURLWithPath: "/nonexistent-\(UUID().uuidString)/body.bin")
        let request = fileRequest(server.url("/bytes/10"), to: file, tag: 1)
        try queue.add(request)
        await queue.run()
        guard case .fileError(let path, _) = request.failure else {
            Issue.record("expected a file error, got \(String(describing: request.result))")
            return
        }
        #expect(path == file.path + ".part")
        #expect(server.statistics.requests == 0)
        #expect(recorder.events.first == .start(1))
    }
}
