import Foundation
import NetworkQueue

/// Human-readable numbers for the Demo's output.
enum Format {
    /// `count` bytes in decimal units (1.5 MB is 1,500,000 bytes): `512 B`, `4.1 KB`, `20.0 MB`, `1.25 GB`, rounded
    /// half up (integers only, since a list of small files formats a size per file).
    static func bytes(_ count: Int64) -> String {
        switch count {
        case ..<1_000: return "\(count) B"
        case ..<1_000_000: return decimal(count, unit: 1_000, places: 1) + " KB"
        case ..<1_000_000_000: return decimal(count, unit: 1_000_000, places: 1) + " MB"
        default: return decimal(count, unit: 1_000_000_000, places: 2) + " GB"
        }
    }

    /// `count / unit` (both above 0) with `places` decimals (1 or 2), rounded half up.
    private static func decimal(_ count: Int64, unit: Int64, places: Int) -> String {
        let scale: Int64 = places == 1 ? 10 : 100
        let step = unit / scale
        let scaled = (count + step / 2) / step
        let fraction = String(scaled % scale)
        return "\(scaled / scale)." + String(repeating: "0", count: places - fraction.count) + fraction
    }

    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "?" }
        let whole = Int(seconds.rounded(.up))
        return whole < 60 ? "\(whole)s" : "\(whole / 60)m \(String(format: "%02d", whole % 60))s"
    }

    /// A number of seconds as given: whole (`30`) or with its decimals (`0.5`).
    static func seconds(_ seconds: Double) -> String {
        seconds == seconds.rounded() && seconds < 1e15 ? String(Int64(seconds)) : String(seconds)
    }

    /// A number of seconds to a tenth: `1.6`.
    static func tenths(_ seconds: Double) -> String { String(format: "%.1f", seconds) }

    static func percent(_ fraction: Double) -> String { "\(Int((fraction * 100).rounded(.down)))%" }

    /// The share of the batch to show: the queue's fraction, or, once every size is known and nothing failed, the
    /// share of the bytes when it is lower. A fraction an early estimate carried high (69 small files, then a big one
    /// whose size came last) holds still until the bytes catch up; the bytes say where the batch is.
    static func shownFraction(of progress: QueueProgress) -> Double {
        guard let share = byteShare(of: progress) else { return progress.fractionCompleted }
        return min(progress.fractionCompleted, share)
    }

    /// The bytes received over the exact total, when every size is known and no request failed or was cancelled
    /// (their bytes never come); nil otherwise.
    static func byteShare(of progress: QueueProgress) -> Double? {
        guard !progress.isEstimated, progress.failedRequestCount + progress.cancelledRequestCount == 0,
            let expected = progress.bytesExpectedToReceive, expected > 0
        else { return nil }
        return min(1, Double(progress.bytesReceived) / Double(expected))
    }

    /// True while `fraction` of `progress` rests on an estimate: a size is not known yet (HEADs sampled, a list still
    /// read), or an earlier estimate carried it above the share of the bytes now known.
    static func restsOnEstimate(_ progress: QueueProgress, fraction: Double) -> Bool {
        if progress.isEstimated { return isRunning(progress) }
        return byteShare(of: progress).map { fraction > $0 + 0.01 } ?? false
    }

    /// True while requests may still run: some have not ended, or more may come.
    private static func isRunning(_ progress: QueueProgress) -> Bool {
        progress.endedRequestCount < progress.totalRequestCount || !progress.isTotalFinal
    }

    /// The progress's percentage (``shownFraction(of:)``), `~` before it while its total is an estimate: `~99%` says
    /// that the 99 may still fall behind a big file whose size is not known yet.
    static func percent(of progress: QueueProgress) -> String {
        (progress.isEstimated && isRunning(progress) ? "~" : "")
            + percent(shownFraction(of: progress))
    }

    /// `25.3 MB / 53.6 MB  7.8 MB/s  ETA 4s  5/12 done` (`/ ~53.6 MB` while the total is an estimate)
    static func summary(of progress: QueueProgress) -> String {
        // While part of the batch is unknown (a list still being read, HEADs still to come): the estimate, as "~".
        let total =
            progress.bytesExpectedToReceive.map(bytes) ?? progress.estimatedBytesExpectedToReceive.map {
                "~" + bytes($0)
            } ?? "?"
        var parts = ["\(bytes(progress.bytesReceived)) / \(total)"]
        if let rate = progress.throughput { parts.append("\(bytes(Int64(rate)))/s") }
        if let eta = progress.estimatedTimeRemaining { parts.append("ETA \(duration(eta))") }
        parts.append(
            "\(progress.endedRequestCount)/\(max(progress.totalRequestCount, progress.estimatedRequestCount)) done")
        if progress.heldRequestCount > 0 { parts.append("held: \(progress.heldRequestCount) waiting") }
        if let level = progress.concurrencyLevel { parts.append("auto: \(level) at a time") }
        return parts.joined(separator: "  ")
    }

    /// `1.2 MB / 20.0 MB  3.4 MB/s  ETA 6s`: one request's bytes, speed and time left (when known).
    static func transfer(_ progress: TransferProgress) -> String {
        var parts = ["\(bytes(progress.completedBytes)) / \(progress.expectedBytes.map(bytes) ?? "?")"]
        if let rate = progress.throughput { parts.append("\(bytes(Int64(rate)))/s") }
        if let eta = progress.estimatedTimeRemaining { parts.append("ETA \(duration(eta))") }
        return parts.joined(separator: "  ")
    }

    /// `HTTP/1.1  reused  connect=0.2ms  first-byte=1.4ms  total=1702ms  20.0 MB`: unknown fields are left out.
    static func metrics(_ metrics: TransferMetrics, size: Int64) -> String {
        let ms = { (seconds: TimeInterval) in String(format: "%.1fms", seconds * 1000) }
        var parts: [String] = []
        if let version = metrics.httpVersion { parts.append(version) }
        if let reused = metrics.isReusedConnection { parts.append(reused ? "reused" : "new") }
        if let connect = metrics.connectDuration { parts.append("connect=\(ms(connect))") }
        if let tls = metrics.secureConnectionDuration { parts.append("tls=\(ms(tls))") }
        if let firstByte = metrics.timeToFirstByte { parts.append("first-byte=\(ms(firstByte))") }
        parts.append("total=\(String(format: "%.0fms", metrics.totalDuration * 1000))")
        if metrics.redirectCount > 0 { parts.append("redirects=\(metrics.redirectCount)") }
        if metrics.attempt > 1 { parts.append("attempt=\(metrics.attempt)") }
        parts.append(bytes(size))
        return parts.joined(separator: "  ")
    }

    /// A bar of `width` cells; `fill` and `empty` are the cell characters.
    static func bar(_ fraction: Double, width: Int, fill: Character, empty: Character) -> String {
        let filled = min(width, max(0, Int(fraction * Double(width))))
        return String(repeating: fill, count: filled) + String(repeating: empty, count: width - filled)
    }
}
