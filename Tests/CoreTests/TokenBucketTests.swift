import TestSupport
import Testing

@testable import NetworkQueue

/// The shared cap's arithmetic, with time passed in by hand.
@Suite(.admitted, .timeLimit(.minutes(10))) struct TokenBucketTests {
    @Test func aNewBucketHoldsATwentiethOfASecondAndRefillsAtItsRate() {
        let bucket = Bucket(rate: 2_000, now: 10)
        #expect(bucket.capacity == 100)
        #expect(bucket.tokens == 100)
        #expect(bucket.draw(60, by: 1, now: 10))
        #expect(bucket.tokens == 40)
        // 1/64 s adds 31.25 tokens; never more than the capacity however long it rests.
        #expect(bucket.mayDraw(1, now: 10.015625))
        #expect(bucket.tokens == 71.25)
        #expect(bucket.mayDraw(1, now: 100))
        #expect(bucket.tokens == 100)
    }

    @Test func aDrawMayOverdrawAPositiveBalanceAndTheDebtIsPaidBackFirst() {
        let bucket = Bucket(rate: 1_000, now: 0)
        #expect(bucket.draw(550, by: 1, now: 0))
        #expect(bucket.tokens == -500)
        #expect(!bucket.draw(1, by: 1, now: 0.25))
        #expect(bucket.tokens == -250)
        // 250 tokens of debt left, plus one to be positive: 0.251 s at 1,000 per second.
        #expect(abs(bucket.delay(now: 0.25) - 0.251) < 1e-9)
        #expect(bucket.delay(now: 0.6) == 0)
        #expect(bucket.draw(10, by: 1, now: 0.6))
        #expect(bucket.tokens == 40)
    }

    @Test func refusedConsumersAreServedFirstComeFirstServed() {
        let bucket = Bucket(rate: 100, now: 0)
        #expect(bucket.draw(10, by: 1, now: 0))
        #expect(!bucket.draw(10, by: 2, now: 0))
        #expect(!bucket.draw(10, by: 3, now: 0))
        #expect(!bucket.draw(10, by: 2, now: 0))
        #expect(bucket.waiting == [2, 3])
        // Tokens again: consumer 1, which never waited, must let the line go first.
        #expect(!bucket.draw(1, by: 1, now: 1))
        #expect(bucket.waiting == [2, 3, 1])
        #expect(!bucket.mayDraw(3, now: 1))
        #expect(bucket.draw(10, by: 2, now: 1))
        #expect(bucket.waiting == [3, 1])
        #expect(bucket.tokens == -5)
        #expect(!bucket.draw(10, by: 3, now: 1))
        // A second later the balance is positive again, but consumer 3 is first in line.
        #expect(!bucket.mayDraw(1, now: 2))
        #expect(bucket.draw(10, by: 3, now: 2))
        #expect(bucket.draw(10, by: 1, now: 3))
        #expect(bucket.waiting == [])
        #expect(bucket.tokens == -5)
    }

    @Test func aConsumerThatLeavesHoldsUpNobody() {
        let bucket = Bucket(rate: 100, now: 0)
        #expect(bucket.draw(10, by: 1, now: 0))
        #expect(!bucket.draw(10, by: 2, now: 0))
        #expect(!bucket.draw(10, by: 3, now: 0))
        bucket.leave(2)
        #expect(bucket.draw(10, by: 3, now: 1))
        #expect(bucket.waiting == [])
    }

    @Test func aRateChangeRefillsAtTheOldRateUpToNowThenAtTheNew() {
        let bucket = Bucket(rate: 1_000, now: 0)
        #expect(bucket.draw(1_050, by: 1, now: 0))
        #expect(bucket.tokens == -1_000)
        bucket.setRate(10_000, now: 0.5)
        #expect(bucket.tokens == -500)
        #expect(bucket.capacity == 500)
        #expect(abs(bucket.delay(now: 0.5) - 0.0501) < 1e-9)
        // Lowered: the balance is held to the new, smaller capacity.
        #expect(bucket.mayDraw(1, now: 10))
        #expect(bucket.tokens == 500)
        bucket.setRate(100, now: 10)
        #expect(bucket.tokens == 5)
        #expect(bucket.rate == 100)
    }

    @Test func overAnyStretchTheDrawsStayWithinTheRateTheBurstAndOnePiecePerConsumer() {
        // Three consumers draw 4 KiB pieces as fast as they are let, at 1 ms steps, for 10 s at 200 kB/s.
        let bucket = Bucket(rate: 200_000, now: 0)
        var drawn = [Int](repeating: 0, count: 3)
        var perSecond = [Int](repeating: 0, count: 10)
        for step in 0..<10_000 {
            let now = Double(step) / 1_000
            for consumer in 0..<3 where bucket.draw(4_096, by: consumer, now: now) {
                drawn[consumer] += 4_096
                perSecond[step / 1_000] += 4_096
            }
        }
        let total = drawn.reduce(0, +)
        #expect(total <= 200_000 * 10 + 10_000 + 3 * 4_096)
        #expect(total >= 200_000 * 10 - 3 * 4_096)
        for bytes in perSecond { #expect(bytes <= 200_000 + 10_000 + 3 * 4_096) }
        // Shared evenly: no consumer is more than two pieces from a third.
        for share in drawn { #expect(abs(share - total / 3) <= 2 * 4_096) }
    }

    @Test func ratesBelowOneCountAsOne() {
        let bucket = Bucket(rate: 0, now: 0)
        #expect(bucket.rate == 1)
        #expect(bucket.capacity == 1)
    }
}

/// A bucket in a box, so that expectations can call its mutating methods.
private final class Bucket {
    var value: TokenBucket
    init(rate: Int, now: Double) { value = TokenBucket(rate: rate, now: now) }
    var rate: Double { value.rate }
    var capacity: Double { value.capacity }
    var tokens: Double { value.tokens }
    var waiting: [Int] { value.waiting }
    func draw(_ bytes: Int, by consumer: Int, now: Double) -> Bool { value.draw(bytes, by: consumer, now: now) }
    func mayDraw(_ consumer: Int, now: Double) -> Bool { value.mayDraw(consumer, now: now) }
    func delay(now: Double) -> Double { value.delay(now: now) }
    func setRate(_ rate: Int, now: Double) { value.setRate(rate, now: now) }
    func leave(_ consumer: Int) { value.leave(consumer) }
}

/// The limiter shell around the bucket: settings as given, and no cap means no refusal.
@Suite(.admitted, .timeLimit(.minutes(10))) struct RateCapTests {
    @Test func theCapReadsBackAsSetAndExtremesNeitherTrapNorRefuse() {
        let limiter = RateCap(maximumBytesPerSecond: .max)
        #expect(limiter.maximumBytesPerSecond == .max)
        let consumer = limiter.makeConsumer()
        #expect(limiter.draw(1 << 30, consumer: consumer))
        limiter.maximumBytesPerSecond = -5
        #expect(limiter.maximumBytesPerSecond == nil)
        #expect(limiter.draw(.max, consumer: consumer))
        #expect(limiter.delayUntilAvailable(for: consumer) == 0)
    }

    @Test func aConsumerRefusedWaitsInLineUntilItLeaves() {
        let limiter = RateCap(maximumBytesPerSecond: 1)
        let (first, second) = (limiter.makeConsumer(), limiter.makeConsumer())
        #expect(first != second)
        #expect(limiter.draw(1_000, consumer: first))
        #expect(!limiter.draw(1, consumer: second))
        // A thousand bytes of debt at one byte per second: nobody draws for a long while.
        #expect(limiter.delayUntilAvailable(for: second) > 900)
        limiter.leave(second)
        limiter.maximumBytesPerSecond = nil
        #expect(limiter.draw(1, consumer: second))
    }
}
