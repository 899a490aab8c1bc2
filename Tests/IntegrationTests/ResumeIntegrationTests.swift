import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Resuming file downloads against the loopback server, over each transport: the headers the server
/// sees, the bytes it sends, and the file that results.
@Suite(.admitted, .timeLimit(.minutes(10))) struct ResumeIntegrationTests {
    static let size = 300_000

    /// A directory with `name`'s part file holding the first `count` pattern bytes and, when given, a
    /// validator file.
    static func partial(_ count: Int, validator: String?) throws -> (directory: URL, file: URL) {
        let directory = try temporaryDirectory()
        let file = directory.appendingPathComponent("data.bin")
        try pattern(0..<count).write(to: file.appendingPathExtension("part"))
        if let validator {
            try Data(validator.utf8).write(to: file.appendingPathExtension("part").appendingPathExtension("validator"))
        }
        return (directory, file)
    }

    /// A queue retrying at once, with a recorder; runs `request` and checks the file is the whole body
    /// with nothing left beside it and a fraction that never fell. Returns the final progress.
    static func run(_ request: NetworkRequest, _ transport: TransportKind, file: URL) async throws -> QueueProgress {
        let (queue, recorder) = RetryIntegrationTests.retryingQueue(transport)
        try queue.add(request)
        let progress = await queue.run()
        #expect(request.failure == nil, "\(String(describing: request.failure))")
        #expect(try Data(contentsOf: file) == pattern(0..<size))
        #expect(!FileManager.default.fileExists(atPath: file.path + ".part"))
        #expect(!FileManager.default.fileExists(atPath: file.path + ".part.validator"))
        let fractions = recorder.progresses.current.map(\.fractionCompleted)
        #expect(fractions == fractions.sorted(), "\(fractions)")
        #expect(progress.fractionCompleted == 1)
        return progress
    }

    @Test(arguments: TransportKind.allCases) func aTransferCutAt60PercentIsRetriedFromThere(_ transport: TransportKind)
        async throws
    {
        let server = try LoopbackServer()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("cut.bin")
        let request = fileRequest(server.url("/bytes/\(Self.size)?dropAt=60&key=cut"), to: file)
        let progress = try await Self.run(request, transport, file: file)
        let cut = Self.size * 60 / 100
        #expect(server.statistics.requests == 2)
        #expect(server.statistics.headers[0]["range"] == nil)
        #expect(server.statistics.headers[1]["range"] == "bytes=\(cut)-")
        #expect(server.statistics.headers[1]["if-range"] == "\"bytes-\(Self.size)\"")
        #expect(request.attemptCount == 2)
        #expect(request.response?.statusCode == 206)
        // Counted once: the 60% kept, then the 40% that came after it.
        #expect(progress.bytesReceived == Int64(Self.size))
    }

    @Test(arguments: TransportKind.allCases) func aPartFromAnEarlierRunIsContinued(_ transport: TransportKind)
        async throws
    {
        let (directory, file) = try Self.partial(Self.size / 2, validator: "etag\n\"bytes-\(Self.size)\"\n")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try LoopbackServer()
        let progress = try await Self.run(
            fileRequest(server.url("/bytes/\(Self.size)"), to: file), transport, file: file)
        #expect(server.statistics.headers.map { $0["range"] } == ["bytes=\(Self.size / 2)-"])
        // Half on the wire (plus the head); the part's half counted as done.
        #expect(server.statistics.bytesWritten < Self.size / 2 + 1000)
        #expect(progress.bytesReceived == Int64(Self.size))
    }

    @Test(arguments: TransportKind.allCases) func aLastModifiedValidatorIsUsedWithoutAnETag(_ transport: TransportKind)
        async throws
    {
        let date = "Sun, 22 Nov 2026 10:00:00 GMT"
        let (directory, file) = try Self.partial(1000, validator: "last-modified\n\(date)\n")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try LoopbackServer()
        let url = server.url(
            "/bytes/\(Self.size)?noetag=1&lastModified=\(date.replacingOccurrences(of: " ", with: "%20"))")
        _ = try await Self.run(fileRequest(url, to: file), transport, file: file)
        #expect(server.statistics.headers.map { $0["if-range"] } == [date])
        #expect(server.statistics.headers.map { $0["range"] } == ["bytes=1000-"])
    }

    @Test(arguments: TransportKind.allCases) func aServerIgnoringTheRangeStartsTheFileOver(_ transport: TransportKind)
        async throws
    {
        // The part holds wrong bytes: only a full rewrite gives the right file.
        let (directory, file) = try Self.partial(0, validator: "etag\n\"bytes-\(Self.size)\"\n")
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(repeating: 0xEE, count: 5000).write(to: file.appendingPathExtension("part"))
        let server = try LoopbackServer()
        let progress = try await Self.run(
            fileRequest(server.url("/bytes/\(Self.size)?ignoreRange=1"), to: file), transport, file: file)
        #expect(server.statistics.requests == 1)
        #expect(server.statistics.headers[0]["range"] == "bytes=5000-")
        #expect(progress.bytesReceived == Int64(Self.size))
    }

    @Test(arguments: TransportKind.allCases) func aChangedETagStartsOver(_ transport: TransportKind) async throws {
        let (directory, file) = try Self.partial(0, validator: "etag\n\"old\"\n")
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(repeating: 0xEE, count: 5000).write(to: file.appendingPathExtension("part"))
        let server = try LoopbackServer()
        _ = try await Self.run(fileRequest(server.url("/bytes/\(Self.size)?etag=new"), to: file), transport, file: file)
        // Asked with the old tag; the server sent the new version whole.
        #expect(server.statistics.headers.map { $0["if-range"] } == ["\"old\""])
        #expect(server.statistics.requests == 1)
    }

    @Test(arguments: TransportKind.allCases, ["refuseRange", "badRange"])
    func aRefusedOrWrongRangeIsSentAgainOnceWithoutOne(_ transport: TransportKind, _ fault: String) async throws {
        let (directory, file) = try Self.partial(5000, validator: "etag\n\"bytes-\(Self.size)\"\n")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try LoopbackServer()
        let request = fileRequest(server.url("/bytes/\(Self.size)?\(fault)=1"), to: file)
        _ = try await Self.run(request, transport, file: file)
        #expect(server.statistics.headers.map { $0["range"] } == ["bytes=5000-", nil])
        #expect(request.attemptCount == 1)
    }

    @Test(arguments: TransportKind.allCases) func aPartWithoutValidatorStartsOver(_ transport: TransportKind)
        async throws
    {
        let (directory, file) = try Self.partial(0, validator: nil)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(repeating: 0xEE, count: 5000).write(to: file.appendingPathExtension("part"))
        let server = try LoopbackServer()
        _ = try await Self.run(fileRequest(server.url("/bytes/\(Self.size)"), to: file), transport, file: file)
        #expect(server.statistics.headers.map { $0["range"] } == [nil])
    }

    @Test(arguments: TransportKind.allCases) func resumingCanBeTurnedOffPerRequest(_ transport: TransportKind)
        async throws
    {
        let (directory, file) = try Self.partial(5000, validator: "etag\n\"bytes-\(Self.size)\"\n")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try LoopbackServer()
        let request = NetworkRequest(
            URLRequest(url: server.url("/bytes/\(Self.size)")), destination: .file(file),
            fileOptions: .init(continuesPartialDownloads: false))
        _ = try await Self.run(request, transport, file: file)
        #expect(server.statistics.headers.map { $0["range"] } == [nil])
    }
}
