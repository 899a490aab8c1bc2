import Foundation

/// How long a request may take, and how slowly it may move, before it ends: the bounds that make a batch end
/// even when a server trickles a byte now and then (which the idle timeout, `URLRequest.timeoutInterval`, never
/// catches: the transfer is never silent for long).
///
/// Set queue-wide with ``NetworkQueue/timeLimits`` and per request with ``NetworkRequest/timeLimits``.
public struct TimeLimits: Sendable, Hashable {
    /// The longest a request may take, in seconds, from the start of its first attempt to its end: every
    /// attempt, the waits between them and the slots they waited for included; time the request spends paused
    /// (``NetworkQueue/pause(_:)``) is not counted. Past it the request fails with
    /// ``NetworkQueueError/deadlineExceeded(seconds:url:)``, whatever it was doing, and is not retried; a retry
    /// whose wait would end after it is not waited for (the request fails with the attempt's own error). A HEAD
    /// preflight (``NetworkQueue/showsAccurateProgress``, or a file to check) has a deadline of the same length
    /// of its own, and the request's clock starts again for its transfer. The same semantics as URLSession's
    /// `timeoutIntervalForResource`. Default ``defaultDeadline`` (7 days); infinity, NaN and values of
    /// ``NetworkRequest/noTimeoutThreshold`` or more mean no deadline; zero or less makes the request invalid.
    public var deadline: TimeInterval
    /// The lowest speed an attempt may keep, or nil (the default) for none. An attempt that moves fewer than
    /// ``LowestSpeed/bytesPerSecond`` × ``LowestSpeed/seconds`` bytes (received body bytes and sent body bytes)
    /// in a window of ``LowestSpeed/seconds`` fails with ``NetworkQueueError/tooSlow(bytesPerSecond:limit:url:)``,
    /// which the retry policy may send again like a timed-out transfer (a file's `.part` is continued). Windows
    /// follow one another from the attempt's start, its connection and the wait for its first byte included. A HEAD
    /// preflight moves no body: its deadline and idle timeout bound it, not the lowest speed.
    ///
    /// Off by default because no floor fits every healthy transfer: a slow link, or a server that computes a
    /// report before its first byte, is slow and well; the ``deadline`` bounds a trickle anyway, and the idle
    /// timeout bounds silence. Never judged: a paused request (its clocks stop), and a window in which the
    /// queue's own cap (``NetworkQueue/maximumBytesPerSecond``) held the queue at three quarters of the cap or
    /// more, because then the cap, not the server, set the pace (the same rule holds over a transport that does
    /// not honour the cap: a queue that fast is not slow).
    public var lowestSpeed: LowestSpeed?
    /// The longest an attempt (or a HEAD preflight) may wait for its connection, in seconds: the name's lookup,
    /// the TCP connect, the TLS handshake and a proxy's tunnel, as curl's `--connect-timeout` bounds them. Past it
    /// the attempt fails with `URLError.cannotConnectToHost`, which the retry policy may send again. A connection
    /// reused from an earlier transfer has nothing to wait for. Default ``defaultConnect`` (20 s): a host that has
    /// not answered in 20 s is down for a batch's purposes, while the slowest healthy connect, across the world with
    /// TLS, takes a second or two. Infinity, NaN and values of ``NetworkRequest/noTimeoutThreshold`` or more mean the
    /// transport's own bound (libcurl's 300 s); zero or less makes the request invalid. Honoured by
    /// ``CurlTransport``; `URLSession` has no connect bound of its own, so over ``URLSessionTransport`` a connect is
    /// bounded by the request's idle timeout alone.
    public var connect: TimeInterval

    /// 20 s: see ``connect``.
    public static let defaultConnect: TimeInterval = 20

    /// 7 days, in seconds: URLSession's default `timeoutIntervalForResource`. Generous on purpose: a batch ends
    /// however its servers behave, and no healthy download meets it.
    public static let defaultDeadline: TimeInterval = 7 * 24 * 3_600

    /// Creates time limits; every parameter defaults as its property says.
    public init(
        deadline: TimeInterval = defaultDeadline, lowestSpeed: LowestSpeed? = nil,
        connect: TimeInterval = defaultConnect
    ) {
        self.deadline = deadline
        self.lowestSpeed = lowestSpeed
        self.connect = connect
    }

