import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Foundation on Linux traps when a redirect's answer reaches a task that a cancel has moved on. Before
/// the fix these runs crashed the test process within a few dozen requests; passing means no crash and
/// every request ended exactly once.
@Suite(.admitted, .timeLimit(.minutes(10))) struct RedirectCancelStressTests {
    @Test(arguments: TransportKind.allCases) func aThousandRedirectingRequestsCancelledAtRandomAndBy3msTimeouts(
        _ transport: TransportKind
    ) async throws {
        let server = try LoopbackServer()
        let queue = NetworkQueue.oneAttempt(transport: transport.make())
        queue.maxConcurrentRequestCount = 16
        queue.cancelsAllOnFailure = false
        let recorder = queue.recording()
        var generator = SystemRandomNumberGenerator()
        var requests: [NetworkRequest] = []
        // 1,000 (`NQ_STRESS_REQUESTS`: fewer under the sanitizers, where the trap came within a few dozen too).
        for index in 0..<TestEnvironment.integer("NQ_STRESS_REQUESTS", default: 1_000) {
            var urlRequest = URLRequest(url: server.url("/redirect/3?i=\(index)"))
            // Half of them time out after 3 ms, wherever they are; the others are cancelled at random below.
            urlRequest.timeoutInterval = index.isMultiple(of: 2) ? 0.003 : 30
            requests.append(NetworkRequest(urlRequest, tag: index))
        }
        for request in requests { try queue.add(request) }
        queue.go()
        for request in requests.filter({ !$0.tag.isMultiple(of: 2) }).shuffled(using: &generator) {
            if Bool.random(using: &generator) { await Task.yield() }
            queue.cancel(request)
        }
        await queue.run()
        let terminal = recorder.events.filter {
            if case .fail = $0 { true } else if case .finish = $0 { true } else { false }
        }
        #expect(terminal.count == requests.count)
        #expect(Set(terminal.map(\.tag)).count == requests.count)
        #expect(requests.allSatisfy { $0.state.isTerminal })
        #expect(recorder.queueFinishedCount == 1)
    }

    /// Foundation on Linux also traps when a cancel races its task's own end ("a task that in not in the registry"):
    /// the cancel sees the task running and queues its failure, and the task's end unregisters it first. Each round
    /// is a queue of its own (its session torn down as its last task ends) with two requests that end at their head
    /// (``NetworkRequest/Validation-swift.struct/endsAtHead``), cancelled as their empty or small body arrives with
    /// the head, and one the caller cancels as it starts (or ends); large downloads run beside them. Before the transport
    /// cancelled its tasks on the session's delegate queue, 2 runs of 5 trapped.
    @Test(arguments: TransportKind.allCases) func cancelsThatRaceTheirTasksEnd(_ transport: TransportKind) async throws
    {
        let server = try LoopbackServer()
        let load = NetworkQueue.oneAttempt(transport: transport.make())
        load.cancelsAllOnFailure = false
        for index in 0..<20 {
            try load.add(NetworkRequest(URLRequest(url: server.url("/bytes/20000000?load=\(index)")), tag: index))
        }
        load.go()
        // 200 rounds (`NQ_STRESS_REQUESTS` / 5: fewer under the sanitizers).
        for round in 0..<TestEnvironment.integer("NQ_STRESS_REQUESTS", default: 1_000) / 5 {
            let queue = NetworkQueue.oneAttempt(transport: transport.make())
            queue.cancelsAllOnFailure = false
            let empty = NetworkRequest(
                URLRequest(url: server.url("/bytes/0?r=\(round)")), validation: .init(endsAtHead: true), tag: 1)
            let missing = NetworkRequest(
                URLRequest(url: server.url("/status/404?r=\(round)")), validation: .init(endsAtHead: true), tag: 2)
            let cancelled = NetworkRequest(URLRequest(url: server.url("/bytes/64?r=\(round)")), tag: 3)
            for request in [empty, missing, cancelled] { try queue.add(request) }
            queue.go()
            queue.cancel(cancelled)
            await queue.run()
            #expect(empty.state == .finished, "\(round): \(String(describing: empty.failure))")
            #expect(empty.response?.body.isEmpty == true)
            guard case .unacceptableStatus(404, _)? = missing.failure else {
                Issue.record("\(round): \(String(describing: missing.failure))")
                return
            }
            // A cancel that comes after the request's end leaves it finished.
            #expect([.cancelled, .finished].contains(cancelled.state), "\(round): \(cancelled.state)")
        }
        load.cancelAll()
        await load.run()
    }

    @Test(arguments: TransportKind.allCases) func redirectingSiblingsCancelledByAFailure(_ transport: TransportKind)
        async throws
    {
        let server = try LoopbackServer()
        for round in 0..<10 {
            let queue = NetworkQueue.oneAttempt(transport: transport.make())
            queue.maxConcurrentRequestCount = 33
            let recorder = queue.recording()
            for index in 0..<32 { try queue.add(request(server.url("/redirect/3?r=\(round)&i=\(index)"), tag: index)) }
            try queue.add(request(server.url("/status/500?r=\(round)"), tag: 99))
            await queue.run()
            #expect(
                recorder.events.filter { if case .fail = $0 { true } else if case .finish = $0 { true } else { false } }
                    .count == 33)
            #expect(recorder.queueFinishedCount == 1)
        }
    }
}

extension Entry {
    /// The request tag of a per-request entry (-1 for queue entries).
    var tag: Int {
        switch self {
        case .start(let t), .headers(let t, _), .finish(let t), .fail(let t, _), .retry(let t, _, _), .handler(let t),
            .requestProgress(let t, _),
            .pause(let t), .resume(let t):
            t
        case .progress, .sourceFailed, .queueFinished: -1
        }
    }
}
