import CurlShim
import Foundation
import LoopbackServer
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

/// A rerun asks each file once (DESIGN semantics 23, ``NetworkRequest/ExistingFile/revalidate``), over both
/// transports: a conditional GET with the entity tag the file was saved under (else its date); 304 keeps the file, a
/// 200 replaces it through its part, and no HEAD is sent even with accurate progress on.
@Suite(.admitted, .timeLimit(.minutes(10))) struct RevalidationIntegrationTests {
    static let lastModified = "Sun, 06 Nov 1994 08:49:37 GMT"
    static let tagAttribute = "user.networkqueue.etag"

    /// The project's entity-tag attribute of the file at `path`, or nil.
    static func savedTag(_ path: String) -> String? {
        var buffer = [UInt8](repeating: 0, count: 1_024)
        let count = buffer.withUnsafeMutableBytes {
            nq_get_attribute(-1, path, tagAttribute, $0.baseAddress, UInt($0.count))
        }
        return count < 0 ? nil : String(decoding: buffer[..<count], as: UTF8.self)
    }

    /// Records `tag` as the entity tag the file at `path` was saved under, for its size and time as they are now: as
    /// though the server had another version when it was saved.
    static func recordTag(_ tag: String, at path: String) throws {
        let info = try FileManager.default.attributesOfItem(atPath: path)
        let size = (info[.size] as? NSNumber)?.int64Value ?? -1
        let modified = Int64((info[.modificationDate] as? Date)?.timeIntervalSince1970.rounded(.down) ?? 0)
        try setAttribute("\(size) \(modified) \(tag)", at: path)
    }

    /// Sets the extended attribute `name` (the project's entity-tag attribute unless given) of the file at `path` to
    /// `text`.
    static func setAttribute(_ text: String, at path: String, name: String = tagAttribute) throws {
        let fd = open(path, O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        #expect(nq_set_attribute(fd, name, text, UInt(text.utf8.count)) == 0)
    }

    /// `/bytes/size` with the tests' Last-Modified, saved as `f` in `folder` by a first run that revalidates it: its URL
    /// and the file's path.
    static func savedFile(_ size: Int, from server: LoopbackServer, in folder: URL, _ transport: TransportKind)
        async throws -> (url: URL, path: String)
    {
        let url = server.url("/bytes/\(size)?lastModified=Sun,%2006%20Nov%201994%2008:49:37%20GMT")
        try await run([revalidating(url, folder, "f", tag: 1)], transport)
        return (url, folder.appendingPathComponent("f").path)
    }

    /// The pattern bytes the loopback server's `/bytes/N` serves.
    static func pattern(_ count: Int) -> Data { Data((0..<count).map { UInt8($0 % 256) }) }

    /// One run of `requests` on a new queue over `transport`, accurate progress on.
    static func run(_ requests: [NetworkRequest], _ transport: TransportKind) async throws {
        let queue = NetworkQueue.oneAttempt(transport: transport.make())
        queue.showsAccurateProgress = true
        queue.maxConcurrentRequestCount = 4
        queue.cancelsAllOnFailure = false
        for request in requests { try queue.add(request) }
        await queue.run()
    }

    /// A revalidating request for `url` saved as `name` in `folder`.
    static func revalidating(
        _ url: URL, _ folder: URL, _ name: String, tag: Int, options: NetworkRequest.FileOptions = .init()
    ) -> NetworkRequest {
        var options = options
        options.existingFile = .revalidate
        return NetworkRequest(
            URLRequest(url: url), destination: .file(folder.appendingPathComponent(name)), fileOptions: options,
            tag: tag)
    }

    /// The bytes of the file at `url`. An empty file is not read: FoundationEssentials' `readBytesFromFile` leaks its
    /// 4 KiB buffer for one (seen by LeakSanitizer).
    static func contents(of url: URL) throws -> Data {
        let size = try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int ?? 0
        return size == 0 ? Data() : try Data(contentsOf: url)
    }

    /// The names in `folder`, sorted.
    static func names(_ folder: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
    }

    @Test(arguments: TransportKind.allCases)
    func aRerunSendsOneConditionalGetPerFileAndKeepsEvery304(_ transport: TransportKind) async throws {
        let server = try LoopbackServer()
        let folder = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let sizes = [1_000, 20_000, 0, 70_000, 5]
        let urls = sizes.map { server.url("/bytes/\($0)?lastModified=Sun,%2006%20Nov%201994%2008:49:37%20GMT") }
        let batch = { urls.indices.map { Self.revalidating(urls[$0], folder, "f\($0)", tag: $0) } }
        let first = batch()
        try await Self.run(first, transport)
        #expect(first.allSatisfy { $0.state == .finished && $0.response?.keptExistingFile == false })
        for (index, size) in sizes.enumerated() {
            let path = folder.appendingPathComponent("f\(index)").path
            #expect(FileOrigin.recorded(atPath: path) == .url(urls[index].absoluteString))
            // The tag, with the file's size and its time (the response's Last-Modified).
            #expect(Self.savedTag(path) == "\(size) 784111777 \"bytes-\(size)\" \(urls[index].absoluteString)")
        }
        server.resetStatistics()
        let second = batch()
        try await Self.run(second, transport)
        for (index, request) in second.enumerated() {
            let response = try #require(request.response, "\(String(describing: request.failure))")
            #expect(response.keptExistingFile && response.statusCode == 304)
            #expect(response.fileURL == folder.appendingPathComponent("f\(index)"))
            #expect(try Self.contents(of: response.fileURL!) == Self.pattern(sizes[index]))
        }
        // One GET a file, no HEAD, each with the tag the file was saved under; nothing left beside the files.
        let statistics = server.statistics
        #expect(statistics.log.sorted() == urls.map { "GET \($0.path)?lastModified=\(Self.lastModified)" }.sorted())
        #expect(
            statistics.headers.map { $0["if-none-match"] ?? "-" }.sorted()
                == sizes.map { "\"bytes-\($0)\"" }.sorted())
        #expect(try Self.names(folder) == sizes.indices.map { "f\($0)" })
    }

    @Test(arguments: TransportKind.allCases)
    func aFileTheServerChangedIsReplacedByTheSameRequest(_ transport: TransportKind) async throws {
        let server = try LoopbackServer()
        let folder = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (url, path) = try await Self.savedFile(3000, from: server, in: folder, transport)
        // The file as an older version was saved: other bytes of the same size, under another tag.
        try Data(repeating: 7, count: 3000).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSince1970: 784_111_777)], ofItemAtPath: path)
        try Self.recordTag("\"older\"", at: path)
        server.resetStatistics()
        let rerun = Self.revalidating(url, folder, "f", tag: 2)
        try await Self.run([rerun], transport)
        let response = try #require(rerun.response, "\(String(describing: rerun.failure))")
        #expect(response.statusCode == 200 && !response.keptExistingFile)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Self.pattern(3000))
        #expect(server.statistics.log.count == 1)
        #expect(server.statistics.headers.first?["if-none-match"] == "\"older\"")
        #expect(Self.savedTag(path) == "3000 784111777 \"bytes-3000\" \(url.absoluteString)")
        #expect(try Self.names(folder) == ["f"])
    }

    @Test(arguments: TransportKind.allCases)
    func aFileChangedOnDiskIsFetchedWholeAndOneWithoutARecordByItsDate(_ transport: TransportKind) async throws {
        let server = try LoopbackServer()
        let folder = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (url, path) = try await Self.savedFile(500, from: server, in: folder, transport)
        // Changed since it was saved (a byte more): its record no longer describes it, and a conditional request
        // would keep it. Fetched whole, with no validator.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([1]))
        try handle.close()
        server.resetStatistics()
        let changed = Self.revalidating(url, folder, "f", tag: 2)
        try await Self.run([changed], transport)
        #expect(changed.response?.statusCode == 200)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Self.pattern(500))
        // Its HEAD (accurate progress: a file fetched whole is sized first), then its GET, neither conditional.
        #expect(server.statistics.log.map { $0.prefix(4) } == ["HEAD", "GET "])
        #expect(server.statistics.headers.map { $0["if-none-match"] ?? $0["if-modified-since"] ?? "-" } == ["-", "-"])
        // No record it can trust (another program's text; a file system without attributes keeps none): asked by
        // its date, which is the response's Last-Modified.
        try Self.setAttribute("not ours", at: path)
        server.resetStatistics()
        let dated = Self.revalidating(url, folder, "f", tag: 3)
        try await Self.run([dated], transport)
        #expect(dated.response?.keptExistingFile == true)
        #expect(dated.response?.statusCode == 304)
        #expect(server.statistics.headers.map { $0["if-modified-since"] ?? "-" } == [Self.lastModified])
        #expect(server.statistics.headers.first?["if-none-match"] == nil)
        #expect(try Self.names(folder) == ["f"])
    }

    @Test(arguments: TransportKind.allCases)
    func a304ThatClaimsABodyKeepsTheFileAndWaitsForNone(_ transport: TransportKind) async throws {
        let server = try LoopbackServer()
        let folder = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = server.url("/bytes/800?lie304=800")
        try await Self.run([Self.revalidating(url, folder, "f", tag: 1)], transport)
        let rerun = Self.revalidating(url, folder, "f", tag: 2)
        try await Self.run([rerun], transport)
        #expect(rerun.response?.keptExistingFile == true, "\(String(describing: rerun.failure))")
        #expect(try Data(contentsOf: folder.appendingPathComponent("f")) == Self.pattern(800))
        #expect(try Self.names(folder) == ["f"])
    }

    /// A file saved under an entity tag records its origin in the tag's record too, so a rerun reads one attribute a
    /// file: while that record describes the file it says whose the file is, and the origin's own attribute is not
    /// read. Pinned by an origin attribute another program rewrote after the save: the file is still the request's,
    /// asked once and kept (read from the origin's attribute, it would be another's, and fetched beside it).
    @Test(arguments: TransportKind.allCases)
    func aRerunReadsTheFilesOriginFromItsTagsRecord(_ transport: TransportKind) async throws {
        let server = try LoopbackServer()
        let folder = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (url, path) = try await Self.savedFile(1000, from: server, in: folder, transport)
        #expect(Self.savedTag(path) == "1000 784111777 \"bytes-1000\" \(url.absoluteString)")
        try Self.setAttribute("http://elsewhere.invalid/f", at: path, name: "user.xdg.origin.url")
        server.resetStatistics()
        let rerun = Self.revalidating(url, folder, "f", tag: 2)
        try await Self.run([rerun], transport)
        #expect(rerun.response?.statusCode == 304 && rerun.response?.keptExistingFile == true)
        #expect(server.statistics.log.count == 1)
        #expect(try Self.names(folder) == ["f"])
    }

    /// A file to revalidate is not looked at again before its request goes (its part is made at a head that replaces
    /// it): a folder put in its place after the add is refused at the changed version's head, before a byte is
    /// written, and kept as it was.
    @Test(arguments: TransportKind.allCases)
    func aFolderThatReplacedARevalidatedFileIsRefusedAtTheHeadAndKept(_ transport: TransportKind) async throws {
        let server = try LoopbackServer()
        let folder = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (url, path) = try await Self.savedFile(3000, from: server, in: folder, transport)
        // Saved under another tag: the server's answer is a 200.
        try Self.recordTag("\"older\"", at: path)
        let queue = NetworkQueue.oneAttempt(transport: transport.make())
        let rerun = Self.revalidating(url, folder, "f", tag: 2)
        try queue.add(rerun)
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: path + "/inside.txt"))
        server.resetStatistics()
        await queue.run()
        #expect(
            rerun.failure == .fileError(path: path, reason: "is a directory"), "\(String(describing: rerun.result))")
        #expect(server.statistics.log.count == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: path) == ["inside.txt"])
        #expect(try Self.names(folder) == ["f"])
    }

    @Test(arguments: TransportKind.allCases)
    func aSplitFileIsAskedOnceAndSplitAsANewOneWhenItChanged(_ transport: TransportKind) async throws {
        let server = try LoopbackServer()
        let folder = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let size = 1 << 20
        // Paced, so that the file's other connections start before its first one brings it all.
        let url = server.url("/bytes/\(size)?lastModified=Sun,%2006%20Nov%201994%2008:49:37%20GMT&rate=500000")
        let options = NetworkRequest.FileOptions(maximumConnections: 4, minimumSegmentSize: 64 << 10)
        try await Self.run([Self.revalidating(url, folder, "f", tag: 1, options: options)], transport)
        let path = folder.appendingPathComponent("f").path
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Self.pattern(size))
        #expect(Self.savedTag(path) == "\(size) 784111777 \"bytes-\(size)\" \(url.absoluteString)")
        server.resetStatistics()
        let unchanged = Self.revalidating(url, folder, "f", tag: 2, options: options)
        try await Self.run([unchanged], transport)
        #expect(unchanged.response?.keptExistingFile == true, "\(String(describing: unchanged.failure))")
        #expect(server.statistics.log.count == 1)
        // Changed on the server: the first connection's 200 is split as a new file, its ranges asked without the old tag.
        try Self.recordTag("\"older\"", at: path)
        server.resetStatistics()
        let changed = Self.revalidating(url, folder, "f", tag: 3, options: options)
        try await Self.run([changed], transport)
        #expect(changed.response?.keptExistingFile == false, "\(String(describing: changed.failure))")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Self.pattern(size))
        let headers = server.statistics.headers
        #expect(headers.filter { $0["if-none-match"] != nil }.map { $0["if-none-match"] } == ["\"older\""])
        #expect(headers.filter { $0["range"] != nil }.count >= 1)
        #expect(try Self.names(folder) == ["f"])
    }

    @Test(arguments: TransportKind.allCases)
    func aFileNamedByItsResponseIsFoundByItsOriginAndNotCopied(_ transport: TransportKind) async throws {
        let server = try LoopbackServer()
        let folder = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = server.url(
            "/bytes/700?lastModified=Sun,%2006%20Nov%201994%2008:49:37%20GMT"
                + "&header=Content-Disposition:attachment;%20filename%3D%22named.bin%22")
        let options = NetworkRequest.FileOptions(namesFileFromResponse: true)
        let first = Self.revalidating(url, folder, "from-url", tag: 1, options: options)
        try await Self.run([first], transport)
        #expect(first.response?.fileURL?.lastPathComponent == "named.bin")
        #expect(try Self.names(folder) == ["named.bin"])
        server.resetStatistics()
        let rerun = Self.revalidating(url, folder, "from-url", tag: 2, options: options)
        try await Self.run([rerun], transport)
        #expect(rerun.response?.keptExistingFile == true, "\(String(describing: rerun.failure))")
        #expect(rerun.response?.fileURL == folder.appendingPathComponent("named.bin"))
        #expect(server.statistics.headers.map { $0["if-none-match"] ?? "-" } == ["\"bytes-700\""])
        // Changed on the server: the same name is replaced, no second copy.
        try Self.recordTag("\"older\"", at: folder.appendingPathComponent("named.bin").path)
        let changed = Self.revalidating(url, folder, "from-url", tag: 3, options: options)
        try await Self.run([changed], transport)
        #expect(changed.response?.statusCode == 200, "\(String(describing: changed.failure))")
        #expect(changed.response?.fileURL?.lastPathComponent == "named.bin")
        #expect(try Self.names(folder) == ["named.bin"])
        #expect(try Data(contentsOf: folder.appendingPathComponent("named.bin")) == Self.pattern(700))
    }

    #if os(Linux)
        /// The test: 200 files from nginx saved, then rerun: 200 requests, no HEAD, 200 × 304; three changed on
        /// the server: exactly those three fetched, byte-exact.
        @Test(
            .enabled(
                if: StaticWebServer.path(of: .nginx) != nil
                    || TestEnvironment.integer("NQ_REQUIRE_REAL_SERVERS", default: 0) != 0,
                "needs nginx (apt-get install nginx)"),
            arguments: TransportKind.allCases)
        func twoHundredFilesFromNginxAreAskedOnceEachAndOnlyTheChangedAreFetched(_ transport: TransportKind)
            async throws
        {
            let root = try temporaryDirectory()
            let folder = try temporaryDirectory()
            defer {
                try? FileManager.default.removeItem(at: root)
                try? FileManager.default.removeItem(at: folder)
            }
            _ = chmod(root.path, 0o755)
            let count = 200
            for index in 0..<count {
                try Data(repeating: UInt8(index % 251), count: 1 + index * 37 % 9_000)
                    .write(to: root.appendingPathComponent("file\(index).bin"))
            }
            try await StaticWebServer.with(.nginx, root: root, rate: 0, logsAccess: true) { nginx in
                let batch = {
                    (0..<count).map {
                        Self.revalidating(nginx.url("/file\($0).bin"), folder, "file\($0).bin", tag: $0)
                    }
                }
                let first = batch()
                try await Self.run(first, transport)
                #expect(first.filter { $0.state == .finished }.count == count)
                // A batch's lines, once each of its requests has one (more fail the exact counts below).
                let afterFirst = await nginx.accessLog(after: 0, awaiting: count).count
                let second = batch()
                try await Self.run(second, transport)
                let secondLog = await nginx.accessLog(after: afterFirst, awaiting: count)
                #expect(secondLog.count == count)
                // Each with the entity tag nginx gave the file (its log writes a quote as \x22).
                #expect(
                    secondLog.filter { $0.hasPrefix("GET ") && $0.contains(" 304 \"\\x22") }.count == count,
                    "\(secondLog.prefix(3))")
                #expect(second.filter { $0.response?.keptExistingFile == true }.count == count)
                // Three change on the server: new bytes, another size, a later time.
                let changed = [3, 100, 199]
                for index in changed {
                    try StaticWebServer.change(
                        root.appendingPathComponent("file\(index).bin"), to: Data(repeating: 0xEE, count: 5_000 + index)
                    )
                }
                let afterSecond = afterFirst + secondLog.count
                let third = batch()
                try await Self.run(third, transport)
                let thirdLog = await nginx.accessLog(after: afterSecond, awaiting: count)
                #expect(thirdLog.count == count)
                #expect(
                    thirdLog.filter { $0.contains(" 200 ") }.sorted()
                        == changed.map { index in
                            thirdLog.first { $0.hasPrefix("GET /file\(index).bin 200 ") } ?? "missing \(index)"
                        }.sorted())
                #expect(third.filter { $0.response?.keptExistingFile == true }.count == count - changed.count)
                for index in changed {
                    #expect(
                        try Data(contentsOf: folder.appendingPathComponent("file\(index).bin"))
                            == Data(repeating: 0xEE, count: 5_000 + index))
                }
                #expect(try Self.names(folder).count == count)
            }
        }
    #endif
}