    /// The connect limit in seconds, or nil when the transport's own applies (see ``connect``).
    var connectSeconds: Double? {
        connect.isNaN || connect >= RequestRules.noTimeoutThreshold ? nil : connect
    }

    /// The deadline in seconds, or nil when there is none (see ``deadline``).
    var deadlineSeconds: Double? {
        deadline.isNaN || deadline >= RequestRules.noTimeoutThreshold ? nil : deadline
    }

    /// Why these limits cannot be used, or nil when they can.
    var problem: String? {
        if !deadline.isNaN, deadline <= 0 { return "deadline \(deadline) is not positive" }
        if !connect.isNaN, connect <= 0 { return "connect limit \(connect) is not positive" }
        guard let lowestSpeed else { return nil }
        if lowestSpeed.bytesPerSecond <= 0 {
            return "lowest speed \(lowestSpeed.bytesPerSecond) B/s is not positive"
        }
        if !lowestSpeed.seconds.isFinite || lowestSpeed.seconds <= 0
            || lowestSpeed.seconds >= RequestRules.noTimeoutThreshold
        {
            return "lowest speed window \(lowestSpeed.seconds) s is not a positive number of seconds"
        }
        return nil
    }
}

/// A lowest speed: ``bytesPerSecond`` on average over each window of ``seconds`` (curl's `--speed-limit` and
/// `--speed-time`, aria2's `--lowest-speed-limit`).
public struct LowestSpeed: Sendable, Hashable, CustomStringConvertible {
    /// The lowest average speed, in bytes per second; above 0.
    public var bytesPerSecond: Int64
    /// The window the speed is averaged over, in seconds; above 0 and finite.
    public var seconds: TimeInterval

    /// A lowest speed of `bytesPerSecond` over windows of `seconds`.
    public init(bytesPerSecond: Int64, over seconds: TimeInterval) {
        self.bytesPerSecond = bytesPerSecond
        self.seconds = seconds
    }

    /// "`bytesPerSecond` B/s over `seconds` s".
    public var description: String { "\(bytesPerSecond) B/s over \(LogText.seconds(seconds)) s" }
}

/// A request's deadline clock (see ``TimeLimits/deadline``): not started, running until a time on the queue's
/// clock, or stopped (paused) with the seconds it had left. One word and a tag: every waiting request holds one.
enum DeadlineClock: Equatable {
    case notStarted
    case running(until: Double)
    case stopped(left: Double)
}

/// The lowest-speed window of a running attempt: when it began, and the attempt's and the queue's byte counts
/// then. Each window is judged at its end, and the next begins there.
struct SpeedWindow: Equatable {
    var start: Double
    /// The attempt's bytes moved (received and sent) when the window began.
    var moved: Int64
    /// The queue's bytes received when the window began.
    var queueReceived: Int64

    /// What a window's end says.
    enum Verdict: Equatable {
        /// Not over yet: judge it at this time.
        case due(Double)
        /// The attempt kept the speed (or the cap set the pace): the next window ends at this time.
        case kept(nextDue: Double)
        /// Slower than the limit: this many bytes per second on average.
        case tooSlow(bytesPerSecond: Int64)
    }

    /// Judges the window at `now` against `limit`: `moved` and `queueReceived` are the counts now, `rateCap` the
    /// queue's cap (nil: none). A window in which the queue received at least three quarters of the cap is never
    /// judged too slow.
    mutating func judge(_ limit: LowestSpeed, moved: Int64, queueReceived: Int64, rateCap: Int?, now: Double)
        -> Verdict
    {
        let elapsed = now - start
        guard elapsed >= limit.seconds else { return .due(start + limit.seconds) }
        let bytes = moved - self.moved
        let heldByCap = rateCap.map { Double(queueReceived - self.queueReceived) >= 0.75 * Double($0) * elapsed }
        let isSlow = Double(bytes) < Double(limit.bytesPerSecond) * elapsed && heldByCap != true
        guard !isSlow else { return .tooSlow(bytesPerSecond: Int64((Double(bytes) / elapsed).rounded(.down))) }
        self = SpeedWindow(start: now, moved: moved, queueReceived: queueReceived)
        return .kept(nextDue: now + limit.seconds)
    }
}
