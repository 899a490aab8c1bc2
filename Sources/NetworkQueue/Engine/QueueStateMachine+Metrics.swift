import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension QueueStateMachine {
    /// A transport reported what a main transfer measured: numbered, kept with the request, and posted.
    mutating func collect(_ reported: TransferMetrics, slot: Int) {
        let record = table[slot]
        var metrics = reported
        metrics.attempt = record.attempts
        record.metrics.append(metrics)
        postEvent(.didCollectMetrics(record.request, metrics))
    }

    /// The queue stops a running attempt itself (an unacceptable response, a timeout, a cancel, a sibling's
    /// failure): its transport will report nothing more, so the queue records what it saw on its own clock
    /// (time to the head, total time, the head's HTTP version). Only while metrics are collected.
    mutating func measureStoppedAttempt(_ slot: Int, now: Double) {
        let record = table[slot]
        guard collectsMetrics, record.phase == .running else { return }
        let version = record.response?.httpVersion ?? ""
        collect(
            TransferMetrics(
                timeToFirstByte: record.headAt.map { max(0, $0 - record.transferStartedAt) },
                totalDuration: max(0, now - record.transferStartedAt), httpVersion: version.isEmpty ? nil : version),
            slot: slot)
    }
}
