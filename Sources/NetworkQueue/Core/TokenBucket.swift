/// The arithmetic of a shared receive-rate cap: a token bucket that every capped transfer of a queue draws
/// from, one token per byte.
///
/// Pure: time comes in as `now` (seconds on any monotonic clock), and nothing is read or slept here.
///
/// - **Refill**: tokens grow at ``rate`` per second up to ``capacity`` (a twentieth of a second's worth,
///   at least one byte): a transfer that was idle cannot save up more than that burst.
/// - **Draw**: a consumer with bytes in hand may take them while the balance is positive, even more than
///   the balance (the balance then goes negative: a debt that the refill pays back before anyone draws
///   again). So a consumer never has to split what it received, and over any stretch the bytes drawn stay
///   within ``rate`` × time + ``capacity`` + one piece per consumer.
/// - **Sharing**: a consumer refused joins a first-come line; while the line is not empty, only its head
///   may draw, so tokens go to the consumers that waited longest, and a slow or idle consumer's share goes
///   to the others.
struct TokenBucket: Equatable {
    /// Bytes per second, at least 1.
    private(set) var rate: Double
    /// The most tokens the bucket holds.
    private(set) var capacity: Double
    /// The balance; negative after a draw bigger than it was.
    private(set) var tokens: Double
    /// When ``tokens`` was last brought up to date.
    private(set) var updated: Double
    /// Consumers refused, first come first served.
    private(set) var waiting: [Int] = []

    /// A full bucket refilling at `rate` bytes per second (values below 1 count as 1).
    init(rate: Int, now: Double) {
        self.rate = Double(max(1, rate))
        capacity = Self.capacity(for: self.rate)
        tokens = capacity
        updated = now
    }

    private static func capacity(for rate: Double) -> Double { max(1, rate / 20) }

    /// Brings the balance up to `now` (a time before the last update changes nothing).
    private mutating func refill(_ now: Double) {
        guard now > updated else { return }
        tokens = min(capacity, tokens + rate * (now - updated))
        updated = now
    }

    /// Changes the rate from `now` on: time before `now` refills at the old rate; the balance is held to the
    /// new capacity.
    mutating func setRate(_ rate: Int, now: Double) {
        refill(now)
        self.rate = Double(max(1, rate))
        capacity = Self.capacity(for: self.rate)
        tokens = min(tokens, capacity)
    }

    /// True when `consumer` may draw now: the balance is positive and nobody waits ahead of it.
    mutating func mayDraw(_ consumer: Int, now: Double) -> Bool {
        refill(now)
        return tokens > 0 && (waiting.first ?? consumer) == consumer
    }

    /// Takes `bytes` tokens for `consumer` and returns true, or returns false and puts it in line (once)
    /// when it may not draw now (see ``mayDraw(_:now:)``).
    mutating func draw(_ bytes: Int, by consumer: Int, now: Double) -> Bool {
        guard mayDraw(consumer, now: now) else {
            if !waiting.contains(consumer) { waiting.append(consumer) }
            return false
        }
        if waiting.first == consumer { waiting.removeFirst() }
        tokens -= Double(bytes)
        return true
    }

    /// Seconds from `now` until the balance is positive again (0 when it is).
    func delay(now: Double) -> Double {
        let balance = min(capacity, tokens + rate * max(0, now - updated))
        return balance > 0 ? 0 : (-balance) / rate + 1 / rate
    }

    /// Takes `consumer` out of line (it ended, or stopped wanting bytes).
    mutating func leave(_ consumer: Int) {
        waiting.removeAll { $0 == consumer }
    }
}
