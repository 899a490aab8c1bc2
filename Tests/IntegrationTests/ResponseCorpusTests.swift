import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Odd but real server responses (`/raw/NAME` on the loopback server), each with the outcome curl and RFC
/// 9112 give it, over both transports. Where Foundation's URLSession on Linux cannot give it, the row says
/// what it gives instead and why (the README's table of transport differences).
struct CorpusRow: Sendable, CustomTestStringConvertible {
    enum Outcome: Sendable, Equatable {
        case body(Data)
        /// The body is ``LoopbackServer/corpusText`` (kept as a case: a large `Data` held by the test table
        /// reads as a leak to LeakSanitizer).
        case corpusBody
        case transport(URLError.Code)
        case status(Int)
        /// Not run: the reason is a documented Foundation limit.
        case notRun(String)
    }

    let name: String
    var acceptEncoding: String? = nil
    let curl: Outcome
    let urlSession: Outcome
    var testDescription: String { name }

    func outcome(_ transport: TransportKind) -> Outcome { transport == .curl ? curl : urlSession }
}

private let hello = CorpusRow.Outcome.body(Data("hello".utf8))
private let corpusBody = CorpusRow.Outcome.corpusBody
private let bad = CorpusRow.Outcome.transport(.badServerResponse)
private let undecodable = CorpusRow.Outcome.transport(.cannotDecodeContentData)

let responseCorpus: [CorpusRow] = [
    CorpusRow(name: "lf-only", curl: hello, urlSession: bad),
    CorpusRow(name: "lf-mixed", curl: hello, urlSession: bad),
    CorpusRow(name: "obs-fold", curl: hello, urlSession: hello),
    CorpusRow(name: "first-field-folded", curl: bad, urlSession: bad),
    // Only a proxy sends 407 (RFC 9110 §15.5.8): the origin never answered.
    CorpusRow(
        name: "proxy-407", curl: .transport(.userAuthenticationRequired),
        urlSession: .transport(.userAuthenticationRequired)),
    CorpusRow(
        name: "te-folded", curl: bad,
        urlSession: .notRun("Foundation shows the folded field unfolded, though libcurl framed the body without it")),
    CorpusRow(name: "cl-folded", curl: bad, urlSession: bad),
    CorpusRow(name: "te-space-before-colon", curl: bad, urlSession: bad),
    CorpusRow(name: "trailers", curl: hello, urlSession: .notRun("Foundation crashes the process on chunked trailers")),
    CorpusRow(name: "te-chunked-unknown", curl: bad, urlSession: bad),
    CorpusRow(name: "te-unknown-chunked", curl: undecodable, urlSession: undecodable),
    CorpusRow(name: "te-identityx", curl: undecodable, urlSession: undecodable),
    CorpusRow(name: "te-chunked-gzip", curl: bad, urlSession: bad),
    CorpusRow(name: "te-gzip-chunked", curl: corpusBody, urlSession: corpusBody),
    CorpusRow(name: "te-deflate-chunked", curl: corpusBody, urlSession: corpusBody),
    CorpusRow(name: "te-gzip-close", curl: corpusBody, urlSession: corpusBody),
    CorpusRow(name: "te-gzip-ce-deflate", acceptEncoding: "deflate", curl: corpusBody, urlSession: corpusBody),
    CorpusRow(name: "ce-gzip-chain-5", acceptEncoding: "gzip", curl: corpusBody, urlSession: corpusBody),
    CorpusRow(name: "ce-gzip-chain-6", acceptEncoding: "gzip", curl: undecodable, urlSession: undecodable),
    CorpusRow(name: "interim-103", curl: .body(Data("ok".utf8)), urlSession: .body(Data("ok".utf8))),
    CorpusRow(name: "204-with-body", curl: .body(Data()), urlSession: .body(Data())),
    CorpusRow(name: "304-with-body", curl: .status(304), urlSession: .status(304)),
    CorpusRow(name: "http10-no-length", curl: hello, urlSession: hello),
    CorpusRow(name: "ce-none", acceptEncoding: "gzip", curl: hello, urlSession: hello),
    CorpusRow(name: "location-empty", curl: .status(302), urlSession: bad),
    CorpusRow(name: "location-twice", curl: bad, urlSession: bad),
    CorpusRow(
        name: "location-repeated", curl: .body(pattern(0..<4)),
        urlSession: .notRun("Foundation joins the two values before the redirect can be seen: refused as two places")),
    CorpusRow(
        name: "redirect-close-body", curl: .body(pattern(0..<4)),
        urlSession: .notRun("Foundation reads a redirect's body to its end before following it")),
    CorpusRow(name: "status-in-fields-401", curl: bad, urlSession: bad),
    CorpusRow(name: "status-in-fields-302", curl: bad, urlSession: bad),
    CorpusRow(name: "bad-chunk", curl: bad, urlSession: bad),
]

@Suite(.admitted, .serialized, .timeLimit(.minutes(10))) struct ResponseCorpusTests {
    @Test(arguments: TransportKind.allCases, responseCorpus)
    func eachOddResponseHasTheOutcomeCurlAndTheRFCGiveIt(_ transport: TransportKind, _ row: CorpusRow) async throws {
        let expected = row.outcome(transport)
        if case .notRun = expected { return }
        let server = try LoopbackServer()
        let queue = NetworkQueue.oneAttempt(transport: transport.make())
        let recorder = queue.recording()
        var urlRequest = URLRequest(url: server.url("/raw/\(row.name)"))
        urlRequest.timeoutInterval = 30
        if let coding = row.acceptEncoding { urlRequest.setValue(coding, forHTTPHeaderField: "Accept-Encoding") }
        let request = NetworkRequest(urlRequest)
        try queue.add(request)
        await queue.run()
        let outcome: CorpusRow.Outcome
        switch request.result {
        case .success(let response)?:
            outcome =
                response.body == Data(LoopbackServer.corpusText.utf8) ? .corpusBody : .body(response.body.prefix(64))
        case .failure(.transport(let error))?: outcome = .transport(error.code)
        case .failure(.unacceptableStatus(let code, _))?: outcome = .status(code)
        case let other: outcome = .notRun("unexpected \(String(describing: other))")
        }
        #expect(outcome == expected)
        #expect(
            recorder.events.filter { if case .fail = $0 { true } else if case .finish = $0 { true } else { false } }
                .count == 1)
        #expect(recorder.queueFinishedCount == 1)
    }
}
