import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// When and how soon a failed request is sent again.
///
/// Set one on the queue (``NetworkQueue/retryPolicy``, the default of its requests) or on a request
/// (``NetworkRequest/retryPolicy``, which replaces the queue's). The defaults:
///
/// | Setting | Default |
/// |---|---|
/// | ``maximumAttempts`` | 3 attempts in all (2 retries) |
/// | ``retryableErrors`` | timed out, connection lost, cannot connect, cannot find host, DNS failure, not connected |
/// | ``retryableStatusCodes`` | 408, 429, 500, 502, 503, 504 |
/// | ``retriesNonIdempotentMethods`` | false: only GET, HEAD, PUT, DELETE, OPTIONS, TRACE |
/// | ``backoff`` | full jitter: a random delay up to 1 s, 2 s, 4 s … capped at 30 s |
/// | ``maximumRetryAfter`` | 60 s |
/// | ``retriesEarlyWhenHostRecovers`` | true |
/// | ``retriesFirstLostConnectionAtOnce`` | true |
/// | ``decide`` | nil |
///
/// A request that failed to connect at all (`.cannotConnectToHost`, `.cannotFindHost`,
/// `.dnsLookupFailed`, `.notConnectedToInternet`) never reached a server, so it is retried whatever its
/// method. Cancellations, invalid requests, HEAD preflight failures and file errors are never retried.
public struct RetryPolicy: Sendable {
    /// What ``RetryPolicy/decide`` answers about one failed attempt.
    public enum Decision: Sendable, Hashable {
        /// Whatever the policy's own rules decide.
        case useDefault
        /// Send it again after the policy's delay (the server's `Retry-After`, else the backoff), even if
        /// the policy's rules would not.
        case retry
        /// Send it again after this many seconds (negative means 0).
        case retryAfter(TimeInterval)
        /// Do not send it again: the request fails with this attempt's error.
        case doNotRetry
    }

    /// How long to wait before retry number `n` when the server did not say: a random delay between 0 and
    /// `min(maximumDelay, initialDelay × multiplier^(n-1))` ("full jitter"), so that many clients failing
    /// together do not come back together.
    public struct Backoff: Sendable, Hashable {
        /// The upper bound of the first retry's delay, in seconds. Default 1.
        public var initialDelay: TimeInterval
        /// How much the upper bound grows per retry. Default 2.
        public var multiplier: Double
        /// The largest upper bound, in seconds. Default 30.
        public var maximumDelay: TimeInterval
        /// When false, the delay is the upper bound itself (no randomness). Default true.
        public var jitter: Bool

        /// Creates a backoff; every value is clamped to be finite and not negative (the multiplier to at least 1).
        public init(
            initialDelay: TimeInterval = 1, multiplier: Double = 2, maximumDelay: TimeInterval = 30, jitter: Bool = true
        ) {
            self.initialDelay = RetryRules.clampedSeconds(initialDelay)
            self.multiplier = multiplier.isFinite ? max(1, multiplier) : 1
            self.maximumDelay = RetryRules.clampedSeconds(maximumDelay)
            self.jitter = jitter
        }

        /// The upper bound of the delay before retry number `retry` (1 for the first retry).
        public func bound(forRetry retry: Int) -> TimeInterval {
            let exponent = Double(max(0, retry - 1))
            let bound = initialDelay * pow(multiplier, exponent)
            return bound.isFinite ? min(maximumDelay, bound) : maximumDelay
        }

        /// The delay before retry number `retry`, drawn from `generator` when jittered.
        public func delay(forRetry retry: Int, using generator: inout some RandomNumberGenerator) -> TimeInterval {
            let bound = bound(forRetry: retry)
            guard jitter, bound > 0 else { return bound }
            return Double.random(in: 0...bound, using: &generator)
        }
    }

