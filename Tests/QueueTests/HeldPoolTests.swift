import Foundation
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The tasks a queue starts (a source's reader, the adapt hooks, a retry decision) do not run on the cooperative pool:
/// an app that holds every thread of the pool (a long computation that never suspends) does not hold its queue.
@Suite(.admitted, .timeLimit(.minutes(10))) struct HeldPoolTests {
    @Test func aQueueDrainsWhileItsAppHoldsEveryThreadOfThePool() async throws {
        // Given: a queue whose requests come from a source, pass an adapt hook, and whose first attempts are 503s
        // that a retry decision sends again at once.
        let attempts = Box<[Int: Int]>([:])
        let transport = InMemoryTransport { urlRequest in
            let tag = tag(of: urlRequest)
            let attempt = attempts.with { counts -> Int in
                counts[tag, default: 0] += 1
                return counts[tag]!
            }
            return attempt == 1
                ? [.respond(status: 503, headers: ["Content-Length": "0"])]
                : [.respond(status: 200, headers: ["Content-Length": "3"]), .body(Data("abc".utf8))]
        }
        let queue = NetworkQueue(transport: transport)
        let decisions = Box(0)
        let adapted = Box(0)
        queue.retryPolicy = RetryPolicy(decide: { _, _, _ in
            decisions.with { $0 += 1 }
            return .retryAfter(0)
        })
        queue.adapter = { urlRequest in
            adapted.with { $0 += 1 }
            return urlRequest
        }
        let recorder = queue.recording()
        let count = 20
        queue.add(contentsOf: (1...count).lazy.map { request($0) })

        // When: every thread of the pool is held by a computation that never suspends, and the queue goes only once
        // they all are; each lets go when the queue has drained, or after a minute (a hang guard: the verdict is
        // whether the drain came while they held the pool).
        let pool = PoolHolders(threads: TestEnvironment.cores)
        let drainedWhileHeld = await pool.hold(
            startingWith: { queue.go() }, until: { recorder.queueFinishedCount == 1 })

        // Then: the queue drained, every request read, adapted twice, decided once and finished.
        #expect(drainedWhileHeld)
        await queue.run()
        #expect(recorder.events.filter { if case .finish = $0 { true } else { false } }.count == count)
        #expect(decisions.current == count)
        #expect(adapted.current == 2 * count)
        #expect(transport.statistics.started == 2 * count)
    }
}

/// Tasks that hold every thread of the cooperative pool (one a core the process may run on), each spinning without
/// suspending.
struct PoolHolders {
    let threads: Int

    /// Holds the pool: `start` runs once every thread is held (by the last task to arrive), then each task spins
    /// until `done` is true or a minute has passed. Returns whether `done` came while every thread was held.
    func hold(startingWith start: @escaping @Sendable () -> Void, until done: @escaping @Sendable () -> Bool) async
        -> Bool
    {
        let arrived = Box(0)
        let threads = threads
        var tasks: [Task<Bool, Never>] = []
        for _ in 0..<threads {
            tasks.append(
                Task.detached {
                    if arrived.with({
                        $0 += 1
                        return $0
                    }) == threads {
                        start()
                    }
                    let deadline = Date().addingTimeInterval(60)
                    while arrived.current < threads || !done() {
                        if Date() > deadline { return false }
                    }
                    return true
                })
        }
        var all = true
        for task in tasks { all = await task.value && all }
        return all
    }
}
