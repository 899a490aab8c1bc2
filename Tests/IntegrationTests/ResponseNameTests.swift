import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A file named by its response (`FileOptions.namesFileFromResponse`), over each transport: hostile names land inside
/// the folder, a name never replaces a file, two responses wanting one name get two, the response and the log say
/// where each went.
@Suite(.admitted, .timeLimit(.minutes(10))) struct ResponseNameTests {
    /// A path of the loopback server answering `size` bytes with `Content-Disposition: disposition`.
    static func path(_ size: Int, _ disposition: String, _ tag: Int) -> String {
        let header = "Content-Disposition:" + disposition
        return "/bytes/\(size)?tag=\(tag)&header=" + header.addingPercentEncoding(
            withAllowedCharacters: .alphanumerics)!
    }

    @Test(arguments: TransportKind.allCases) func hostileNamesLandSafelyInsideTheFolderAndNothingIsReplaced(
        _ transport: TransportKind
    ) async throws {
        let server = try LoopbackServer()
        let folder = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        // A file the user has, under a name a response will want: kept as it is.
        try Data("mine".utf8).write(to: folder.appendingPathComponent("taken.txt"))
        let queue = NetworkQueue(transport: transport.make())
        queue.cancelsAllOnFailure = false
        let log = Box<[String]>([])
        queue.logHandler = { record in if record.event == .finished { log.with { $0.append(record.message) } } }
        let dispositions = [
            #"attachment; filename="../../escape.txt""#, #"attachment; filename="/etc/passwd""#,
            #"attachment; filename="a/b.txt""#, "attachment; filename*=UTF-8''%E2%82%AC.txt",
            #"attachment; filename="taken.txt""#,
            #"attachment; filename="same.txt""#, #"attachment; filename="same.txt""#, #"attachment; filename="..""#,
            "attachment; filename*=UTF-8''%FF.txt",
            #"attachment; filename=""# + String(repeating: "n", count: 300) + #".bin""#,
        ]
        var requests: [NetworkRequest] = []
        for (tag, disposition) in dispositions.enumerated() {
            let request = NetworkRequest(
                url: server.url(Self.path(100 + tag, disposition, tag)),
                destination: .file(folder.appendingPathComponent("asked-\(tag).bin")),
                fileOptions: .init(namesFileFromResponse: true), tag: tag)
            requests.append(request)
            try queue.add(request)
        }
        let progress = await queue.run()
        #expect(progress.finishedRequestCount == dispositions.count)
        var names = requests.map { $0.response?.fileURL?.lastPathComponent ?? "" }
        // The two that want one name get it and its -2, in the order their heads came.
        #expect(names[5...6].sorted() == ["same-2.txt", "same.txt"])
        names[5...6] = ["*", "*"]
        #expect(
            names == [
                "escape.txt", "passwd", "b.txt", "€.txt", "taken-2.txt", "*", "*", "asked-7.bin", "asked-8.bin",
                String(repeating: "n", count: 196) + ".bin",
            ], "\(names)")
        // Every file inside the folder, each with its own body; the user's file untouched; nothing else left.
        for (tag, request) in requests.enumerated() {
            let url = try #require(request.response?.fileURL)
            #expect(url.deletingLastPathComponent().standardizedFileURL.path == folder.standardizedFileURL.path)
            #expect(try Data(contentsOf: url) == pattern(0..<(100 + tag)))
        }
        #expect(try String(contentsOf: folder.appendingPathComponent("taken.txt"), encoding: .utf8) == "mine")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(files.count == dispositions.count + 1, "\(files.sorted())")
        #expect(!files.contains { $0.hasSuffix(".part") })
        #expect(log.with { $0 }.filter { $0.contains("saved as ") }.count == 8)
    }

    @Test(arguments: TransportKind.allCases) func withoutTheOptionTheDestinationIsKept(_ transport: TransportKind)
        async throws
    {
        let server = try LoopbackServer()
        let folder = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let queue = NetworkQueue(transport: transport.make())
        let asked = folder.appendingPathComponent("asked.bin")
        let request = NetworkRequest(
            url: server.url(Self.path(10, #"attachment; filename="other.bin""#, 0)), destination: .file(asked))
        try queue.add(request)
        await queue.run()
        #expect(request.response?.fileURL?.path == asked.path)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["asked.bin"])
    }
}
