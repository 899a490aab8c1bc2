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
                let actions = locked.withLock { core in
                    let now = clock.now()
                    var actions = core.machine.perform(.go, now: now).actions
                    // Counted by the machine, kept here: the machine says when to wake how many.
                    core.waiters.append(continuation)
                    actions.append(core.machine.perform(.awaitDrain, now: now).actions)
                    return actions
                }
                perform(actions)
            }
        } onCancel: {
            cancelAll()
        }
    }

    /// The queue's events from now on, in delivery order, as an `AsyncSequence`.
    ///
    /// Each call returns a new independent stream; it buffers without bound and ends when the consuming
    /// task is cancelled or the stream is dropped. An open stream has every transfer's metrics collected (for
    /// its `didCollectMetrics`).
    ///
    /// For a batch of many small requests the ``delegate`` costs less: it is called where events are delivered,
    /// while a stream wakes its reading task for each batch of them, and a loop on the main actor hops to the
    /// global executor and back on every read (see <doc:DelegateContract>).
    public func events() -> AsyncStream<NetworkQueueEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: NetworkQueueEvent.self)
        let key = locked.withLock { core in
            core.nextSubscriber += 1
            core.subscribers[core.nextSubscriber] = continuation
            core.updateListeners()
            return core.nextSubscriber
        }
        continuation.onTermination = { [weak self] _ in
            self?.locked.withLock { core in
                core.subscribers.removeValue(forKey: key)
                core.updateListeners()
            }
        }
        return stream
    }
}
