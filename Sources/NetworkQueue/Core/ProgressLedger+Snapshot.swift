/// The ledger's sums as a ``QueueProgress``: read only here, written only by the ledger's events.
extension ProgressLedger {
    /// The progress now; `time` is used for the throughput window and the ETA.
    func snapshot(at time: Double) -> QueueProgress {
        let rate = throughput.rate(at: time)
        let expectedDown: Int64? = unknownDownloads == 0 && isTotalFinal ? bytes.expectedDown : nil
        let known = requestCount - unknownDownloads
        // Sizes learned so far × requests known (read, or announced and not read yet).
        let estimate: Int64? =
            expectedDown
            ?? (known > 0
                ? bytes.expectedDown + Int64((Double(unknownDownloads + announced) * meanLearnedSize).rounded()) : nil)
        var eta: Double?
        if let expectedDown, let rate, rate > 0 {
            let left = (expectedDown - bytes.received) + (bytes.expectedUp - bytes.sent)
            eta = isComplete ? 0 : ThroughputMeter.timeRemaining(max(0, left), at: rate)
        }
        return QueueProgress(
            totalRequestCount: requestCount, finishedRequestCount: counts.finished,
            failedRequestCount: counts.failed, cancelledRequestCount: counts.cancelled,
            bytesReceived: bytes.received, bytesExpectedToReceive: expectedDown,
            bytesSent: bytes.sent, bytesExpectedToSend: bytes.expectedUp,
            fractionCompleted: fraction, throughput: rate, estimatedTimeRemaining: eta,
            isTotalFinal: isTotalFinal, estimatedRequestCount: requestCount + announced,
            estimatedBytesExpectedToReceive: estimate, isEstimated: expectedDown == nil)
    }
}
