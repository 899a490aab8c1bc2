import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension QueueStateMachine {
    /// A transport reported what a main transfer measured: numbered, kept with the request, and posted.
    mutating func collect(_ reported: TransferMetrics, slot: Int) {
        let record = table[slot]
        var metrics = reported
        metrics.attempt = record.machine.attempts
        record.metrics.append(metrics)
        outbox.post(.didCollectMetrics(record.request, metrics: metrics))
    }

    /// The queue stopped the running `attempt` itself (an unacceptable response, a timeout, a cancel, a
    /// sibling's failure): its transport will report nothing more, so the queue records what it saw on its own
    /// clock (time to the head, total time, the head's HTTP version). Only while metrics are collected.
    mutating func measure(_ attempt: Attempt, slot: Int, now: Double) {
        guard collectsMetrics else { return }
        let version = attempt.head?.httpVersion ?? ""
        collect(
            TransferMetrics(
                timeToFirstByte: attempt.headAt.map { max(0, $0 - attempt.startedAt) },
                totalDuration: max(0, now - attempt.startedAt), httpVersion: version.isEmpty ? nil : version),
            slot: slot)
    }
}
