import Dispatch
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension NetworkQueue {
    /// Starts one transfer and arms its idle timer. Runs outside the lock.
    func launch(_ start: QueueState.Start) {
        let id = start.id
        let token = start.token
        let lane = start.lane
        // The closure holds the queue strongly: a queue stays alive while it has transfers in flight.
        let handle = transport.startTransfer(start.urlRequest) { event in
            self.mutate { $0.handle(event, id: id, token: token, lane: lane, &$1) }
        }
        let timer = armTimer(id: id, token: token, timeout: start.urlRequest.timeoutInterval)
        let attached = state.withLock { $0.attach(handle, timer: timer, to: id, token: token) }
        if !attached {
            // It ended while starting (cancelled, or failed by a sibling): stop what was just started.
            timer?.cancel()
            DispatchQueue.global(qos: .utility).async { handle.cancel() }
        }
    }

    /// An idle timer with sub-second precision, independent of the transport's own (whole-second) timers.
    private func armTimer(id: ObjectIdentifier, token: UInt64, timeout: TimeInterval) -> (any DispatchSourceTimer)? {
        guard timeout > 0, timeout.isFinite, timeout < 1e9 else { return nil }
        let timer = DispatchSource.makeTimerSource(queue: timerQueue)
        timer.schedule(deadline: .now() + timeout, leeway: .milliseconds(1))
        // The handler holds its timer; the cycle ends when the timer is cancelled, which always happens:
        // when the transfer ends, when the timer expires, or here when the queue is gone.
        timer.setEventHandler { [weak self] in
            guard let self else { return timer.cancel() }
            var fx = QueueState.Effects()
            let left = state.withLock { $0.checkTimeout(id: id, token: token, timeout: timeout, &fx) }
            if let left { timer.schedule(deadline: .now() + left, leeway: .milliseconds(1)) } else { timer.cancel() }
            perform(fx)
        }
        timer.resume()
        return timer
    }
}
