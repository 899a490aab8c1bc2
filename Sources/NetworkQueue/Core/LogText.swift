import Foundation

/// How log messages write numbers.
enum LogText {
    /// Seconds as milliseconds below 10 s (`12.3 ms`), else as seconds (`12.3 s`).
    static func duration(_ seconds: Double) -> String {
        seconds < 10 ? String(format: "%.1f ms", seconds * 1000) : String(format: "%.1f s", seconds)
    }

    /// A number of seconds as a setting is written: whole (`30`) or with up to three decimals (`0.25`).
    /// `gain` (0.25) as a signed percentage ("+25%").
    static func percent(_ gain: Double) -> String {
        guard gain.isFinite else { return "?" }
        let rounded = Int((gain * 100).rounded())
        return (rounded >= 0 ? "+" : "") + "\(rounded)%"
    }

    static func seconds(_ seconds: Double) -> String {
        guard seconds.isFinite else { return "\(seconds)" }
        if seconds == seconds.rounded(), abs(seconds) < 1e15 { return String(Int64(seconds)) }
        var text = String(format: "%.3f", seconds)
        while text.hasSuffix("0") { text.removeLast() }
        return text
    }

    /// A response head's status and announced length.
    static func head(_ head: ResponseHead) -> String {
        let length = head.expectedContentLength >= 0 ? "\(head.expectedContentLength) bytes" : "length unknown"
        return "\(head.statusCode), \(length)"
    }
}
