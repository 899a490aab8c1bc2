/// Decides when coalesced progress may be delivered: at most one flush per `interval`, with every change
/// reported by the next flush. Pure: the caller passes the time and runs the timer.
struct DeliveryThrottle {
    /// The shortest time between two flushes, in seconds (the outbox stretches its own while events flood in).
    var interval: Double
    /// True while a flush is scheduled and not yet done.
    private(set) var isScheduled = false
    private var lastFlush = -Double.infinity

    init(interval: Double) { self.interval = interval }

    /// Something changed at `now`. Returns the delay after which to flush, or nil when a scheduled flush
    /// will already report the change.
    mutating func change(at now: Double) -> Double? {
        guard !isScheduled else { return nil }
        isScheduled = true
        return max(0, lastFlush + interval - now)
    }

    /// The scheduled flush ran at `now`.
    mutating func flushed(at now: Double) {
        isScheduled = false
        lastFlush = now
    }
}