    /// The most attempts in all, the first included; 1 means no retry. Default 3. Values below 1 count as 1.
    public var maximumAttempts: Int
    /// Transport failures worth another attempt. Default: `.timedOut`, `.networkConnectionLost`,
    /// `.cannotConnectToHost`, `.cannotFindHost`, `.dnsLookupFailed`, `.notConnectedToInternet`.
    public var retryableErrors: Set<URLError.Code>
    /// Response statuses worth another attempt (when the request does not accept them). Default 408, 429,
    /// 500, 502, 503, 504.
    public var retryableStatusCodes: Set<Int>
    /// When true, POST, PATCH and other methods that are not idempotent are retried too: only opt in when
    /// sending the request twice is harmless. Default false.
    public var retriesNonIdempotentMethods: Bool
    /// The delay between attempts when the server gives none. Default ``Backoff/init(initialDelay:multiplier:maximumDelay:jitter:)``
    /// with its defaults.
    public var backoff: Backoff
    /// The longest `Retry-After` (seconds or HTTP-date) the policy waits for. A response asking for longer
    /// is not retried: the request fails at once with that response's error. Default 60 s.
    public var maximumRetryAfter: TimeInterval
    /// When true, a request waiting out its backoff is retried at once when another request to the same
    /// scheme, host and port succeeds. Waits the server asked for (`Retry-After`) are always honoured.
    /// Default true.
    public var retriesEarlyWhenHostRecovers: Bool
    /// When true, a request's first attempt (or first HEAD) whose connection was lost (`.networkConnectionLost`: reset
    /// or closed by the server) is sent again at once, on a new connection, without the backoff; a second loss waits it.
    /// A connection the server closed as the request went out (a keep-alive race, a server restarting its workers) is
    /// the common case, and browsers retry it at once, once (RFC 9110 §9.2.2 allows it for idempotent requests). It
    /// costs an overloaded server at most one extra request per request. Default true.
    public var retriesFirstLostConnectionAtOnce: Bool
    /// Asked about every failed attempt that may be retried at all (not a cancellation, an invalid
    /// request, a preflight or file error, and attempts left), with the request, the attempt's error and
    /// the number of attempts made so far. Its answer replaces the rules above, except
    /// ``maximumAttempts``. The request waits (holding no slot) while it runs, in a task of the queue's own (not on the
    /// cooperative pool, so an app that computes there does not hold it back). Default nil.
    public var decide: (@Sendable (NetworkRequest, NetworkQueueError, Int) async -> Decision)?

    /// Creates a policy; see the type's table for the defaults.
    public init(
        maximumAttempts: Int = 3,
        retryableErrors: Set<URLError.Code> = RetryPolicy.defaultRetryableErrors,
        retryableStatusCodes: Set<Int> = [408, 429, 500, 502, 503, 504],
        retriesNonIdempotentMethods: Bool = false,
        backoff: Backoff = Backoff(),
        maximumRetryAfter: TimeInterval = 60,
        retriesEarlyWhenHostRecovers: Bool = true,
        retriesFirstLostConnectionAtOnce: Bool = true,
        decide: (@Sendable (NetworkRequest, NetworkQueueError, Int) async -> Decision)? = nil
    ) {
        self.maximumAttempts = max(1, maximumAttempts)
        self.retryableErrors = retryableErrors
        self.retryableStatusCodes = retryableStatusCodes
        self.retriesNonIdempotentMethods = retriesNonIdempotentMethods
        self.backoff = backoff
        self.maximumRetryAfter = RetryRules.clampedSeconds(maximumRetryAfter)
        self.retriesEarlyWhenHostRecovers = retriesEarlyWhenHostRecovers
        self.retriesFirstLostConnectionAtOnce = retriesFirstLostConnectionAtOnce
        self.decide = decide
    }

    /// The default ``retryableErrors``.
    public static let defaultRetryableErrors: Set<URLError.Code> = [
        .timedOut, .networkConnectionLost, .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed,
        .notConnectedToInternet,
    ]

    /// No retry: every request gets one attempt.
    public static let never = RetryPolicy(maximumAttempts: 1)

    /// The default policy (3 attempts in all).
    public static let `default` = RetryPolicy()
}
