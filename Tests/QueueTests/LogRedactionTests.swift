import Foundation
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// No secret a request carries, in its URL or its headers, or a response carries in Set-Cookie, reaches a
/// log record, whatever the path: success, retry, redirect followed or refused, failure, cancel.
@Suite(.admitted, .timeLimit(.minutes(10))) struct LogRedactionTests {
    static let secrets = [
        "pa55word", "T0K3N", "FRAGSECRET", "AUTHSECRET", "COOKIESECRET", "PROXYSECRET", "SETCOOKIESECRET", "REDIRPASS",
        "REDIRSIG",
    ]

    /// Each path: what the transport does for attempt 1 and later attempts.
    static let table: [(name: String, steps: @Sendable (Int) -> [InMemoryTransport.Step])] = [
        (
            "success",
            { _ in [.respond(status: 200, headers: ["Set-Cookie": "s=SETCOOKIESECRET", "Content-Length": "0"])] }
        ),
        (
            "retry then success",
            { attempt in
                attempt == 1
                    ? [.respond(status: 503, headers: ["Content-Length": "0"])]
                    : [.respond(status: 200, headers: ["Content-Length": "0"])]
            }
        ),
        (
            "redirect followed",
            { _ in
                [
                    .redirect(
                        TransferRedirect(
                            statusCode: 302, from: secretURL,
                            to: URL(string: "http://u2:REDIRPASS@other.test/?sig=REDIRSIG")!)),
                    .respond(status: 200, headers: ["Content-Length": "0"]),
                ]
            }
        ),
        (
            "redirect refused",
            { _ in
                let refusal = URLError(
                    .unsupportedURL,
                    userInfo: [
                        NSURLErrorFailingURLErrorKey: URL(string: "http://u2:REDIRPASS@other.test/?sig=REDIRSIG")!
                    ])
                return [
                    .redirect(
                        TransferRedirect(
                            statusCode: 302, from: secretURL,
                            to: URL(string: "http://u2:REDIRPASS@other.test/?sig=REDIRSIG")!, refusal: refusal)),
                    .fail(refusal),
                ]
            }
        ),
        ("status failure", { _ in [.respond(status: 404, headers: ["Content-Length": "0"])] }),
        (
            "transport failure",
            { _ in [.fail(URLError(.networkConnectionLost, userInfo: [NSURLErrorFailingURLErrorKey: secretURL]))] }
        ),
    ]

    static let secretURL = URL(string: "http://user:pa55word@example.test/1?token=T0K3N&x=1#FRAGSECRET")!

    @Test(arguments: 0..<table.count) func noRecordCarriesASecret(_ index: Int) async throws {
        let attempts = Box(0)
        let steps = Self.table[index].steps
        let transport = InMemoryTransport { _ in
            steps(
                attempts.with {
                    $0 += 1
                    return $0
                })
        }
        let queue = NetworkQueue(transport: transport)
        queue.retryPolicy = RetryPolicy(backoff: .init(initialDelay: 0, jitter: false))
        let records = Box<[NetworkQueueLogRecord]>([])
        queue.logHandler = { record in records.with { $0.append(record) } }
        var urlRequest = URLRequest(url: Self.secretURL)
        urlRequest.setValue("Bearer AUTHSECRET", forHTTPHeaderField: "Authorization")
        urlRequest.setValue("c=COOKIESECRET", forHTTPHeaderField: "Cookie")
        urlRequest.setValue("Basic PROXYSECRET", forHTTPHeaderField: "Proxy-Authorization")
        try queue.add(NetworkRequest(urlRequest, tag: 1))
        await queue.run()
        #expect(records.current.count >= 4, "\(Self.table[index].name)")
        for record in records.current {
            for text in [record.message, record.description] {
                for secret in Self.secrets { #expect(!text.contains(secret), "\(Self.table[index].name): \(text)") }
            }
        }
    }

    @Test func aCancelledRequestsRecordsCarryNoSecret() async throws {
        let gate = TransferGate()
        let transport = InMemoryTransport { _ in [.hold(gate)] }
        let queue = NetworkQueue(transport: transport)
        let records = Box<[NetworkQueueLogRecord]>([])
        queue.logHandler = { record in records.with { $0.append(record) } }
        let request = NetworkRequest(URLRequest(url: Self.secretURL), tag: 1)
        try queue.add(request)
        queue.go()
        await transport.waitUntilStarted(1)
        queue.cancel(request)
        await queue.run()
        gate.open()
        #expect(records.current.map(\.event) == [.added, .attemptStarted, .cancelled])
        #expect(records.current[1].message == "attempt 1: GET http://***@example.test/1?token=***&x=***#***")
        for record in records.current { for secret in Self.secrets { #expect(!record.message.contains(secret)) } }
    }
}
