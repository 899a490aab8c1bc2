import Dispatch
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension NetworkQueue {
    /// Starts one transfer. Runs outside the lock.
    func launch(_ start: QueueState.Start) {
        let id = start.id
        let token = start.token
        let lane = start.lane
        var sink: FileSink?
        if let claim = start.claim {
            do {
                // Nil means the request ended while starting: nothing to open or send.
                guard let opened = try FileSink(claim: claim) else { return }
                sink = opened
            } catch {
                return mutate { $0.fail(id, token: token, error, &$1) }
            }
            guard let sink, state.withLock({ $0.attach(sink, to: id, token: token) }) else {
                sink?.discard()
                return
            }
        }
        // The closure holds the queue strongly: a queue stays alive while it has transfers in flight.
        let handle = transport.startTransfer(start.urlRequest) { [sink] event in
            // File I/O happens here, outside the lock; a transfer's events are serial.
            if let sink, let error = Self.write(event, to: sink) {
                return self.mutate { $0.fail(id, token: token, error, &$1) }
            }
            self.mutate { $0.handle(event, id: id, token: token, lane: lane, &$1) }
        }
        if !state.withLock({ $0.attach(handle, to: id, token: token) }) {
            // It ended while starting (cancelled, or failed by a sibling): stop what was just started.
            // Its file, if any, was attached and discarded as it ended.
            DispatchQueue.global(qos: .userInitiated).async { handle.cancel() }
        }
    }

    /// Applies a transfer event to its file; returns the error that must fail the request, if any.
    private static func write(_ event: TransferEvent, to sink: FileSink) -> NetworkQueueError? {
        switch event {
        case .response(let response): ResponseRules.isInterim(response) ? nil : sink.restart()
        case .data(let data): sink.write(data)
        case .sent: nil
        case .completed(nil): sink.finishWriting()
        case .completed(.some):
            // The queue fails the request and discards the file.
            nil
        }
    }

    /// Points the queue's one deadline timer at the earliest deadline. Runs on the timer queue, so re-arms
    /// happen in order and always to the latest earliest deadline.
    func rearmDeadlineTimer() {
        guard let deadline = state.withLock({ $0.armedDeadline }) else { return }
        let when = DispatchTime(uptimeNanoseconds: UInt64(max(0, deadline) * 1e9))
        deadlineTimer.withLock { $0.schedule(deadline: when, leeway: .milliseconds(1)) }
    }

    /// The deadline timer fired.
    func deadlineTimerFired() {
        var fx = QueueState.Effects()
        state.withLock { $0.expireDeadlines(&fx) }
        fx.rearmDeadlineTimer = false
        rearmDeadlineTimer()
        perform(fx)
    }

    static func makeDeadlineTimer(on queue: DispatchQueue) -> any DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .distantFuture)
        return timer
    }
}
