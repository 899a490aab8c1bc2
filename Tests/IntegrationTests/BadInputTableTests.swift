import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One hostile input and the exact outcome it must have: no crash, no hang (every request carries a
/// timeout, generous for runs under the sanitizers), a typed result.
struct BadInput: Sendable, CustomTestStringConvertible {
    enum Outcome: Sendable, Equatable {
        /// Succeeds with this body (for memory destinations).
        case body(Data)
        /// Fails with exactly this error.
        case error(NetworkQueueError)
        /// Fails with this transport error code.
        case transport(URLError.Code)
        /// Fails with a file error at this path (relative to the test's directory).
        case fileError(String)
    }

    let name: String
    let make: @Sendable (LoopbackServer, URL) -> NetworkRequest
    let outcome: @Sendable (LoopbackServer) -> Outcome
    /// The transport whose outcome this is, when the other cannot give it (see the README's transport
    /// differences); nil: both.
    var only: TransportKind? = nil
    var testDescription: String { name }

    static func get(
        _ path: String, timeout: TimeInterval = 60, headers: [String: String] = [:], acceptable: Range<Int>? = 200..<300
    )
        -> @Sendable (LoopbackServer, URL) -> NetworkRequest
    {
        { server, _ in
            var request = URLRequest(url: server.url(path))
            request.timeoutInterval = timeout
            for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
            return NetworkRequest(request, validation: .init(acceptableStatusCodes: acceptable))
        }
    }

    static func raw(_ build: @escaping @Sendable () -> URLRequest) -> @Sendable (LoopbackServer, URL) -> NetworkRequest
    {
        { _, _ in NetworkRequest(build()) }
    }
}

let badInputs: [BadInput] = [
    BadInput(
        name: "timeout +infinity", make: BadInput.get("/redirect/1", timeout: .infinity),
        outcome: { _ in .body(pattern(0..<16)) }),
    BadInput(
        name: "timeout NaN", make: BadInput.get("/redirect/1", timeout: .nan), outcome: { _ in .body(pattern(0..<16)) }),
    BadInput(
        name: "timeout 1e300", make: BadInput.get("/redirect/1", timeout: 1e300),
        outcome: { _ in .body(pattern(0..<16)) }),
    BadInput(
        name: "timeout 0", make: BadInput.get("/bytes/1", timeout: 0),
        outcome: { _ in .error(.invalidRequest(.invalidTimeout(0))) }),
    BadInput(
        name: "timeout -5", make: BadInput.get("/bytes/1", timeout: -5),
        outcome: { _ in .error(.invalidRequest(.invalidTimeout(-5))) }),
    BadInput(
        name: "no URL",
        make: BadInput.raw {
            var request = URLRequest(url: URL(string: "http://x/")!)
            request.url = nil
            return request
        }, outcome: { _ in .error(.invalidRequest(.missingURL)) }),
    BadInput(
        name: "ftp scheme", make: BadInput.raw { URLRequest(url: URL(string: "ftp://127.0.0.1/x")!) },
        outcome: { _ in .error(.invalidRequest(.unsupportedScheme("ftp"))) }),
    BadInput(
        name: "file scheme", make: BadInput.raw { URLRequest(url: URL(fileURLWithPath: "/etc/passwd")) },
        outcome: { _ in .error(.invalidRequest(.unsupportedScheme("file"))) }),
    BadInput(
        name: "no host", make: BadInput.raw { URLRequest(url: URL(string: "http:///x")!) },
        outcome: { _ in .error(.invalidRequest(.missingHost(URL(string: "http:///x")!))) }),
    BadInput(
        name: "destination is a web URL",
        make: { server, _ in
            NetworkRequest(
                URLRequest(url: server.url("/bytes/1")), destination: .file(URL(string: "https://example.com/f")!))
        },
        outcome: { _ in .error(.invalidRequest(.invalidDestination(URL(string: "https://example.com/f")!))) }),
    BadInput(
        name: "destination is a directory",
        make: { server, directory in
            NetworkRequest(URLRequest(url: server.url("/bytes/1")), destination: .file(directory))
        },
        outcome: { _ in .fileError("") }),
    BadInput(
        name: "destination's folder is missing",
        make: { server, directory in
            NetworkRequest(
                URLRequest(url: server.url("/bytes/1")),
                destination: .file(directory.appendingPathComponent("no/such/f")))
        }, outcome: { _ in .fileError("no/such/f.part") }),
    BadInput(
        name: "100 Continue, validation on", make: BadInput.get("/bytes/5?continue=1"),
        outcome: { _ in .body(pattern(0..<5)) }),
    BadInput(
        name: "100 Continue, validation off", make: BadInput.get("/bytes/5?continue=1", acceptable: nil),
        outcome: { _ in .body(pattern(0..<5)) }),
    BadInput(
        name: "gzip truncated (identity asked)", make: BadInput.get("/gzip/200000?fault=truncate"),
        outcome: { _ in .body(pattern(0..<200_000)) }),
    BadInput(
        name: "gzip accepted and whole", make: BadInput.get("/gzip/200000", headers: ["Accept-Encoding": "gzip"]),
        outcome: { _ in .body(pattern(0..<200_000)) }),
    BadInput(
        name: "gzip corrupt", make: BadInput.get("/gzip/200000?fault=corrupt", headers: ["Accept-Encoding": "gzip"]),
        outcome: { _ in .transport(.cannotDecodeContentData) }),
    BadInput(
        name: "malformed status line", make: BadInput.get("/malformed"),
        outcome: { _ in .transport(.badServerResponse) }),
    BadInput(
        name: "connection reset mid-body", make: BadInput.get("/reset/400000"),
        outcome: { _ in .transport(.networkConnectionLost) }),
    BadInput(
        name: "connection closed mid-body", make: BadInput.get("/drop/400000"),
        outcome: { _ in .transport(.networkConnectionLost) }),
    BadInput(
        name: "Content-Length over the memory cap", make: BadInput.get("/bytes/100000000"),
        outcome: { server in .error(.responseTooLarge(limit: 64 << 20, url: server.url("/bytes/100000000"))) }),
    BadInput(
        name: "redirect loop", make: BadInput.get("/redirect/30"), outcome: { _ in .transport(.httpTooManyRedirects) }),
    BadInput(
        name: "redirect to ftp", make: BadInput.get("/redirect/1?to=ftp%3A%2F%2F127.0.0.1%2Fx"),
        outcome: { _ in .transport(.unsupportedURL) }),
    // Framing (RFC 9112 §6.3): two lengths, a malformed one, a bare CR/LF/NUL in a field.
    BadInput(
        name: "Content-Length twice, differing", make: BadInput.get("/raw/cl-conflict"),
        outcome: { _ in .transport(.badServerResponse) }),
    BadInput(
        name: "Content-Length list, differing", make: BadInput.get("/raw/cl-list"),
        outcome: { _ in .transport(.badServerResponse) }),
    BadInput(
        name: "Content-Length not a number", make: BadInput.get("/raw/cl-invalid"),
        outcome: { _ in .transport(.badServerResponse) }),
    BadInput(
        name: "Content-Length repeated, equal", make: BadInput.get("/raw/cl-same"),
        outcome: { _ in .body(Data("01234".utf8)) }),
    BadInput(
        name: "Content-Length beside chunked", make: BadInput.get("/raw/cl-chunked"),
        outcome: { _ in .body(Data("hello".utf8)) }),
    // A bare LF ends a line (RFC 9112 §2.2, as curl reads it): the head is two fields, both taken.
    BadInput(
        name: "bare LF in a field", make: BadInput.get("/raw/bare-lf"), outcome: { _ in .body(Data("ok".utf8)) },
        only: .curl),
    BadInput(
        name: "bare CR in a field", make: BadInput.get("/raw/bare-cr"),
        outcome: { _ in .transport(.badServerResponse) }, only: .curl),
    BadInput(
        name: "NUL in a field", make: BadInput.get("/raw/nul"), outcome: { _ in .transport(.badServerResponse) },
        only: .curl),
    BadInput(
        name: "redirect with a bare LF", make: BadInput.get("/raw/redirect-bare-lf"),
        outcome: { _ in .body(pattern(0..<4)) }, only: .curl),
    BadInput(
        name: "broken chunk framing", make: BadInput.get("/raw/bad-chunk"),
        outcome: { _ in .transport(.badServerResponse) }),
    BadInput(
        name: "head over the size limit", make: BadInput.get("/bighead?cookies=50&size=2000000"),
        outcome: { _ in .transport(.badServerResponse) }),
    BadInput(
        name: "status line, then close", make: BadInput.get("/raw/status-only"),
        outcome: { _ in .transport(.badServerResponse) }, only: .curl),
    BadInput(
        name: "gzip truncated (gzip asked)",
        make: BadInput.get("/gzip/5000?fault=truncate", headers: ["Accept-Encoding": "gzip"]),
        outcome: { _ in .transport(.cannotDecodeContentData) }, only: .curl),
    BadInput(
        name: "unknown Content-Encoding",
        make: BadInput.get("/gzip/5000?force=1&encoding=zz", headers: ["Accept-Encoding": "gzip"]),
        outcome: { _ in .transport(.cannotDecodeContentData) }),
    BadInput(
        name: "redirect to data:", make: BadInput.get("/redirect/1?to=data%3Atext%2Fplain%2Chi"),
        outcome: { _ in .transport(.unsupportedURL) }),
    BadInput(
        name: "redirect to javascript:", make: BadInput.get("/redirect/1?to=javascript%3Aalert(1)"),
        outcome: { _ in .transport(.unsupportedURL) }),
    BadInput(
        name: "redirect to file:", make: BadInput.get("/redirect/1?to=file%3A%2F%2F%2Fetc%2Fpasswd"),
        outcome: { _ in .transport(.unsupportedURL) }),
    BadInput(
        name: "nobody listening", make: BadInput.raw { URLRequest(url: URL(string: "http://127.0.0.1:1/")!) },
        outcome: { _ in .transport(.cannotConnectToHost) }),
]

@Suite(.admitted, .timeLimit(.minutes(10))) struct BadInputTableTests {
    @Test(arguments: TransportKind.allCases, badInputs)
    func eachBadInputHasItsExactOutcome(_ transport: TransportKind, _ input: BadInput) async throws {
        if let only = input.only, only != transport { return }
        let server = try LoopbackServer()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let queue = NetworkQueue.oneAttempt(transport: transport.make())
        let recorder = queue.recording()
        let request = input.make(server, directory)
        try queue.add(request)
        await queue.run()
        let outcome: BadInput.Outcome
        switch request.result {
        case .success(let response)?: outcome = .body(response.body)
        case .failure(.transport(let error))?: outcome = .transport(error.code)
        case .failure(.fileError(let path, _))?:
            outcome = .fileError(String(path.dropFirst(min(path.count, directory.path.count + 1))))
        case .failure(let error)?: outcome = .error(error)
        case nil: outcome = .error(.cancelled)
        }
        #expect(outcome == input.outcome(server))
        // Exactly one terminal event, then the drain's end.
        #expect(
            recorder.events.filter { if case .fail = $0 { true } else if case .finish = $0 { true } else { false } }
                .count == 1)
        #expect(recorder.events.last == .queueFinished && recorder.queueFinishedCount == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test(arguments: TransportKind.allCases) func addingTheSameRequestTwiceAndANegativeLimit(_ transport: TransportKind)
        async throws
    {
        let server = try LoopbackServer()
        let queue = NetworkQueue.oneAttempt(transport: transport.make())
        queue.maxConcurrentRequestCount = -3
        #expect(queue.maxConcurrentRequestCount == 0)
        let request = request(server.url("/bytes/1"), tag: 1)
        try queue.add(request)
        #expect(throws: NetworkQueueError.invalidRequest(.alreadyAdded)) { try queue.add(request) }
        await queue.run()
        #expect(request.state == .finished)
    }
}
