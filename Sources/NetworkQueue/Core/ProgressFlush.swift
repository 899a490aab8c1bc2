/// When the queue's coalesced progress is published: requests whose bytes moved are listed once each, and a
/// flush falls due no sooner than the throttle allows. A pure book: the queue's machine publishes what it
/// lists when the flush comes.
struct ProgressFlush {
    /// When the listed requests and the queue's progress are to be published, if a flush is due.
    private(set) var due: Double?
    /// True when the queue's own progress changed since the last flush.
    var queueChanged = false
    /// The slots listed for the next flush, each once.
    private(set) var slots: [Int] = []
    private var throttle = DeliveryThrottle(interval: 1.0 / 60)

    /// The queue's progress changed at `now`: a flush falls due, no sooner than the throttle allows.
    mutating func markChanged(at now: Double) {
        queueChanged = true
        guard due == nil, let delay = throttle.change(at: now) else { return }
        due = now + delay
    }

    /// Lists `slot` for the next flush unless it is listed already (`isListed`, the request's own flag).
    mutating func list(_ slot: Int, isListed: inout Bool) {
        guard !isListed else { return }
        isListed = true
        slots.append(slot)
    }

    /// The flush at `now`: returns the listed slots and starts over.
    mutating func flush(at now: Double) -> [Int] {
        due = nil
        throttle.flushed(at: now)
        defer { slots.removeAll(keepingCapacity: true) }
        return slots
    }
}
