import Foundation

/// The rate cap: a receive-rate cap shared by many transfers: the token bucket behind
/// ``NetworkQueue/maximumBytesPerSecond``, handed to the transport with each transfer it starts.
///
/// A transport that honours it (``CurlTransport``) asks ``draw(_:consumer:)`` before it hands on bytes it
/// has received and stops reading that transfer while the answer is no, so the connection's TCP window
/// closes and the server slows down; it asks ``delayUntilAvailable(for:)`` when to try again. Transfers
/// that draw share the rate between them: one that is idle or slow leaves its share to the others.
///
/// Every method may be called from any thread.
public final class RateCap: Sendable {
    private struct State {
        var bucket: TokenBucket?
        /// The cap as set (the bucket keeps it as a `Double`).
        var rate: Int?
        var nextConsumer = 0
    }

    private let state: Locked<State>

    /// A cap of `maximumBytesPerSecond` (nil, zero or negative: no cap, the default).
    public init(maximumBytesPerSecond: Int? = nil) {
        state = Locked(State())
        self.maximumBytesPerSecond = maximumBytesPerSecond
    }

    /// Seconds on a monotonic clock.
    private static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// The cap in bytes per second, nil when there is none. Setting it takes effect at once for every
    /// transfer drawing from it; zero or negative values remove the cap.
    public var maximumBytesPerSecond: Int? {
        get { state.withLock { $0.rate } }
        set {
            let rate = newValue.flatMap { $0 > 0 ? $0 : nil }
            let now = Self.now()
            state.withLock { state in
                state.rate = rate
                switch (rate, state.bucket) {
                case (nil, _): state.bucket = nil
                case (let rate?, nil): state.bucket = TokenBucket(rate: rate, now: now)
                case (let rate?, var bucket?):
                    bucket.setRate(rate, now: now)
                    state.bucket = bucket
                }
            }
        }
    }

    /// A new consumer number, for a transfer about to draw.
    public func makeConsumer() -> Int {
        state.withLock { state in
            state.nextConsumer += 1
            return state.nextConsumer
        }
    }

    /// Takes `bytes` for `consumer` and returns true (always, when there is no cap), or returns false when
    /// the consumer must wait: it then waits in line, and should ask again after
    /// ``delayUntilAvailable(for:)``.
    public func draw(_ bytes: Int, consumer: Int) -> Bool {
        state.withLock { state in
            guard state.bucket != nil else { return true }
            return state.bucket!.draw(bytes, by: consumer, now: Self.now())
        }
    }

    /// Seconds until `consumer` may draw: 0 when it may now (or there is no cap). Others ahead of it in line
    /// make it wait until they have drawn; this returns the soonest it might be served.
    public func delayUntilAvailable(for consumer: Int) -> Double {
        state.withLock { state in
            guard state.bucket != nil else { return 0 }
            let now = Self.now()
            return state.bucket!.mayDraw(consumer, now: now) ? 0 : max(state.bucket!.delay(now: now), 0.001)
        }
    }

    /// Says that `consumer` draws no more (its transfer ended or was cancelled), so it holds up nobody.
    public func leave(_ consumer: Int) {
        state.withLock { state in state.bucket?.leave(consumer) }
    }
}
