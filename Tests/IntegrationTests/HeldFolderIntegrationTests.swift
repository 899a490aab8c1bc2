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
@Suite(.admitted, .timeLimit(.minutes(10))) struct HeldFolderIntegrationTests {
    static let size = 3 << 20

    /// Writes a 3 MB file to `sub/x.bin` of an output folder in `base` over `connections`, every response held at the
    /// file's middle byte while `sub` is moved to `moved` and `replace(sub)` runs, then let go. Returns the request's
    /// file error (nil, with an issue recorded, for any other result).
    ///
    /// Held at the file's middle byte: the part is open (named: more than a buffer's worth came) in sub. Every response
    /// that reaches that byte is held there (one that starts past it, at once), so that no race of the end game can
    /// finish the file before the swap (a range held at half its own length was raced in halves until a racer's range
    /// fit in one write, which is never held: the file was whole before a busy machine swapped).
    static func writtenWhileMoved(
        _ transport: TransportKind, connections: Int, in base: URL, to moved: URL, replace: (URL) throws -> Void
    ) async throws -> (path: String, reason: String)? {
        let server = try LoopbackServer()
        defer { server.stop() }
        let root = base.appendingPathComponent("out")
        let output = try OutputFolder(path: root.path)
        let queue = NetworkQueue.oneAttempt(transport: transport.make())
        let request = NetworkRequest(
            url: server.url("/bytes/\(Self.size)?stallByte=\(Self.size / 2)&hold=1"),
            destination: .file(root.appendingPathComponent("sub/x.bin")),
            fileOptions: .init(maximumConnections: connections, minimumSegmentSize: 1 << 20, outputFolder: output))
        try queue.add(request)
        let run = Task { await queue.run() }
        await eventually { server.heldResponses > 0 }
        let sub = root.appendingPathComponent("sub")
        try FileManager.default.moveItem(at: sub, to: moved)
        try replace(sub)
        server.releaseHeld()
        _ = await run.value
        guard case .failure(.fileError(let path, let reason))? = request.result else {
            Issue.record("\(String(describing: request.result))")
            return nil
        }
        return (path, reason)
    }

    @Test(arguments: TransportKind.allCases, [1, 4])
    func aFolderSwappedForALinkWhileItsFileIsWrittenFailsItAndNothingGoesThroughTheLink(
        _ transport: TransportKind, connections: Int
    ) async throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("nq-held-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: base) }
        let (outside, moved) = (base.appendingPathComponent("outside"), base.appendingPathComponent("moved"))
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        guard
            let (path, reason) = try await Self.writtenWhileMoved(
                transport, connections: connections, in: base, to: moved,
                replace: { try FileManager.default.createSymbolicLink(at: $0, withDestinationURL: outside) })
        else { return }
        #expect(path == base.appendingPathComponent("out/sub/x.bin").path)
        #expect(reason.contains("sub in the output folder is a symbolic link"), "\(reason)")
        #expect(reason.contains("replaced while the file was written"), "\(reason)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path) == [])
        #expect(try FileManager.default.contentsOfDirectory(atPath: moved.path) == [])
    }

    /// A folder moved away while its file is written, nothing put in its place: the file fails as well, and the look at
    /// its place makes no folder there.
    @Test(arguments: TransportKind.allCases)
    func aFolderMovedAwayWhileItsFileIsWrittenFailsItAndIsNotMadeAgain(_ transport: TransportKind) async throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("nq-held-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: base) }
        let moved = base.appendingPathComponent("moved")
        guard
            let (path, reason) = try await Self.writtenWhileMoved(
                transport, connections: 1, in: base, to: moved, replace: { _ in })
        else { return }
        #expect(path == base.appendingPathComponent("out/sub/x.bin").path)
        #expect(reason.contains("replaced while the file was written"), "\(reason)")
        #expect(!FileManager.default.fileExists(atPath: base.appendingPathComponent("out/sub").path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: moved.path) == [])
    }
}
