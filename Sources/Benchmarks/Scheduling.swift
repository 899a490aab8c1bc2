import Foundation
import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// (2) The scheduling core: requests through the queue on an instant in-memory transport (a lean one, see
/// `InstantTransport`; the tests' `InMemoryTransport` carries test features), against the
/// same number of no-op `BlockOperation`s on an `OperationQueue` (the design ASINetworkQueue and
/// RequestQueue were built on), both at 64 at a time.
enum SchedulingBenchmark {
    static func queueRun(count: Int) async -> Double {
        let queue = NetworkQueue(transport: InstantTransport())
        queue.maxConcurrentRequestCount = 64
        let url = URL(string: "http://bench.invalid/r")!
        let requests = (0..<count).map { _ in NetworkRequest(url: url) }
        return await seconds {
            for request in requests { try? queue.add(request) }
            await queue.run()
        }
    }

    /// Synchronous: `waitUntilAllOperationsAreFinished` must not be called from an async context.
    static func operationQueueRun(count: Int) -> Double {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 64
        queue.isSuspended = true
        let done = Counter()
        let start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<count { queue.addOperation(BlockOperation { done.increment() }) }
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    /// Seconds for `cancelAll()` on `count` pending requests. The caller holds the requests, as an app
    /// holding its batch does, so freeing them is not counted as cancelling them.
    static func cancelPending(count: Int) async -> Double {
        let queue = NetworkQueue(transport: InstantTransport())
        let url = URL(string: "http://bench.invalid/r")!
        let requests = (0..<count).map { _ in NetworkRequest(url: url) }
        for request in requests { try? queue.add(request) }
        let elapsed = await seconds { queue.cancelAll() }
        await queue.run()
        withExtendedLifetime(requests) {}
        return elapsed
    }

    /// Microseconds that `go()` takes to return on a queue with 64 free slots and 64 pending requests over
    /// a transport whose starts are slow (each takes 200 µs, as URLSession's can): the starts must not
    /// run on the caller's thread.
    static func goLatency() async -> Double {
        let queue = NetworkQueue(transport: SlowStartTransport())
        queue.maxConcurrentRequestCount = 64
        let url = URL(string: "http://bench.invalid/r")!
        for _ in 0..<64 { try? queue.add(NetworkRequest(url: url)) }
        let elapsed = await seconds { queue.go() }
        await queue.run()
        return elapsed * 1e6
    }

    static func run(count: Int, runs: Int) async -> [Result] {
        var ours: [Double] = []
        var theirs: [Double] = []
        var cancels: [Double] = []
        var gos: [Double] = []
        for _ in 0..<runs {
            gos.append(await goLatency())
            ours.append(await queueRun(count: count))
            theirs.append(operationQueueRun(count: count))
            cancels.append(await cancelPending(count: count))
        }
        let rate = Double(count) / median(ours)
        let baseline = Double(count) / median(theirs)
        let cancel = median(cancels) * 1000
        let go = median(gos)
        return [
            Result(
                benchmark: "scheduling \(count)", metric: "req/s", networkQueue: rate, baselineName: "OperationQueue",
                baseline: baseline, ratio: rate / baseline, target: ">= 3x (1M req/s long-term)",
                met: rate / baseline >= 3,
                runs: runs),
            Result(
                benchmark: "cancel \(count) pending", metric: "ms", networkQueue: cancel, baselineName: "-",
                baseline: nil,
                ratio: nil, target: "<= 50 ms", met: cancel <= 50, runs: runs),
            Result(
                benchmark: "go() with 64 starts", metric: "µs", networkQueue: go, baselineName: "-", baseline: nil,
                ratio: nil, target: "< 1,000 µs", met: go < 1_000, runs: runs),
        ]
    }
}

/// Takes 200 µs in every `startTransfer` (as URLSession can on Linux), then completes at once.
final class SlowStartTransport: Transport {
    private let instant = InstantTransport()

    func startTransfer(
        _ request: URLRequest, options: TransferOptions, events: @escaping @Sendable (TransferEvent) -> Void
    ) -> any TransferHandle {
        let until = DispatchTime.now().uptimeNanoseconds + 200_000
        while DispatchTime.now().uptimeNanoseconds < until {}
        return instant.startTransfer(request, events: events)
    }
}

/// A thread-safe counter for the baseline's operations.
final class Counter: Sendable {
    private let value = Protected(0)
    func increment() { value.with { $0 += 1 } }
}

/// A value behind a lock (`@unchecked Sendable` is safe: every access holds the lock).
final class Protected<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func with<R>(_ body: (inout Value) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}
