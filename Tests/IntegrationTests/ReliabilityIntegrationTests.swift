import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.admitted, .timeLimit(.minutes(10))) struct CredentialRedirectTests {
    static let credentials = [
        "Authorization": "Bearer SECRET", "Cookie": "sid=SECRET", "Proxy-Authorization": "Basic SECRET",
        "Accept": "x/y",
    ]

    func redirected(from a: LoopbackServer, to target: String, code: Int, method: String = "GET", body: Data? = nil)
        -> NetworkRequest
    {
        let location = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? target
        var urlRequest = URLRequest(url: a.url("/redirect/1?code=\(code)&to=\(location)"))
        urlRequest.httpMethod = method
        urlRequest.httpBody = body
        for (name, value) in Self.credentials { urlRequest.setValue(value, forHTTPHeaderField: name) }
        return NetworkRequest(urlRequest)
    }

    @Test(arguments: TransportKind.allCases, [301, 302, 303, 307, 308])
    func credentialsNeverReachAnotherOrigin(_ transport: TransportKind, code: Int) async throws {
        let a = try LoopbackServer()
        let b = try LoopbackServer()
        let queue = NetworkQueue.oneAttempt(transport: transport.make())
        queue.cancelsAllOnFailure = false
        let targets = ["http://127.0.0.1:\(b.port)/bytes/16", "http://localhost:\(b.port)/bytes/16"]
        let requests = targets.map { redirected(from: a, to: $0, code: code) }
        for request in requests { try queue.add(request) }
        await queue.run()
        #expect(requests.allSatisfy { $0.state == .finished }, "\(requests.map(\.result))")
        let seen = b.statistics.headers
        #expect(seen.count == 2)
        for headers in seen {
            #expect(
                headers["authorization"] == nil && headers["cookie"] == nil && headers["proxy-authorization"] == nil)
            #expect(headers["accept"] == "x/y")
        }
    }

    @Test(arguments: TransportKind.allCases) func theBodyReplayOf307StripsCredentialsToo(_ transport: TransportKind)
        async throws
    {
        let a = try LoopbackServer()
        let b = try LoopbackServer()
        let queue = NetworkQueue.oneAttempt(transport: transport.make())
        let request = redirected(
            from: a, to: "http://localhost:\(b.port)/upload", code: 307, method: "POST", body: Data(count: 1_000))
        try queue.add(request)
        await queue.run()
        #expect(try request.result?.get().body == Data("1000".utf8))
        #expect(b.statistics.log == ["POST /upload"])
        #expect(b.statistics.headers.first?["authorization"] == nil && b.statistics.headers.first?["cookie"] == nil)
    }

    @Test(arguments: TransportKind.allCases) func credentialsStayOnTheSameOrigin(_ transport: TransportKind)
        async throws
    {
        let a = try LoopbackServer()
        let queue = NetworkQueue.oneAttempt(transport: transport.make())
        try queue.add(redirected(from: a, to: "/bytes/16", code: 302))
        await queue.run()
        #expect(a.statistics.headers.last?["authorization"] == "Bearer SECRET")
        #expect(a.statistics.headers.last?["cookie"] == "sid=SECRET")
    }

    @Test(arguments: TransportKind.allCases) func aRedirectToAnotherSchemeIsRefused(_ transport: TransportKind)
        async throws
    {
        let a = try LoopbackServer()
        let queue = NetworkQueue.oneAttempt(transport: transport.make())
        let request = redirected(from: a, to: "ftp://127.0.0.1/file", code: 302)
        try queue.add(request)
        await queue.run()
        #expect(request.transportErrorCode == .unsupportedURL)
    }
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct CookieTests {
    @Test(arguments: TransportKind.allCases) func cookiesStayInTheTransportAndAreNeverPersisted(
        _ transport: TransportKind
    ) async throws {
        let server = try LoopbackServer()
        let queue = NetworkQueue.oneAttempt(transport: transport.make())
        try queue.add(request(server.url("/cookie?value=SECRET123"), tag: 1))
        await queue.run()
        try queue.add(request(server.url("/bytes/1"), tag: 2))
        await queue.run()
        // The transport's own store sent it back; the process-wide, persisted store never saw it.
        #expect(server.statistics.headers.last?["cookie"] == "session=SECRET123")
        #expect(HTTPCookieStorage.shared.cookies?.contains { $0.value == "SECRET123" } != true)
        // Another transport has a store of its own.
        let other = NetworkQueue.oneAttempt(transport: transport.make())
        try other.add(request(server.url("/bytes/2"), tag: 3))
        await other.run()
        #expect(server.statistics.headers.last?["cookie"] == nil)
    }

    @Test(arguments: TransportKind.allCases) func cookiesCanBeTurnedOff(_ transport: TransportKind) async throws {
        let server = try LoopbackServer()
        let queue = NetworkQueue.oneAttempt(transport: transport.make(cookies: false))
        try queue.add(request(server.url("/cookie?value=X"), tag: 1))
        await queue.run()
        try queue.add(request(server.url("/bytes/1"), tag: 2))
        await queue.run()
        #expect(server.statistics.headers.last?["cookie"] == nil)
    }
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct FileSafetyTests {
    @Test(arguments: TransportKind.allCases) func aDirectoryAtTheDestinationIsNeverDeleted(_ transport: TransportKind)
        async throws
    {
        let server = try LoopbackServer()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("precious")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        try Data("keep me".utf8).write(to: target.appendingPathComponent("inside.txt"))
        let (queue, _) = makeQueue(transport)
        let request = fileRequest(server.url("/bytes/100"), to: target)
        try queue.add(request)
        await queue.run()
        guard case .fileError(let path, _) = request.failure else {
            Issue.record("expected a file error, got \(String(describing: request.result))")
            return
        }
        #expect(path == target.path)
        #expect(try Data(contentsOf: target.appendingPathComponent("inside.txt")) == Data("keep me".utf8))
        #expect(server.statistics.requests == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["precious"])
    }

    /// A folder that appears at the destination after the request was added (nothing was there: its part's open does
    /// not look again) is refused when the part is linked into place, or named ahead of its end, and left as it was:
    /// a small body fails after its one request, a big one long before its end; nothing is left beside the folder.
    @Test(arguments: TransportKind.allCases) func aDirectoryThatAppearsAfterTheAddIsRefusedAndKept(
        _ transport: TransportKind
    ) async throws {
        let server = try LoopbackServer()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let big = 128 << 20
        for size in [100, big] {
            let target = directory.appendingPathComponent("late-\(size)")
            let before = server.statistics
            let (queue, _) = makeQueue(transport)
            let request = fileRequest(server.url("/bytes/\(size)"), to: target)
            try queue.add(request)
            try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
            try Data("keep me".utf8).write(to: target.appendingPathComponent("inside.txt"))
            await queue.run()
            #expect(request.failure == .fileError(path: target.path, reason: "is a directory"), "\(size)")
            #expect(try Data(contentsOf: target.appendingPathComponent("inside.txt")) == Data("keep me".utf8))
            #if os(Linux)
                #expect(server.statistics.requests - before.requests == 1)
            #else
                // Named parts: the open looks, and nothing is fetched.
                #expect(server.statistics.requests - before.requests == 0)
            #endif
            let written = server.statistics.bytesWritten - before.bytesWritten
            // libcurl stops within its socket's buffers. URLSession reads ahead of what it hands over, as fast as the
            // loopback server sends (measured: up to the whole 128 MiB before its cancel lands): no bound holds there.
            if size == big, transport == .curl { #expect(written < big / 4, "\(written)") }
            #expect(try FileManager.default.contentsOfDirectory(atPath: target.path) == ["inside.txt"])
        }
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["late-100", "late-\(big)"])
    }

    /// Before the fix about 5% of random cancels left a complete file at a cancelled request's destination.
    @Test(arguments: TransportKind.allCases) func aCancelledRequestNeverLeavesAFileAndAFinishedOneAlways(
        _ transport: TransportKind
    ) async throws {
        let server = try LoopbackServer()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let queue = NetworkQueue.oneAttempt(transport: transport.make())
        queue.maxConcurrentRequestCount = 8
        queue.cancelsAllOnFailure = false
        let requests = (0..<300).map { index in
            fileRequest(
                server.url("/bytes/\(1_000 + index)"), to: directory.appendingPathComponent("f\(index)"), tag: index)
        }
        for request in requests { try queue.add(request) }
        // Cancels aimed at the race: at a request's head its small body is about to complete, and the
        // cancel competes with the move into place (a stream is processed off the delivery executor).
        let stream = queue.events()
        queue.go()
        for await event in stream {
            if case .didReceiveHeaders(let request, _) = event, Bool.random() { queue.cancel(request) }
            if case .queueDidFinish = event { break }
        }
        await queue.run()
        var finished = 0
        for request in requests {
            let file = directory.appendingPathComponent("f\(request.tag)")
            switch request.state {
            case .finished:
                finished += 1
                #expect(try Data(contentsOf: file) == pattern(0..<(1_000 + request.tag)))
            default:
                #expect(request.state == .cancelled)
                #expect(!FileManager.default.fileExists(atPath: file.path), "cancelled \(request.tag) left its file")
            }
            #expect(!FileManager.default.fileExists(atPath: file.path + ".part"))
        }
        #expect(finished > 0)
    }
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct ResponseLimitTests {
    @Test(arguments: TransportKind.allCases) func anEndlessBodyIsCutAtTheCapAndTheConnectionClosed(
        _ transport: TransportKind
    ) async throws {
        let server = try LoopbackServer()
        let (queue, _) = makeQueue(transport)
        // Chunked, no length: only the count of decoded bytes can stop it. Linux URLSession reads ahead of
        // a slow client without bound, so what counts is what the server writes after the failure.
        // Throttled to 10 MB/s, so that Foundation's read-ahead during its slow cancel stays small.
        let url = server.url("/chunked/100000000000?rate=10000000")
        let writtenAtFailure = Box(0)
        let request = NetworkRequest(
            URLRequest(url: url),
            validation: .init(maximumResponseSize: .bytes(4 << 20)),
            handlers: .init(onCompletion: { _ in
                writtenAtFailure.with { $0 = server.statistics.bytesWritten }
            }))
        try queue.add(request)
        await queue.run()
        #expect(request.failure == .responseTooLarge(limit: 4 << 20, url: url))
        await eventually { server.statistics.inFlight == 0 }
        #expect(server.statistics.inFlight == 0, "the connection stayed open after the failure")
        let after = server.statistics.bytesWritten - writtenAtFailure.current
        // The queue cancels at once; Linux URLSession's cancel then blocks for 5–300 ms alone, seconds
        // under load, while libcurl keeps reading (unthrottled: 4–165 MB after the failure). At 10 MB/s
        // a body that kept flowing passes this bound within 7 s.
        #expect(after < 64 << 20, "the server wrote \(after) bytes after the failure")
    }

    // libcurl only: Linux URLSession reads ahead of a cancelled task at full speed (see the test above).
    @Test func endlessAndForeverTricklingBodiesEndAtTheCap() async throws {
        let server = try LoopbackServer()
        let (queue, _) = makeQueue(.curl)
        // Each ends on its own cap: one failing does not cancel the other.
        queue.cancelsAllOnFailure = false
        let endless = server.url("/endless")
        let trickle = server.url("/trickle/64/1/0?forever=1")
        let requests = [(endless, 1 << 20), (trickle, 4_096)].map { url, cap in
            NetworkRequest(URLRequest(url: url), validation: .init(maximumResponseSize: .bytes(Int64(cap))))
        }
        for request in requests { try queue.add(request) }
        await queue.run()
        #expect(requests[0].failure == .responseTooLarge(limit: 1 << 20, url: endless))
        #expect(requests[1].failure == .responseTooLarge(limit: 4_096, url: trickle))
        await eventually { server.statistics.inFlight == 0 }
        #expect(server.statistics.inFlight == 0, "a connection stayed open after its request ended")
    }
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct RedactionIntegrationTests {
    @Test(arguments: TransportKind.allCases) func aSiblingCancelDoesNotRevealTheFailedURLsSecrets(
        _ transport: TransportKind
    ) async throws {
        let server = try LoopbackServer()
        let (queue, _) = makeQueue(transport)
        let secret = URL(string: "http://user:PASSWORD@127.0.0.1:\(server.port)/status/500?token=SECRET")!
        let failing = NetworkRequest(URLRequest(url: secret))
        let sibling = request(server.url("/barrier/10?n=100"), tag: 2)
        try queue.add(failing)
        try queue.add(sibling)
        await queue.run()
        let text = try #require(sibling.failure).localizedDescription
        #expect(text == "cancelled because http://***@127.0.0.1:\(server.port)/status/500?token=*** failed")
        #expect(sibling.failure == .cancelledBecauseSiblingFailed(sibling: secret))
    }
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct TransportErrorRedactionTests {
    @Test(arguments: TransportKind.allCases) func theURLErrorOfAFailedTransferShowsNoSecret(_ transport: TransportKind)
        async throws
    {
        let server = try LoopbackServer()
        let queue = NetworkQueue.oneAttempt(transport: transport.make())
        let secret = URL(string: "http://user:PASSWORD@127.0.0.1:\(server.port)/drop/400000?token=SECRET#FRAGMENT")!
        let failing = NetworkRequest(URLRequest(url: secret))
        try queue.add(failing)
        await queue.run()
        guard case .transport(let error)? = failing.failure else {
            Issue.record("expected a transport error, got \(String(describing: failing.failure))")
            return
        }
        #expect(error.code == .networkConnectionLost)
        for text in [
            String(describing: error), String(reflecting: error), "\(error.userInfo)", error.localizedDescription,
        ] {
            #expect(!text.contains("PASSWORD") && !text.contains("SECRET") && !text.contains("FRAGMENT"), "\(text)")
        }
        #expect(error.failingURL?.absoluteString == "http://***@127.0.0.1:\(server.port)/drop/400000?token=***#***")
        // The request's own URL stays exact.
        #expect(failing.url == secret)
    }
}
