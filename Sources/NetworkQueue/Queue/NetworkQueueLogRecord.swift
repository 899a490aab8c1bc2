import Foundation

/// One decision of a ``NetworkQueue``, as its ``NetworkQueue/logHandler`` hears it.
///
/// Records never carry a secret: every URL in them is redacted (user and password, query values and the
/// fragment are masked as `***`), and no header is logged, so `Authorization`, `Cookie`,
/// `Proxy-Authorization` and `Set-Cookie` never appear.
public struct NetworkQueueLogRecord: Sendable, CustomStringConvertible {
    /// How much a record matters, lowest first (the levels of swift-log, less `trace` and `critical`).
    public enum Level: Int, Sendable, Hashable, Comparable, CustomStringConvertible {
        /// Detail for tracing a request step by step: attempts started, heads received, HEAD preflights.
        case debug
        /// A request's life: added, redirected, paused, resumed, continued from a byte, finished.
        case info
        /// Something a person may want to know: a retry scheduled, a range the server refused.
        case notice
        /// A request was cancelled, or a redirect refused.
        case warning
        /// A request failed, or its checksum did not match.
        case error

        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }

        /// The level's name: `debug`, `info`, `notice`, `warning` or `error`.
        public var description: String {
            switch self {
            case .debug: "debug"
            case .info: "info"
            case .notice: "notice"
            case .warning: "warning"
            case .error: "error"
            }
        }
    }

    /// What was decided: a stable name to filter on, where ``message`` is for people.
    public enum Event: String, Sendable, Hashable, CaseIterable {
        /// The request joined the queue.
        case added
        /// A HEAD preflight was sent for the request (``NetworkQueue/showsAccurateProgress``, or a file that
        /// may be unchanged).
        case preflightStarted
        /// A server's sampled HEADs found its bodies too small to be worth one each: its other requests go without
        /// (``NetworkQueue/preflightPolicy``), and how many were waiting.
        case preflightsStopped
        /// A HEAD preflight failed and its retries were spent: the request goes on to its GET with its size unknown
        /// (a HEAD never fails a request its GET would have fetched).
        case preflightFailed
        /// An attempt's transfer was sent: its number, method and redacted URL.
        case attemptStarted
        /// The final response head arrived: its status and length.
        case headReceived
        /// The transport followed a redirect.
        case redirectFollowed
        /// The transport refused a redirect (the attempt fails), and why.
        case redirectRefused
        /// A failed attempt (or a failed HEAD, which is an attempt of its request) will be sent again: after what delay,
        /// and why.
        case retryScheduled
        /// A download continues its partial file from a byte.
        case continuedFromByte
        /// The server would not continue the partial file: the download starts over from byte 0.
        case rangeRefused
        /// A file download was split over several connections or locations, or (and why) it was not; and, at the end
        /// of the file, a range raced by another connection.
        case splitDecided
        /// A location of a file (its URL or a mirror) was left for the next, and why: at its HEAD, at its first
        /// answer or in a range; or a file that failed its checksum is fetched again from one location alone (see
        /// "Big files: connections and mirrors").
        case locationDropped
        /// The former name of ``locationDropped``.
        @available(*, deprecated, renamed: "locationDropped")
        public static var sourceDropped: Event { .locationDropped }
        /// The request was paused.
        case paused
        /// The paused request was resumed.
        case resumed
        /// The body matched the request's checksum.
        case checksumVerified
        /// The body did not match its checksum or the server's digest.
        case checksumFailed
        /// The request succeeded: its status, bytes and time.
        case finished
        /// The request failed, after how many attempts, and why.
        case failed
        /// The request was cancelled.
        case cancelled
        /// The request's response asked its server to slow down: no new request to that server (scheme, host and
        /// port) starts before the time given, which the message says with the header that asked (see
        /// ``NetworkQueue/hostBackoff``); or the server failed enough connects in a row to be down: its requests are
        /// held, and one at a time probes it (see ``NetworkQueue/deadHosts``).
        case hostHeld
        /// A held server answered again: its requests go on, and how long they were held (see
        /// ``NetworkQueue/deadHosts``).
        case hostBack
        /// A server stayed down for the whole window its retry policy gives (every probe failed): its held requests
        /// end; or a later probe of it failed, and the requests that waited for it end. The next request after a
        /// second probes it again (see ``NetworkQueue/deadHosts``).
        case hostDown
        /// A server's level of ``NetworkQueue/adaptiveConcurrency`` changed: the message says from what, to what and
        /// why (the throughput a round gained or lost, an overload).
        case concurrencyChanged
    }

    /// How much this record matters.
    public let level: Level
    /// What was decided.
    public let event: Event
    /// One line for people, with URLs redacted.
    public let message: String
    /// The request it is about.
    public let request: NetworkRequest
    /// When it was decided.
    public let timestamp: Date

    /// Creates a record (for tests of code that consumes records; the queue makes its own).
    public init(level: Level, event: Event, message: String, request: NetworkRequest, timestamp: Date) {
        self.level = level
        self.event = event
        self.message = message
        self.request = request
        self.timestamp = timestamp
    }

    /// `url` as records and error messages show it: its user info, query values and fragment masked, so that
    /// `https://user:pw@host/p?token=abc#f` is `https://***@host/p?token=***#***` (for a program's own logs and
    /// reports).
    public static func redacted(_ url: URL?) -> String { Redaction.describe(url) }

    /// `level event: message`, such as `info finished: 200, 1024 bytes in 12.0 ms`.
    public var description: String { "\(level) \(event.rawValue): \(message)" }
}
