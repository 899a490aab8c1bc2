import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The guardian holds the folder (issue 73, DESIGN semantics 22): a file's folder is opened without a link as its part
/// opens and held to its commit, every entry named relative to it. A folder of the output swapped for a link while the
/// file is written is never followed: the file fails, saying so, nothing reaches the link's target, and the part
/// (in the folder held, moved away) is removed.
@Suite(.testLane, .timeLimit(.minutes(2))) struct HeldFolderIntegrationTests {
    static let size = 3 << 20

    @Test(arguments: TransportKind.allCases, [1, 4])
    func aFolderSwappedForALinkWhileItsFileIsWrittenFailsItAndNothingGoesThroughTheLink(
        _ transport: TransportKind, connections: Int
    ) async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("nq-held-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: base) }
        let (root, outside, moved) = (
            base.appendingPathComponent("out"), base.appendingPathComponent("outside"),
            base.appendingPathComponent("moved")
        )
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        let output = try OutputFolder(path: root.path)
        let destination = root.appendingPathComponent("sub/x.bin")
        let queue = NetworkQueue.oneAttempt(transport: transport.make())
        // Held at the file's middle byte: the part is open (named: more than a buffer's worth came) in sub. Every
        // response that reaches that byte is held there (one that starts past it, at once), so that no race of the end
        // game can finish the file before the swap (a range held at half its own length was raced in halves until a
        // racer's range fit in one write, which is never held: the file was whole before a busy machine swapped).
        let request = NetworkRequest(
            url: server.url("/bytes/\(Self.size)?stallByte=\(Self.size / 2)&hold=1"), destination: .file(destination),
            fileOptions: .init(maximumConnections: connections, minimumSegmentSize: 1 << 20, outputFolder: output))
        try queue.add(request)
        let run = Task { await queue.run() }
        await eventually { server.heldResponses > 0 }
        try FileManager.default.moveItem(at: root.appendingPathComponent("sub"), to: moved)
        try FileManager.default.createSymbolicLink(at: root.appendingPathComponent("sub"), withDestinationURL: outside)
        server.releaseHeld()
        _ = await run.value
        guard case .failure(.fileError(let path, let reason))? = request.result else {
            Issue.record("\(String(describing: request.result))")
            return
        }
        #expect(path == destination.path)
        #expect(reason.contains("sub in the output folder is a symbolic link"), "\(reason)")
        #expect(reason.contains("replaced while the file was written"), "\(reason)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path) == [])
        #expect(try FileManager.default.contentsOfDirectory(atPath: moved.path) == [])
    }

    /// A folder moved away while its file is written, nothing put in its place: the file fails as well, and the look at
    /// its place makes no folder there.
    @Test(arguments: TransportKind.allCases)
    func aFolderMovedAwayWhileItsFileIsWrittenFailsItAndIsNotMadeAgain(_ transport: TransportKind) async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("nq-held-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: base) }
        let (root, moved) = (base.appendingPathComponent("out"), base.appendingPathComponent("moved"))
        let output = try OutputFolder(path: root.path)
        let destination = root.appendingPathComponent("sub/x.bin")
        let queue = NetworkQueue.oneAttempt(transport: transport.make())
        let request = NetworkRequest(
            url: server.url("/bytes/\(Self.size)?stallAt=50&hold=1"), destination: .file(destination),
            fileOptions: .init(outputFolder: output))
        try queue.add(request)
        let run = Task { await queue.run() }
        await eventually { server.heldResponses > 0 }
        try FileManager.default.moveItem(at: root.appendingPathComponent("sub"), to: moved)
        server.releaseHeld()
        _ = await run.value
        guard case .failure(.fileError(let path, let reason))? = request.result else {
            Issue.record("\(String(describing: request.result))")
            return
        }
        #expect(path == destination.path)
        #expect(reason.contains("replaced while the file was written"), "\(reason)")
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("sub").path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: moved.path) == [])
    }
}
