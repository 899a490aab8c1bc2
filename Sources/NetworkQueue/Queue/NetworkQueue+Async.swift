import Foundation

extension NetworkQueue {
    /// Starts the queue (as ``go()``) and returns when it drains, after the delegate has received
    /// `queueDidFinish`. Returns at once if the queue holds no request.
    ///
    /// Cancelling the awaiting task cancels every request of the queue (as ``cancelAll()``); the call
    /// still returns only after they have all been reported.
    /// - Returns: the progress at the end of the drain.
    @discardableResult
    public func run() async -> QueueProgress {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                mutate { state, fx in
                    state.go(&fx)
                    if state.records.isEmpty {
                        // Behind everything already posted, so the caller sees every event first.
                        state.post(.resume([continuation], state.ledger.snapshot(at: QueueState.now())), &fx)
                    } else {
                        state.waiters.append(continuation)
                    }
                }
            }
        } onCancel: {
            cancelAll()
        }
    }

    /// The queue's events from now on, in delivery order, as an `AsyncSequence`.
    ///
    /// Each call returns a new independent stream; it buffers without bound and ends when the consuming
    /// task is cancelled or the stream is dropped.
    public func events() -> AsyncStream<NetworkQueueEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: NetworkQueueEvent.self)
        let key = state.withLock { state in
            state.nextSubscriber += 1
            state.subscribers[state.nextSubscriber] = continuation
            return state.nextSubscriber
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { _ = $0.subscribers.removeValue(forKey: key) }
        }
        return stream
    }
}
