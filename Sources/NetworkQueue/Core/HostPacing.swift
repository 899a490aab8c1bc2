import Foundation

/// How often a queue starts requests to one server (scheme, host and port): at most one start per ``interval``,
/// spaced evenly, never in a burst. HEAD preflights and a split file's extra connections count as starts.
///
/// Unlike curl's `--rate`, which has no effect on parallel transfers, pacing holds however many transfers run at
/// once: with 8 in flight and an interval of 1 s, one server still sees one new request a second. A paced request
/// waits without holding a slot, and requests to other servers start meanwhile.
///
/// Set queue-wide with ``NetworkQueue/hostPacing`` and per server with ``NetworkQueue/setHostPacing(_:for:)``.
public struct HostPacing: Sendable, Hashable {
    /// The least time between two starts to one server, in seconds. 0 (the default) means no pacing; values that
    /// are not finite and positive mean 0.
    public var interval: TimeInterval
    /// When true, each wait is drawn at random between 0.5 and 1.5 times ``interval`` (wget's `--random-wait`),
    /// so that the starts do not fall on a fixed beat. Default false.
    public var isRandomized: Bool

    /// No pacing: requests start as soon as a slot is free.
    public static let unpaced = HostPacing(interval: 0)

    /// Paces starts `interval` seconds apart (randomized: 0.5–1.5 times it).
    public init(interval: TimeInterval, randomized: Bool = false) {
        self.interval = interval.isFinite && interval > 0 ? interval : 0
        isRandomized = randomized
    }

    /// At most `count` starts per `seconds` (a rate of 10 per 60 s starts one request every 6 s). A count that is
    /// not finite and positive means no pacing.
    public static func requests(_ count: Double, per seconds: TimeInterval, randomized: Bool = false) -> HostPacing {
        guard count.isFinite, count > 0 else { return .unpaced }
        return HostPacing(interval: seconds / count, randomized: randomized)
    }

    /// True when starts are paced.
    public var isPaced: Bool { interval > 0 }
}

/// What a queue does when a server says it is overloaded or its request budget is spent: it holds every new start
/// to that server (scheme, host and port) until the time the server gave, so that the batch stops collecting 429s
/// while one request waits out its `Retry-After`. Requests in flight are not cut, and other servers' requests go
/// on.
///
/// A server is held by a response that has:
/// - status 429 or 503 and a `Retry-After` (seconds or an HTTP-date);
/// - a `RateLimit` header (IETF httpapi draft) with an item whose remaining quota is 0: `r=0` with its reset `t=`
///   (`RateLimit: "default";r=0;t=30`), or the older `remaining=0, reset=30`;
/// - `RateLimit-Remaining: 0` with `RateLimit-Reset` in seconds;
/// - `X-RateLimit-Remaining: 0` with `X-RateLimit-Reset`, read as seconds from now, or as a Unix time when it is
///   one (GitHub's form: a value over 1,000,000,000).
///
/// A budget spent with no reset time given holds nothing. Each hold lasts at most ``maximumHold``. The log says when
/// a server is held and until when (``NetworkQueueLogRecord/Event/hostHeld``), and
/// ``QueueProgress/heldRequestCount`` how many requests wait for one.
public struct HostBackoff: Sendable, Hashable {
    /// Whether servers are held at all. Default true.
    public var isEnabled: Bool
    /// The longest one hold lasts, in seconds: a server asking for longer is held this long. Default 60 s (the
    /// retry policy's ``RetryPolicy/maximumRetryAfter`` by default); values that are not finite and non-negative
    /// mean 60.
    public var maximumHold: TimeInterval

    /// Holds no server: each request honours its own `Retry-After` only.
    public static let off = HostBackoff(isEnabled: false)

    /// Creates a backoff; every parameter defaults as its property says.
    public init(isEnabled: Bool = true, maximumHold: TimeInterval = 60) {
        self.isEnabled = isEnabled
        self.maximumHold = maximumHold.isFinite && maximumHold >= 0 ? maximumHold : 60
    }
}
