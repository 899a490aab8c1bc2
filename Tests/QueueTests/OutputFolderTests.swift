import Foundation
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The output folder's guardian (``OutputFolder``) and the origin each file records (``FileOrigin``), driven through
/// the queue with scripted responses: hostile names at a batch's scale, links, reserved names, another origin's file.
@Suite(.admitted, .timeLimit(.minutes(10))) struct OutputFolderTests {
    /// A new folder under the temporary directory.
    static func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("nq-guard-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A new folder holding `out`, guarded, and `outside`, where nothing may be written: the folder to remove, `out`,
    /// `outside` and `out`'s guardian.
    static func folderWithOutside() throws -> (URL, URL, URL, OutputFolder) {
        let base = try folder()
        let root = base.appendingPathComponent("out")
        let outside = base.appendingPathComponent("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        return (base, root, outside, try OutputFolder(path: root.path))
    }

    /// The body of request `index`: its number, padded, so that each file is told from every other.
    static func body(_ index: Int) -> Data { Data("body of \(index)\n".utf8) }

    /// A transport answering `http://h.test/<i>` with ``body(_:)`` and the `Content-Disposition` `names(i)` gives.
    static func transport(names: @escaping @Sendable (Int) -> String?) -> InMemoryTransport {
        InMemoryTransport { urlRequest in
            let index = Int(urlRequest.url?.lastPathComponent ?? "") ?? -1
            var headers = ["Content-Length": "\(body(index).count)"]
            if let name = names(index) { headers["Content-Disposition"] = "attachment; filename=\"\(name)\"" }
            return [.respond(status: 200, headers: headers), .body(body(index))]
        }
    }

    @Test func aHostileBatchNeverPlantsAPartNeverTakesAnothersFileAndNeverLeavesTheFolder() async throws {
        // A batch's scale: one heavy test at a time (and never beside the heap's measurement).
        try await HeavyTests.exclusively { try await hostileBatch() }
    }

    private func hostileBatch() async throws {
        let count = max(400, TestEnvironment.bigBatch / 4)
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(at: root) }
        let output = try OutputFolder(path: root.path)
        // Each response names its file like the next request's part, the next request's file, a way out of the
        // folder, the part's validator, or with characters that hide what the name is.
        let names: @Sendable (Int) -> String? = { index in
            switch index % 6 {
            case 0: "f\(index + 1).bin.part"
            case 1: "f\(index + 1).bin"
            case 2: "../../f\(index).bin"
            case 3: "f\(index + 1).bin.part.validator"
            case 4: "invoice\u{202E}fdp\u{2028}.exe"
            default: nil
            }
        }
        let queue = NetworkQueue(transport: Self.transport(names: names))
        queue.maxConcurrentRequestCount = 8
        queue.cancelsAllOnFailure = false
        var requests: [NetworkRequest] = []
        for index in 0..<count {
            let place = try OutputFolder.Place(name: "f\(index).bin")
            let request = NetworkRequest(
                url: URL(string: "http://h.test/\(index)")!, destination: .file(output.url(for: place)),
                fileOptions: .init(namesFileFromResponse: true, outputFolder: output), tag: index)
            requests.append(request)
            try queue.add(request)
        }
        let progress = await queue.run()
        #expect(progress.finishedRequestCount == count, "\(progress)")
        // Every file in the folder, none of the project's own names, each with its own body and origin, one a request.
        let files = try FileManager.default.contentsOfDirectory(atPath: root.path)
        #expect(files.count == count)
        #expect(!files.contains { FileName.reservedSuffix(of: $0) != nil || $0.contains("\u{202E}") })
        var origins = Set<String>()
        for (index, request) in requests.enumerated() {
            let url = try #require(request.response?.fileURL)
            #expect(url.deletingLastPathComponent().path == root.path)
            #expect(try Data(contentsOf: url) == Self.body(index), "\(url.lastPathComponent)")
            if case .url(let origin) = FileOrigin.recorded(atPath: url.path) { origins.insert(origin) }
        }
        #expect(origins.count == count)
        #expect(requests[4].response?.fileURL?.lastPathComponent == "invoicefdp.exe")
        #expect(requests[0].response?.fileURL?.lastPathComponent == "f1.bin.part_")
    }

    @Test func theFolderRefusesALinkOnTheWayAReservedNameAndAPlaceOutsideAndTheRestGoOn() async throws {
        let (base, root, outside, output) = try Self.folderWithOutside()
        defer { try? FileManager.default.removeItem(at: base) }
        try FileManager.default.createSymbolicLink(at: root.appendingPathComponent("sub"), withDestinationURL: outside)
        try Data("a file".utf8).write(to: root.appendingPathComponent("plain"))
        let queue = NetworkQueue(transport: Self.transport(names: { _ in nil }))
        queue.cancelsAllOnFailure = false
        let cases: [(URL, String?)] = [
            (root.appendingPathComponent("sub/x"), "sub in the output folder is a symbolic link"),
            (root.appendingPathComponent("sub/deeper/x"), "sub in the output folder is a symbolic link"),
            (root.appendingPathComponent("plain/x"), "plain in the output folder is not a folder"),
            (root.appendingPathComponent("y.part"), "ends in .part"),
            (root.appendingPathComponent("y.PART.segments"), "ends in .part.segments"),
            (outside.appendingPathComponent("z"), "is not inside the output folder"),
            (root.appendingPathComponent("made/for/it"), nil),
        ]
        var requests: [NetworkRequest] = []
        for (index, (destination, _)) in cases.enumerated() {
            let request = NetworkRequest(
                url: URL(string: "http://h.test/\(index)")!, destination: .file(destination),
                fileOptions: .init(outputFolder: output))
            requests.append(request)
            try queue.add(request)
        }
        _ = await queue.run()
        for (request, (destination, why)) in zip(requests, cases) {
            guard let why else {
                #expect(try Data(contentsOf: destination) == Self.body(6))
                continue
            }
            guard case .failure(.invalidRequest(.unsafeDestination(let url, let reason)))? = request.result else {
                Issue.record("\(destination.path): \(String(describing: request.result))")
                continue
            }
            #expect(url == destination && reason.contains(why), "\(reason)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path).isEmpty)
    }

    @Test func aLinkPutOnTheWayAfterTheRequestWasAddedIsRefusedAsItsFileOpens() async throws {
        let (base, root, outside, output) = try Self.folderWithOutside()
        defer { try? FileManager.default.removeItem(at: base) }
        let queue = NetworkQueue(transport: Self.transport(names: { _ in nil }))
        let destination = root.appendingPathComponent("sub/x")
        let request = NetworkRequest(
            url: URL(string: "http://h.test/1")!, destination: .file(destination),
            fileOptions: .init(outputFolder: output))
        try queue.add(request)
        // Made as the request was added; replaced by a link before it starts.
        try FileManager.default.removeItem(at: root.appendingPathComponent("sub"))
        try FileManager.default.createSymbolicLink(at: root.appendingPathComponent("sub"), withDestinationURL: outside)
        _ = await queue.run()
        guard case .failure(.fileError(let path, let reason))? = request.result else {
            Issue.record("\(String(describing: request.result))")
            return
        }
        #expect(path == destination.path && reason.contains("sub in the output folder is a symbolic link"), "\(reason)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path).isEmpty)
    }

    @Test func aFileFromAnotherOriginIsNeitherKeptNorReplacedAndARerunFindsItsOwn() async throws {
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(at: root) }
        let file = root.appendingPathComponent("c.bin")
        let queue = NetworkQueue(transport: Self.transport(names: { _ in nil }))
        queue.cancelsAllOnFailure = false
        for policy in [NetworkRequest.ExistingFile.skipIfUnchanged, .replace] {
            // Request 1 saves c.bin; request 2, another URL with the same destination, goes beside it; each again
            // finds its own.
            for round in 0..<2 {
                for index in [1, 2] {
                    let request = NetworkRequest(
                        url: URL(string: "http://h.test/\(index)")!, destination: .file(file),
                        fileOptions: .init(existingFile: policy))
                    try queue.add(request)
                    _ = await queue.run()
                    let saved = try #require(request.response?.fileURL, "\(String(describing: request.result))")
                    #expect(saved.lastPathComponent == (index == 1 ? "c.bin" : "c-2.bin"), "\(policy) \(round)")
                }
                #expect(
                    try FileManager.default.contentsOfDirectory(atPath: root.path).sorted() == ["c-2.bin", "c.bin"])
                #expect(try Data(contentsOf: file) == Self.body(1))
                #expect(try Data(contentsOf: root.appendingPathComponent("c-2.bin")) == Self.body(2))
                #expect(FileOrigin.recorded(atPath: file.path) == .url("http://h.test/1"))
            }
        }
    }

    @Test func theOriginIsRecordedWithoutTheURLsUserOrPassword() {
        #expect(FileOrigin.text(of: URL(string: "http://u:p@h.test/a?x=1")!) == "http://h.test/a?x=1")
        #expect(FileOrigin.text(of: URL(string: "https://u@h.test:8443/a@b")!) == "https://h.test:8443/a@b")
        #expect(FileOrigin.text(of: URL(string: "http://h.test/a#f@g")!) == "http://h.test/a#f@g")
    }
}
