import Foundation
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The pattern the delegate documentation gives for UI code: a main-actor model, callbacks delivered on
/// `.main`, entered with `MainActor.assumeIsolated` (checked at run time; no unsafe code).
@MainActor
final class MainActorModel: NetworkQueueDelegate {
    /// Set on `DispatchQueue.main` by the test. (On Linux an async `main` drains the main queue from a
    /// worker thread after `dispatchMain()`, so `Thread.isMainThread` is not the check.)
    nonisolated static let mainQueueKey = DispatchSpecificKey<Bool>()
    var finishedTags: [Int] = []
    var fraction = 0.0
    var callsOffMainQueue = 0
    var isDone = false

    nonisolated func networkQueue(_ queue: NetworkQueue, didFinish request: NetworkRequest, response: NetworkResponse) {
        let tag = request.tag
        let onMainQueue = DispatchQueue.getSpecific(key: Self.mainQueueKey) == true
        MainActor.assumeIsolated {
            if !onMainQueue { callsOffMainQueue += 1 }
            finishedTags.append(tag)
        }
    }

    nonisolated func networkQueue(_ queue: NetworkQueue, didUpdateProgress progress: QueueProgress) {
        MainActor.assumeIsolated { fraction = progress.fractionCompleted }
    }

    nonisolated func networkQueueDidFinish(_ queue: NetworkQueue) {
        MainActor.assumeIsolated { isDone = true }
    }
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct MainActorDelegateTests {
    @MainActor
    @Test func aMainActorDelegateGetsEveryCallbackOnTheMainQueue() async throws {
        DispatchQueue.main.setSpecific(key: MainActorModel.mainQueueKey, value: true)
        let queue = NetworkQueue.oneAttempt(transport: InMemoryTransport.ok(), delegateQueue: .main)
        let model = MainActorModel()
        queue.delegate = model
        for tag in 1...5 { try queue.add(request(tag)) }
        await queue.run()
        #expect(model.isDone)
        #expect(model.finishedTags.sorted() == [1, 2, 3, 4, 5])
        #expect(model.fraction == 1.0)
        #expect(model.callsOffMainQueue == 0)
    }
}
