import Foundation
import NetworkQueue
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// ``NetworkRequest/ExistingFile/skipIfUnchanged``: a HEAD decides whether an existing file is kept.
@Suite(.admitted, .timeLimit(.minutes(10))) struct ExistingFileTests {
    static let body = "0123456789"
    static let older = "Sun, 06 Nov 1994 08:49:37 GMT"
    static let newer = "Wed, 01 Jan 2098 00:00:00 GMT"

    /// A directory with `file` holding ten bytes, modified at 2000-01-01.
    static func existingFile() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nq-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("file")
        try Data("abcdefghij".utf8).write(to: file)
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSince1970: 946_684_800)], ofItemAtPath: file.path)
        return file
    }

    /// HEAD answers `head`; GET answers the ten-byte body, last modified `older`.
    static func transport(head: [InMemoryTransport.Step]) -> InMemoryTransport {
        InMemoryTransport { urlRequest in
            guard urlRequest.httpMethod == "HEAD" else {
                return [
                    .respond(status: 200, headers: ["Content-Length": "10", "Last-Modified": older]),
                    .body(Data(body.utf8)),
                ]
            }
            return head
        }
    }

    /// Runs one skip-if-unchanged request for `file` over `transport`; returns the request and the methods sent.
    static func run(_ file: URL, _ transport: InMemoryTransport, recorder: Recorder = Recorder()) async throws -> (
        NetworkRequest, [String]
    ) {
        let queue = NetworkQueue.oneAttempt(transport: transport)
        queue.delegate = recorder
        let request = NetworkRequest(
            URLRequest(url: url(1)), destination: .file(file), fileOptions: .init(existingFile: .skipIfUnchanged),
            tag: 1)
        try queue.add(request)
        await queue.run()
        return (request, transport.startedRequests.map { $0.httpMethod ?? "GET" })
    }

    @Test func withAChecksumOnlyAFileThatHasItIsKept() async throws {
        // The file on disk has the right size and date but not the bytes the checksum names: fetched again,
        // with no HEAD (nothing the server says could keep it).
        let file = try Self.existingFile()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let head: [InMemoryTransport.Step] = [
            .respond(status: 200, headers: ["Content-Length": "10", "Last-Modified": Self.older])
        ]
        for (checksum, kept) in [
            (Checksum(hashing: Data(Self.body.utf8), .sha256), false),
            (Checksum(hashing: Data("abcdefghij".utf8), .sha256), true),
        ] {
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
            try FileManager.default.setAttributes(
                [.modificationDate: Date(timeIntervalSince1970: 946_684_800)], ofItemAtPath: file.path)
        }
    }

    @Test func theSameSizeAndAnOlderDateKeepTheFileWithoutAGet() async throws {
        let file = try Self.existingFile()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let recorder = Recorder()
        let transport = Self.transport(head: [
            .respond(status: 200, headers: ["Content-Length": "10", "Last-Modified": Self.older])
        ])
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
        (
            "another size",
            [
                InMemoryTransport.Step.respond(
                    status: 200, headers: ["Content-Length": "11", "Last-Modified": ExistingFileTests.older])
            ]
        ),
        (
            "a newer date",
            [.respond(status: 200, headers: ["Content-Length": "10", "Last-Modified": ExistingFileTests.newer])]
        ),
        ("no date", [.respond(status: 200, headers: ["Content-Length": "10"])]),
        ("no size", [.respond(status: 200, headers: ["Last-Modified": ExistingFileTests.older])]),
        (
            "an encoded size",
            [
                .respond(
                    status: 200,
                    headers: [
                        "Content-Length": "10", "Content-Encoding": "gzip", "Last-Modified": ExistingFileTests.older,
                    ])
            ]
        ),
        (
            "a 405",
            [.respond(status: 405, headers: ["Content-Length": "10", "Last-Modified": ExistingFileTests.older])]
        ),
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
        let head: [InMemoryTransport.Step] = [
            .respond(status: 200, headers: ["Content-Length": "10", "Last-Modified": Self.older])
        ]
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

    /// Only a regular file is written over or opened: a FIFO or a directory at the destination, or a FIFO at the
    /// `.part` path, fails the request with a file error at once (never waiting for a FIFO's reader) and is left
    /// as it was, whatever the request's existing-file rule.
    @Test(arguments: [NetworkRequest.ExistingFile.replace, .skipIfUnchanged])
    func somethingThatIsNotARegularFileIsRefusedAndLeftAlone(rule: NetworkRequest.ExistingFile) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nq-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent("fifo")
        #expect(mkfifo(fifo.path, 0o644) == 0)
        let folder = URL(fileURLWithPath: directory.appendingPathComponent("folder").path, isDirectory: false)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        let partFIFO = directory.appendingPathComponent("plain")
        #expect(mkfifo(partFIFO.path + ".part", 0o644) == 0)
        let cases: [(URL, String, String)] = [
            (fifo, fifo.path, "is not a regular file"), (folder, folder.path, "is a directory"),
            (partFIFO, partFIFO.path + ".part", "is not a regular file"),
        ]
        for (destination, path, reason) in cases {
            let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok())
            let request = NetworkRequest(
                URLRequest(url: url(1)), destination: .file(destination), fileOptions: .init(existingFile: rule))
            try queue.add(request)
            await queue.run()
            #expect(request.failure == .fileError(path: path, reason: reason), "\(destination.lastPathComponent)")
        }
        func type(_ url: URL) -> FileAttributeType? {
            try? FileManager.default.attributesOfItem(atPath: url.path)[.type] as? FileAttributeType
        }
        #expect(type(fifo) != nil && type(fifo) != .typeRegular)
        #expect(type(folder) == .typeDirectory)
        #expect(
            type(URL(fileURLWithPath: partFIFO.path + ".part")) != nil
                && type(URL(fileURLWithPath: partFIFO.path + ".part")) != .typeRegular)
        #expect(type(partFIFO) == nil)
    }
}
