import Foundation

/// How log messages write numbers.
enum LogText {
    /// Seconds as milliseconds below 10 s (`12.3 ms`), else as seconds (`12.3 s`).
    static func duration(_ seconds: Double) -> String {
        seconds < 10 ? String(format: "%.1f ms", seconds * 1000) : String(format: "%.1f s", seconds)
    }

    /// A response head's status and announced length.
    static func head(_ head: ResponseHead) -> String {
        let length = head.expectedContentLength >= 0 ? "\(head.expectedContentLength) bytes" : "length unknown"
        return "\(head.statusCode), \(length)"
    }
}
