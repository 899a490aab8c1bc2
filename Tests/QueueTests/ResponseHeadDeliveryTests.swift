import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A response costs no `HTTPURLResponse` unless someone reads one; whoever reads one gets the same object.
@Suite(.admitted, .timeLimit(.minutes(10))) struct ResponseHeadDeliveryTests {
    /// Hears heads as ``ResponseHead``s only.
    final class HeadListener: NetworkQueueDelegate {
        let heads = Box<[ResponseHead]>([])
        func networkQueue(_ queue: NetworkQueue, didReceiveHeaders request: NetworkRequest, head: ResponseHead) {
            heads.with { $0.append(head) }
        }
    }

    func fields(of head: ResponseHead) -> [String] { head.fields.map { "\($0.name): \($0.value)" } }

    /// Runs one request answered with `body` on a queue with `delegate`; returns its response.
    func response(to body: String, delegate: any NetworkQueueDelegate) async throws -> NetworkResponse {
        let queue = NetworkQueue(transport: InMemoryTransport.ok(body))
        queue.delegate = delegate
        let request = request(1)
        try queue.add(request)
        await queue.run()
        return try #require(try request.result?.get())
    }

    @Test func withNobodyAskingNoHTTPURLResponseIsBuilt() async throws {
        let queue = NetworkQueue(transport: InMemoryTransport.ok("abc"))
        let request = request(1)
        try queue.add(request)
        await queue.run()
        let response = try #require(try request.result?.get())
        #expect(response.statusCode == 200)
        #expect(fields(of: response.head) == ["Content-Length: 3"])
        #expect(request.head === response.head)
        #expect(!response.head.hasHTTPURLResponse)
        // Read once, it is built, kept and shared.
        #expect(response.httpURLResponse.value(forHTTPHeaderField: "content-length") == "3")
        #expect(request.head?.httpURLResponse === response.httpURLResponse)
    }

    @Test func aDelegateOfHeadsGetsTheHeadAndNothingIsBuilt() async throws {
        let listener = HeadListener()
        let response = try await response(to: "abcd", delegate: listener)
        #expect(listener.heads.current.count == 1)
        #expect(listener.heads.current.first === response.head)
        #expect(!response.head.hasHTTPURLResponse)
    }

    @Test func aDelegateOfHTTPURLResponsesGetsTheOneTheResultHolds() async throws {
        final class Listener: NetworkQueueDelegate {
            let responses = Box<[HTTPURLResponse]>([])
            func networkQueue(_ queue: NetworkQueue, didReceiveHeaders request: NetworkRequest, head: ResponseHead) {
                responses.with { $0.append(head.httpURLResponse) }
            }
        }
        let listener = Listener()
        let response = try await response(to: "ab", delegate: listener)
        #expect(listener.responses.current.count == 1)
        #expect(listener.responses.current.first === response.httpURLResponse)
        #expect(listener.responses.current.first?.value(forHTTPHeaderField: "Content-Length") == "2")
    }

    @Test func aDelegateThatReadsNoHeadCostsNoHTTPURLResponse() async throws {
        final class FinishListener: NetworkQueueDelegate {
            let finished = Box(0)
            func networkQueue(_ queue: NetworkQueue, didFinish request: NetworkRequest, response: NetworkResponse) {
                finished.with { $0 += 1 }
            }
        }
        let queue = NetworkQueue(transport: InMemoryTransport.ok("abc"))
        let listener = FinishListener()
        queue.delegate = listener
        // Its head method is the empty default: the head is handed over and nothing is built, from the first.
        let requests = [request(1), request(2), request(3)]
        for request in requests { try queue.add(request) }
        await queue.run()
        for request in requests { #expect(try request.result?.get().head.hasHTTPURLResponse == false) }
        #expect(listener.finished.current == 3)
        // A new delegate that reads heads gets each of them.
        let heads = HeadListener()
        queue.delegate = heads
        try queue.add(request(4))
        try queue.add(request(5))
        await queue.run()
        #expect(heads.heads.current.count == 2)
    }

    @Test func aDelegateOfHTTPURLResponsesGetsEveryOne() async throws {
        final class Listener: NetworkQueueDelegate {
            let count = Box(0)
            func networkQueue(_ queue: NetworkQueue, didReceiveHeaders request: NetworkRequest, head: ResponseHead) {
                _ = head.httpURLResponse
                count.with { $0 += 1 }
            }
        }
        let queue = NetworkQueue(transport: InMemoryTransport.ok("ab"))
        let listener = Listener()
        queue.delegate = listener
        for round in 0..<3 {
            try queue.add(request(round))
            await queue.run()
        }
        #expect(listener.count.current == 3)
    }

    @Test func aTransportsHTTPURLResponseIsKeptAsItCame() async throws {
        let built = try #require(
            HTTPURLResponse(
                url: url(1), statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["Content-Length": "1"]))
        let queue = NetworkQueue(transport: InMemoryTransport { _ in [.respondWith(built), .body(Data("z".utf8))] })
        let request = request(1)
        try queue.add(request)
        await queue.run()
        let response = try #require(try request.result?.get())
        #expect(response.httpURLResponse === built)
        #expect(response.body == Data("z".utf8))
    }
}
