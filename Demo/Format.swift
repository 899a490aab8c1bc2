import Foundation
import NetworkQueue

/// Human-readable numbers for the Demo's output.
enum Format {
    /// Decimal units: 1.5 MB is 1,500,000 bytes.
    static func bytes(_ count: Int64) -> String {
        let value = Double(count)
        switch value {
        case ..<1_000: return "\(count) B"
        case ..<1_000_000: return String(format: "%.1f KB", value / 1_000)
        case ..<1_000_000_000: return String(format: "%.1f MB", value / 1_000_000)
        default: return String(format: "%.2f GB", value / 1_000_000_000)
        }
    }

    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "?" }
        let whole = Int(seconds.rounded(.up))
        return whole < 60 ? "\(whole)s" : "\(whole / 60)m \(String(format: "%02d", whole % 60))s"
    }

    static func percent(_ fraction: Double) -> String { "\(Int((fraction * 100).rounded(.down)))%" }

    /// `25.3 MB / 53.6 MB  7.8 MB/s  ETA 4s  5/12 done`
    static func summary(of progress: QueueProgress) -> String {
        let total = progress.bytesExpectedToReceive.map(bytes) ?? "?"
        var parts = ["\(bytes(progress.bytesReceived)) / \(total)"]
        if let rate = progress.throughput { parts.append("\(bytes(Int64(rate)))/s") }
        if let eta = progress.estimatedTimeRemaining { parts.append("ETA \(duration(eta))") }
        parts.append("\(progress.completedRequestCount)/\(progress.totalRequestCount) done")
        return parts.joined(separator: "  ")
    }

    /// A bar of `width` cells; `fill` and `empty` are the cell characters.
    static func bar(_ fraction: Double, width: Int, fill: Character, empty: Character) -> String {
        let filled = min(width, max(0, Int(fraction * Double(width))))
        return String(repeating: fill, count: filled) + String(repeating: empty, count: width - filled)
    }
}
