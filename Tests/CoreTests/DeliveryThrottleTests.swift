import TestSupport
import Testing

@testable import NetworkQueue

@Suite(.admitted, .timeLimit(.minutes(10))) struct DeliveryThrottleTests {
    @Test func firstChangeFlushesAtOnceAndLaterOnesWaitForTheInterval() {
        var throttle = DeliveryThrottle(interval: 0.1)
        #expect(throttle.change(at: 5.0) == 0)
        #expect(throttle.change(at: 5.01) == nil)
        throttle.flushed(at: 5.0)
        #expect(throttle.change(at: 5.02) == 0.1 - 0.02 + 5.0 - 5.0)
        throttle.flushed(at: 5.1)
        #expect(throttle.change(at: 9.0) == 0)
    }

    /// Feeds a flood of changes at a seeded random rate through a simulated timer and counts flushes.
    @Test func aThousandChangesPerSecondBecomeAtMostSixtyFlushesPerSecond() {
        var rng = SeededGenerator(seed: 42)
        var throttle = DeliveryThrottle(interval: 1.0 / 60)
        var now = 0.0
        var dueFlush: Double?
        var flushes: [Double] = []
        var lastChange = 0.0
        while now < 10 {
            now += Double.random(in: 0...0.002, using: &rng)
            if let due = dueFlush, due <= now {
                throttle.flushed(at: due)
                flushes.append(due)
                dueFlush = nil
            }
            if let delay = throttle.change(at: now) { dueFlush = now + delay }
            lastChange = now
        }
        if let due = dueFlush { flushes.append(due) }
        // Never two flushes closer than the interval, so at most 60 per second (+1 for the first).
        #expect(zip(flushes, flushes.dropFirst()).allSatisfy { $1 - $0 >= 1.0 / 60 - 1e-12 })
        #expect(flushes.count <= Int(10 * 60) + 1)
        #expect(flushes.count >= 500)
        // The last change is always followed by a flush.
        #expect(flushes.last! >= lastChange)
    }
}
