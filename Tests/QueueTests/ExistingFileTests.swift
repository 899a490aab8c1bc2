import Foundation
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// ``NetworkRequest/ExistingFile/skipIfUnchanged``: a HEAD decides whether an existing file is kept.
@Suite(.timeLimit(.minutes(5))) struct ExistingFileTests {
    static let body = "0123456789"
    static let older = "Sun, 06 Nov 1994 08:49:37 GMT"
    static let newer = "Wed, 01 Jan 2098 00:00:00 GMT"

    /// A directory with `file` holding ten bytes, modified at 2000-01-01.
    static func existingFile() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nq-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("file")
        try Data("abcdefghij".utf8).write(to: file)
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 946_684_800)], ofItemAtPath: file.path)
        return file
    }

    /// HEAD answers `head`; GET answers the ten-byte body, last modified `older`.
    static func transport(head: [InMemoryTransport.Step]) -> InMemoryTransport {
        InMemoryTransport { urlRequest in
            guard urlRequest.httpMethod == "HEAD" else {
                return [.respond(status: 200, headers: ["Content-Length": "10", "Last-Modified": older]), .body(Data(body.utf8))]
            }
            return head
        }
    }

    /// Runs one skip-if-unchanged request for `file` over `transport`; returns the request and the methods sent.
    static func run(_ file: URL, _ transport: InMemoryTransport, recorder: Recorder = Recorder()) async throws -> (NetworkRequest, [String]) {
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.delegate = recorder
        let request = NetworkRequest(URLRequest(url: url(1)), destination: .file(file), fileOptions: .init(existingFile: .skipIfUnchanged), tag: 1)
        try queue.add(request)
        await queue.run()
        return (request, transport.startedRequests.map { $0.httpMethod ?? "GET" })
    }

    @Test func withAChecksumOnlyAFileThatHasItIsKept() async throws {
        // The file on disk has the right size and date but not the bytes the checksum names: fetched again,
        // with no HEAD (nothing the server says could keep it).
        let file = try Self.existingFile()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let head: [InMemoryTransport.Step] = [.respond(status: 200, headers: ["Content-Length": "10", "Last-Modified": Self.older])]
        for (checksum, kept) in [(Checksum(hashing: Data(Self.body.utf8), .sha256), false), (Checksum(hashing: Data("abcdefghij".utf8), .sha256), true)] {
            let transport = Self.transport(head: head)
            let queue = NetworkQueue.oneAttempt(transport: transport)
            let request = NetworkRequest(
                URLRequest(url: url(1)),
                destination: .file(file),
                integrity: .init(checksum: checksum),
                fileOptions: .init(existingFile: .skipIfUnchanged),
                tag: 1)
            try queue.add(request)
            await queue.run()
            let response = try request.result!.get()
            #expect(response.keptExistingFile == kept)
            #expect(transport.startedRequests.map { $0.httpMethod ?? "GET" } == (kept ? ["HEAD"] : ["GET"]))
            #expect(try Data(contentsOf: file) == Data((kept ? "abcdefghij" : Self.body).utf8))
            // The next round's file is the right one, dated as before.
            try Data("abcdefghij".utf8).write(to: file)
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 946_684_800)], ofItemAtPath: file.path)
        }
    }

    @Test func theSameSizeAndAnOlderDateKeepTheFileWithoutAGet() async throws {
        let file = try Self.existingFile()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let recorder = Recorder()
        let transport = Self.transport(head: [.respond(status: 200, headers: ["Content-Length": "10", "Last-Modified": Self.older])])
        let (request, methods) = try await Self.run(file, transport, recorder: recorder)
        #expect(methods == ["HEAD"])
        #expect(request.state == .finished)
        let response = try request.result!.get()
        #expect(response.fileURL == file)
        #expect(response.keptExistingFile)
        #expect(response.httpURLResponse.value(forHTTPHeaderField: "Last-Modified") == Self.older)
        #expect(try Data(contentsOf: file) == Data("abcdefghij".utf8))
        #expect(recorder.events == [.finish(1), .queueFinished])
    }

    @Test(arguments: [
        ("another size", [InMemoryTransport.Step.respond(status: 200, headers: ["Content-Length": "11", "Last-Modified": ExistingFileTests.older])]),
        ("a newer date", [.respond(status: 200, headers: ["Content-Length": "10", "Last-Modified": ExistingFileTests.newer])]),
        ("no date", [.respond(status: 200, headers: ["Content-Length": "10"])]),
        ("no size", [.respond(status: 200, headers: ["Last-Modified": ExistingFileTests.older])]),
        ("an encoded size", [.respond(status: 200, headers: ["Content-Length": "10", "Content-Encoding": "gzip", "Last-Modified": ExistingFileTests.older])]),
        ("a 405", [.respond(status: 405, headers: ["Content-Length": "10", "Last-Modified": ExistingFileTests.older])]),
        ("a failed HEAD", [.fail(URLError(.networkConnectionLost))]),
    ])
    func anythingElseRunsTheGetAndReplacesTheFile(_ case: String, head: [InMemoryTransport.Step]) async throws {
        let file = try Self.existingFile()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let (request, methods) = try await Self.run(file, Self.transport(head: head))
        #expect(methods == ["HEAD", "GET"], "\(`case`)")
        #expect(request.state == .finished)
        #expect(try request.result?.get().keptExistingFile == false)
        #expect(try Data(contentsOf: file) == Data(Self.body.utf8))
        // The committed file dates from its Last-Modified, so that the next run can keep it.
        let modified = try FileManager.default.attributesOfItem(atPath: file.path)[.modificationDate] as? Date
        #expect(modified == Date(timeIntervalSince1970: 784_111_777))
    }

    @Test func aMissingFileIsFetchedWithoutAHeadAndKeptTheNextTime() async throws {
        let file = try Self.existingFile()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        try FileManager.default.removeItem(at: file)
        let head: [InMemoryTransport.Step] = [.respond(status: 200, headers: ["Content-Length": "10", "Last-Modified": Self.older])]
        let (first, methods) = try await Self.run(file, Self.transport(head: head))
        #expect(methods == ["GET"])
        #expect(first.state == .finished)
        // A rerun: the file the first run wrote is unchanged on the server.
        let (second, rerun) = try await Self.run(file, Self.transport(head: head))
        #expect(rerun == ["HEAD"])
        #expect(second.state == .finished)
        #expect(try Data(contentsOf: file) == Data(Self.body.utf8))
    }

    @Test func replaceIsTheDefaultAndSendsNoHead() async throws {
        let file = try Self.existingFile()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let transport = Self.transport(head: [])
        let queue = NetworkQueue.oneAttempt(transport: transport)
        let request = NetworkRequest(URLRequest(url: url(1)), destination: .file(file))
        #expect(request.fileOptions.existingFile == .replace)
        try queue.add(request)
        await queue.run()
        #expect(transport.startedRequests.map { $0.httpMethod ?? "GET" } == ["GET"])
        #expect(try Data(contentsOf: file) == Data(Self.body.utf8))
    }
}
