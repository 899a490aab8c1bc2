import TestSupport
import Testing

@testable import NetworkQueue

@Suite(.admitted, .timeLimit(.minutes(10))) struct ProgressLedgerTests {
    @Test func emptyLedgerIsZeroNotNaN() {
        let progress = KeyedLedger().snapshot(at: 0)
        #expect(progress.fractionCompleted == 0)
        #expect(progress.totalRequestCount == 0)
        #expect(progress.bytesExpectedToReceive == 0)
        #expect(progress.throughput == nil)
    }

    @Test func knownSizesGiveTheExactByteFraction() {
        var ledger = KeyedLedger()
        ledger.add(1, expectedDownload: 1_000)
        ledger.add(2, expectedDownload: 3_000)
        ledger.receive(1, bytes: 500, at: 0)
        #expect(ledger.snapshot(at: 0).fractionCompleted == 500.0 / 4_000)
        ledger.receive(2, bytes: 1_500, at: 0)
        let progress = ledger.snapshot(at: 0)
        #expect(abs(progress.fractionCompleted - 2_000.0 / 4_000) < 1e-12)
        #expect(progress.bytesReceived == 2_000)
        #expect(progress.bytesExpectedToReceive == 4_000)
    }

    @Test func unknownSizesCountByRequest() {
        var ledger = KeyedLedger()
        for id in 1...4 { ledger.add(id) }
        ledger.receive(1, bytes: 10_000, at: 0)
        #expect(ledger.snapshot(at: 0).fractionCompleted == 0)
        #expect(ledger.snapshot(at: 0).bytesExpectedToReceive == nil)
        ledger.finish(1, .succeeded)
        #expect(ledger.snapshot(at: 0).fractionCompleted == 0.25)
        ledger.finish(2, .succeeded)
        #expect(ledger.snapshot(at: 0).fractionCompleted == 0.5)
    }

    @Test func aRequestAwaitingItsHeadWeighsTheMeanLearnedSize() {
        var ledger = KeyedLedger()
        for id in 1...4 {
            ledger.add(id)
            ledger.awaitSize(id)
        }
        // Two HEADs told 1,000 and 3,000: the other two weigh the mean, 2,000, in the estimate and the fraction.
        ledger.setExpectedDownload(1, 1_000)
        ledger.setExpectedDownload(2, 3_000)
        var progress = ledger.snapshot(at: 0)
        #expect(progress.bytesExpectedToReceive == nil)
        #expect(progress.isEstimated)
        #expect(progress.estimatedBytesExpectedToReceive == 8_000)
        ledger.receive(1, bytes: 1_000, at: 0)
        #expect(ledger.snapshot(at: 0).fractionCompleted == 1_000.0 / 8_000)
        // A third HEAD says 6,000: the mean moves (estimate 1,000 + 3,000 + 6,000 + 10,000 / 3), the fraction does not.
        let before = ledger.snapshot(at: 0).fractionCompleted
        ledger.setExpectedDownload(3, 6_000)
        progress = ledger.snapshot(at: 0)
        #expect(progress.fractionCompleted == before)
        #expect(progress.estimatedBytesExpectedToReceive == Int64(13_333))
        // The last HEAD says 10, below the mean: not progress (nothing was received); every size is known now.
        ledger.setExpectedDownload(4, 10)
        #expect(ledger.snapshot(at: 0).fractionCompleted == before)
        #expect(ledger.snapshot(at: 0).bytesExpectedToReceive == 10_010)
        for id in 1...4 { ledger.finish(id, .succeeded) }
        progress = ledger.snapshot(at: 0)
        #expect(progress.fractionCompleted == 1)
        #expect(!progress.isEstimated)
    }

    @Test func aHeadWithoutASizeLeavesTheRequestAtOneUnit() {
        var ledger = KeyedLedger()
        ledger.add(1)
        ledger.awaitSize(1)
        ledger.add(2, expectedDownload: 1_000)
        #expect(ledger.snapshot(at: 0).estimatedBytesExpectedToReceive == 2_000)
        ledger.stopAwaitingSize(1)
        let progress = ledger.snapshot(at: 0)
        #expect(progress.bytesExpectedToReceive == nil)
        #expect(progress.estimatedBytesExpectedToReceive == 2_000)
        #expect(progress.fractionCompleted == 0)
        ledger.finish(1, .succeeded)
        // One unit of 1,001.
        #expect(abs(ledger.snapshot(at: 0).fractionCompleted - 1.0 / 1_001) < 1e-12)
    }

    @Test func anOpenSourceKeepsTheTotalOpenAndTheFractionBelowOne() {
        var ledger = KeyedLedger()
        ledger.ledger.openSource(announcing: 3)
        ledger.ledger.readAnnounced()
        ledger.add(1, expectedDownload: 100)
        var progress = ledger.snapshot(at: 0)
        #expect(!progress.isTotalFinal)
        #expect(progress.estimatedRequestCount == 3)
        #expect(progress.estimatedBytesExpectedToReceive == 300)
        #expect(progress.bytesExpectedToReceive == nil)
        ledger.receive(1, bytes: 100, at: 0)
        ledger.finish(1, .succeeded)
        // One of three announced done: a third; the two to come weigh the mean learned size.
        #expect(abs(ledger.snapshot(at: 0).fractionCompleted - 1.0 / 3) < 1e-12)
        // The source ends having given only one: every request of the drain succeeded.
        ledger.ledger.closeSource(unread: 2)
        progress = ledger.snapshot(at: 0)
        #expect(progress.isTotalFinal)
        #expect(progress.fractionCompleted == 1)
        #expect(progress.bytesExpectedToReceive == 100)
    }

    @Test func withoutAnAnnouncedCountAnOpenSourceHoldsTheFractionBelowOne() {
        var ledger = KeyedLedger()
        ledger.ledger.openSource()
        ledger.add(1, expectedDownload: 10)
        ledger.receive(1, bytes: 10, at: 0)
        ledger.finish(1, .succeeded)
        #expect(ledger.snapshot(at: 0).fractionCompleted == ProgressLedger.openFractionCap)
        ledger.ledger.closeSource()
        #expect(ledger.snapshot(at: 0).fractionCompleted == 1)
    }

    @Test func everyRequestSucceedingEndsAtExactlyOne() {
        var ledger = KeyedLedger()
        ledger.add(1, expectedDownload: 130_050)
        ledger.add(2)
        ledger.add(3, expectedDownload: 7, expectedUpload: 3)
        ledger.receive(1, bytes: 130_050, at: 0)
        ledger.receive(2, bytes: 99, at: 0)
        ledger.send(3, totalSent: 3, expected: 3, at: 0)
        ledger.receive(3, bytes: 7, at: 0)
        for id in 1...3 { ledger.finish(id, .succeeded) }
        let progress = ledger.snapshot(at: 0)
        #expect(progress.fractionCompleted == 1.0)
        #expect(progress.bytesReceived == 130_156)
        #expect(progress.bytesExpectedToReceive == 130_156)
        #expect(progress.finishedRequestCount == 3)
    }

    @Test func restartResetsBytesInsteadOfCountingThemTwice() {
        var ledger = KeyedLedger()
        ledger.add(1, expectedDownload: 1_000)
        ledger.receive(1, bytes: 600, at: 0)
        let before = ledger.snapshot(at: 0).fractionCompleted
        ledger.restart(1)
        #expect(ledger.snapshot(at: 0).bytesReceived == 0)
        #expect(ledger.snapshot(at: 0).fractionCompleted == before)
        ledger.receive(1, bytes: 1_000, at: 0)
        ledger.finish(1, .succeeded)
        #expect(ledger.snapshot(at: 0).bytesReceived == 1_000)
        #expect(ledger.snapshot(at: 0).fractionCompleted == 1.0)
    }

    @Test func failuresStopCountingWithoutTheFractionFalling() {
        var ledger = KeyedLedger()
        ledger.add(1, expectedDownload: 100)
        ledger.add(2, expectedDownload: 100)
        ledger.add(3, expectedDownload: 200)
        ledger.receive(1, bytes: 100, at: 0)
        ledger.receive(2, bytes: 50, at: 0)
        let before = ledger.snapshot(at: 0).fractionCompleted
        ledger.finish(2, .failed)
        #expect(ledger.snapshot(at: 0).fractionCompleted == before)
        ledger.finish(3, .cancelled)
        #expect(ledger.snapshot(at: 0).fractionCompleted == before)
        ledger.finish(1, .succeeded)
        let progress = ledger.snapshot(at: 0)
        #expect(progress.fractionCompleted < 1)
        #expect(progress.fractionCompleted >= before)
        #expect(progress.failedRequestCount == 1 && progress.cancelledRequestCount == 1)
    }

    @Test func lateSizeJoiningTheTotalDoesNotMoveTheFractionBack() {
        var ledger = KeyedLedger()
        ledger.add(1, expectedDownload: 1_000)
        ledger.receive(1, bytes: 800, at: 0)
        #expect(ledger.snapshot(at: 0).fractionCompleted == 0.8)
        ledger.add(2)
        ledger.setExpectedDownload(2, 9_000)
        #expect(ledger.snapshot(at: 0).fractionCompleted == 0.8)
        #expect(ledger.snapshot(at: 0).bytesExpectedToReceive == 10_000)
        ledger.receive(1, bytes: 200, at: 0)
        ledger.finish(1, .succeeded)
        ledger.receive(2, bytes: 9_000, at: 0)
        ledger.finish(2, .succeeded)
        #expect(ledger.snapshot(at: 0).fractionCompleted == 1.0)
    }

    @Test func throughputAndEtaComeFromThePassedTimestamps() {
        var ledger = KeyedLedger()
        ledger.add(1, expectedDownload: 10_000)
        ledger.receive(1, bytes: 1_000, at: 10)
        ledger.receive(1, bytes: 1_000, at: 11)
        ledger.receive(1, bytes: 1_000, at: 12)
        let progress = ledger.snapshot(at: 12)
        #expect(progress.throughput == 1_000)
        #expect(progress.estimatedTimeRemaining == 7)
    }

    @Test func seededRandomSequencesKeepTheInvariants() {
        for seed in 0..<2_000 as Range<UInt64> {
            var rng = SeededGenerator(seed: seed)
            var ledger = KeyedLedger()
            var open = Set<Int>()
            var anyFailure = false
            var last = 0.0
            var time = 0.0
            let count = Int.random(in: 1...8, using: &rng)
            for id in 0..<count {
                ledger.add(
                    id, expectedDownload: Bool.random(using: &rng) ? Int64.random(in: 0...5_000, using: &rng) : nil)
                open.insert(id)
            }
            while let id = open.randomElement(using: &rng) {
                time += Double.random(in: 0...0.2, using: &rng)
                switch Int.random(in: 0..<10, using: &rng) {
                case 0: ledger.setExpectedDownload(id, Int64.random(in: -1...5_000, using: &rng))
                case 1:
                    // A retry: its bytes stop counting and its size goes back to an earlier belief.
                    ledger.restart(id)
                    if Bool.random(using: &rng) {
                        ledger.replaceExpectedDownload(
                            id, Bool.random(using: &rng) ? Int64.random(in: 0...5_000, using: &rng) : nil)
                    }
                case 2...6: ledger.receive(id, bytes: Int64.random(in: 0...2_000, using: &rng), at: time)
                case 7:
                    ledger.finish(id, Bool.random(using: &rng) ? .failed : .cancelled)
                    anyFailure = true
                    open.remove(id)
                default:
                    ledger.finish(id, .succeeded)
                    open.remove(id)
                }
                let fraction = ledger.snapshot(at: time).fractionCompleted
                #expect(!fraction.isNaN && fraction >= 0 && fraction <= 1, "seed \(seed)")
                #expect(fraction >= last, "seed \(seed): fraction fell from \(last) to \(fraction)")
                last = fraction
            }
            if !anyFailure { #expect(last == 1.0, "seed \(seed)") }
        }
    }
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct ProgressLedgerBulkTests {
    @Test func cancellingUnfinishedInBulkEqualsCancellingEachOne() {
        var rng = SeededGenerator(seed: 11)
        for _ in 0..<200 {
            var one = KeyedLedger()
            for id in 0..<20 {
                one.add(id, expectedDownload: Bool.random(using: &rng) ? Int64.random(in: 1...1_000, using: &rng) : nil)
                one.receive(id, bytes: Int64.random(in: 0...500, using: &rng), at: 0)
                if Int.random(in: 0..<3, using: &rng) == 0 { one.finish(id, .succeeded) }
            }
            var bulk = one
            for id in 0..<20 { one.finish(id, .cancelled) }
            bulk.cancelUnfinished()
            #expect(bulk.snapshot(at: 0) == one.snapshot(at: 0))
            #expect(bulk.isComplete)
        }
    }
}

/// The ledger with its entries kept by id, as a queue keeps them in its request records.
struct KeyedLedger {
    var ledger = ProgressLedger()
    var entries: [Int: ProgressLedger.Entry] = [:]

    var isComplete: Bool { ledger.isComplete }
    func snapshot(at time: Double) -> QueueProgress { ledger.snapshot(at: time) }

    mutating func add(_ id: Int, expectedDownload: Int64? = nil, expectedUpload: Int64 = 0) {
        guard entries[id] == nil else { return }
        let entry = ProgressLedger.Entry(expectedDownload: expectedDownload, expectedUpload: expectedUpload)
        entries[id] = entry
        ledger.add(entry)
    }

    mutating func setExpectedDownload(_ id: Int, _ size: Int64?) { ledger.setExpectedDownload(&entries[id]!, size) }
    mutating func restart(_ id: Int) { ledger.restart(&entries[id]!) }
    mutating func replaceExpectedDownload(_ id: Int, _ size: Int64?) {
        ledger.replaceExpectedDownload(&entries[id]!, size)
    }
    mutating func receive(_ id: Int, bytes: Int64, at time: Double) {
        ledger.receive(&entries[id]!, bytes: bytes, at: time)
    }
    mutating func send(_ id: Int, totalSent: Int64, expected: Int64?, at time: Double) {
        ledger.send(&entries[id]!, totalSent: totalSent, expected: expected, at: time)
    }
    mutating func finish(_ id: Int, _ outcome: ProgressLedger.Outcome) { ledger.finish(&entries[id]!, outcome) }
    mutating func cancelUnfinished() { ledger.cancelUnfinished() }
    mutating func awaitSize(_ id: Int) { ledger.awaitSize(&entries[id]!) }
    mutating func stopAwaitingSize(_ id: Int) { ledger.stopAwaitingSize(&entries[id]!) }
}
