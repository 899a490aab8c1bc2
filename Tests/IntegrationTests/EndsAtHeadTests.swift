import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request that ends at its head (``NetworkRequest/Validation-swift.struct/endsAtHead``), over both transports: the
/// head is heard and checked, no body is read, and the request finishes with an empty body; a file destination with
/// it is refused before anything is sent.
@Suite(.admitted, .timeLimit(.minutes(10))) struct EndsAtHeadTests {
    static func headOnly(_ url: URL, tag: Int, acceptable: Range<Int>? = 200..<300) -> NetworkRequest {
        NetworkRequest(
            URLRequest(url: url), validation: .init(acceptableStatusCodes: acceptable, endsAtHead: true), tag: tag)
    }

    @Test(arguments: TransportKind.allCases)
    func anEndlessBodyIsNotReadAndTheRequestFinishesEmpty(_ transport: TransportKind) async throws {
        let server = try LoopbackServer()
        let queue = NetworkQueue.oneAttempt(transport: transport.make())
        queue.cancelsAllOnFailure = false
        // An endless chunked body, a known 50 MB one (never short: its body was not asked for), and an empty one.
        let endless = Self.headOnly(server.url("/endless?sndbuf=65536"), tag: 1)
        let sized = Self.headOnly(server.url("/bytes/50000000"), tag: 2)
        let empty = Self.headOnly(server.url("/bytes/0"), tag: 3)
        for request in [endless, sized, empty] { try queue.add(request) }
        await queue.run()
        for request in [endless, sized, empty] {
            #expect(request.state == .finished, "\(request.tag): \(String(describing: request.failure))")
            #expect(request.response?.body.isEmpty == true)
            #expect(request.response?.head.statusCode == 200)
        }
        #expect(sized.response?.head.expectedContentLength == 50_000_000)
        // Over libcurl the server wrote what the sockets' buffers held before the endless body's connection closed
        // (its send buffer 64 KiB), and the 50 MB one's (loopback's grows to a few MB at once). Foundation's URLSession
        // on Linux may lose the task's cancel and read on (LINUX-URLSESSION.md): none of it reaches the request.
        if transport == .curl {
            await eventually { server.statistics.openConnections == 0 }
            #expect(server.statistics.bytesWritten <= 8 << 20, "\(server.statistics.bytesWritten) bytes written")
        }
    }

    @Test(arguments: TransportKind.allCases)
    func anUnacceptableHeadStillFails(_ transport: TransportKind) async throws {
        let server = try LoopbackServer()
        let queue = NetworkQueue.oneAttempt(transport: transport.make())
        let missing = Self.headOnly(server.url("/status/404"), tag: 1)
        try queue.add(missing)
        await queue.run()
        guard case .unacceptableStatus(404, _)? = missing.failure else {
            Issue.record("\(String(describing: missing.failure))")
            return
        }
    }

    @Test func aFileDestinationIsRefused() async throws {
        let queue = NetworkQueue.oneAttempt(transport: TransportKind.curl.make())
        let file = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("nq-head-only-\(UUID()).bin")
        let request = NetworkRequest(
            URLRequest(url: URL(string: "http://127.0.0.1:9/x")!), destination: .file(file),
            validation: .init(endsAtHead: true), tag: 1)
        try queue.add(request)
        await queue.run()
        #expect(request.failure == .invalidRequest(.endsAtHeadWithFile(file)))
        #expect(!FileManager.default.fileExists(atPath: file.path))
    }
}
