import TestSupport
import Testing

@testable import NetworkQueue

/// The preflight policy's books, event by event: which verdict each server's answers give, and when its HEADs wait.
@Suite(.admitted, .timeLimit(.minutes(10))) struct PreflightSamplerTests {
    @Test func smallSizesStopTheHeadsAfterTheSamplesAndBigOnesKeepThemAtOnce() {
        var sampler = PreflightSampler()
        for _ in 0..<4 { sampler.started(0) }
        #expect(sampler.waits(0))
        for answer in 0..<3 {
            #expect(sampler.answered(0, size: 4_096, paced: false) == nil, "answer \(answer)")
            sampler.ended(0)
            // Answered and running samples still make four: the others wait.
            #expect(sampler.waits(0))
        }
        #expect(sampler.answered(0, size: 4_096, paced: false) == .estimates)
        sampler.ended(0)
        #expect(sampler.verdict(of: 0) == .estimates && !sampler.waits(0))
        // Another server: its first big answer keeps a HEAD for each of its requests.
        sampler.started(1)
        #expect(sampler.answered(1, size: 4 << 20, paced: false) == .asksEach)
        #expect(!sampler.waits(1) && sampler.verdict(of: 0) == .estimates)
    }

    @Test func headsWithoutSizesStopAndAFailedSampleMakesRoomForAnother() {
        var sampler = PreflightSampler()
        for _ in 0..<4 { sampler.started(2) }
        // One fails without an answer: room for one more sample.
        sampler.ended(2)
        #expect(!sampler.waits(2))
        sampler.started(2)
        for _ in 0..<3 { #expect(sampler.answered(2, size: nil, paced: false) == nil) }
        #expect(sampler.answered(2, size: nil, paced: false) == .estimates)
        // Nothing running: nothing waits, whatever the count.
        var idle = PreflightSampler()
        #expect(!idle.waits(5) && idle.verdict(of: 5) == .sampling)
        idle.ended(5)
        #expect(!idle.waits(5))
    }

    @Test func aPacedServerIsDecidedByItsFirstAnswer() {
        var sampler = PreflightSampler()
        sampler.started(0, paced: true)
        // One sample at a time: the others wait for its answer, however slow.
        #expect(sampler.waits(0))
        #expect(sampler.answered(0, size: 10, paced: true) == .estimates)
        sampler.started(1)
        #expect(sampler.answered(1, size: 2 << 20, paced: true) == .asksEach)
    }

    @Test func everyRequestNeverStopsNorWaitsAndForgetStartsOver() {
        var sampler = PreflightSampler()
        sampler.policy = .everyRequest
        for _ in 0..<100 { sampler.started(0) }
        #expect(!sampler.waits(0))
        for _ in 0..<100 {
            _ = sampler.answered(0, size: 1, paced: true)
            _ = sampler.answered(0, size: nil, paced: false)
        }
        #expect(sampler.verdict(of: 0) != .estimates)
        sampler.forget()
        #expect(sampler.verdict(of: 0) == .sampling)
        #expect(
            PreflightPolicy(samplesPerServer: 0, smallestSizeWorthAHead: -5)
                == PreflightPolicy(samplesPerServer: 1, smallestSizeWorthAHead: 0))
    }
}
