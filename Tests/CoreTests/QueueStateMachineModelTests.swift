import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Ten thousand seeded random sequences of adds, cancels, pauses and resumes, priority and limit changes,
/// suspends, transfer events
/// (successes, errors, bad statuses, cut bodies) and timer firings, under random deadlines, lowest speeds and
/// rate caps, checked after every step against the invariants every user relies on; and, with a deadline, a
/// batch whose servers stop answering still ends.
@Suite(.admitted, .timeLimit(.minutes(10))) struct QueueStateMachineModelTests {
    /// Ten thousand sequences by default (see ``TestEnvironment/modelSeeds``).
    @Test func tenThousandRandomSequencesKeepTheInvariants() async {
        await forEachSeed(TestEnvironment.modelSeeds) { check(seed: $0) }
    }

    private func check(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        var driver = MachineDriver(limit: Int.random(in: 0...4, using: &rng))
        driver.machine.cancelsAllOnFailure = Bool.random(using: &rng)
        driver.machine.showsAccurateProgress = Int.random(in: 0..<4, using: &rng) == 0
        // Retries (some asking an async closure) and adapt hooks, answered by the sequence below.
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: driver.machine.retryPolicy = .never
        case 1: driver.machine.retryPolicy = RetryPolicy(maximumAttempts: 3, decide: { _, _, _ in .useDefault })
        default:
            driver.machine.retryPolicy = RetryPolicy(
                maximumAttempts: Int.random(in: 2...4, using: &rng),
                backoff: .init(initialDelay: Double.random(in: 0...2, using: &rng)))
        }
        if Int.random(in: 0..<4, using: &rng) == 0 { driver.machine.adapter = { $0 } }
        // Duplicates and per-host limits: half the requests go to a few URLs on two hosts.
        driver.machine.duplicatePolicy = [.allow, .coalesce, .cancelEarlier].randomElement(using: &rng)!
        _ = driver.machine.setPerHostLimit(Int.random(in: 0...2, using: &rng), now: 0)
        let sharedURLs = Bool.random(using: &rng)
        // Time limits on half the seeds: a deadline, a lowest speed (the bodies below move 1-3 bytes a piece),
        // sometimes under the queue's cap.
        var deadline: Double?
        if Bool.random(using: &rng) {
            deadline = Bool.random(using: &rng) ? Double.random(in: 1...12, using: &rng) : nil
            let lowestSpeed =
                Bool.random(using: &rng)
                ? LowestSpeed(
                    bytesPerSecond: Int64.random(in: 1...4, using: &rng), over: Double.random(in: 0.5...4, using: &rng))
                : nil
            driver.machine.timeLimits = TimeLimits(deadline: deadline ?? .infinity, lowestSpeed: lowestSpeed)
            if Int.random(in: 0..<3, using: &rng) == 0 { driver.machine.rateCap = Int.random(in: 1...8, using: &rng) }
        }
        var limit = driver.machine.limit
        var nextTag = 1
        var added: Set<Int> = []
        var lastFraction = 0.0
        var drainHadFailure = false
        var inDrain = false
        // A drain ends only once it was started: it began on a running queue, or go() came since.
        var isSuspended = true
        var drainStarted = false
        var ends: [Int: Int] = [:]

        for _ in 0..<Int.random(in: 10...40, using: &rng) {
            let roll = Int.random(in: 0..<100, using: &rng)
            switch roll {
            case 0..<25:
                if !inDrain { (inDrain, lastFraction, drainHadFailure, drainStarted) = (true, 0, false, !isSuspended) }
                let url =
                    sharedURLs && Bool.random(using: &rng)
                    ? "http://h\(Int.random(in: 0..<2, using: &rng)).test/\(Int.random(in: 0..<2, using: &rng))" : nil
                driver.add(nextTag, timeout: [60, 1, 2.5].randomElement(using: &rng)!, url: url)
                added.insert(nextTag)
                nextTag += 1
            case 25..<32:
                driver.go()
                (isSuspended, drainStarted) = (false, true)
            case 32..<35:
                driver.machine.suspend()
                isSuspended = true
            case 35..<40:
                limit = Int.random(in: 0...4, using: &rng)
                driver.setLimit(limit)
            case 40..<45:
                if let tag = added.randomElement(using: &rng) { driver.cancel(tag) }
            case 45..<47: driver.cancelAll()
            case 47..<55: driver.timer(at: driver.now + Double.random(in: 0...3, using: &rng))
            case 55..<62:
                if !driver.adapts.isEmpty, Bool.random(using: &rng) {
                    let request = URLRequest(url: URL(string: "http://example.test/adapted")!)
                    driver.answerAdapt(
                        Int.random(in: 0..<8, using: &rng) == 0
                            ? .failure(.init(URLError(.userAuthenticationRequired))) : .success(request))
                } else if !driver.decisions.isEmpty {
                    let answers: [RetryPolicy.Decision] = [.useDefault, .retry, .retryAfter(0.5), .doNotRetry]
                    driver.answerDecision(answers.randomElement(using: &rng)!)
                }
            case 62..<66:
                if let tag = added.randomElement(using: &rng) { driver.pause(tag) }
            case 66..<70:
                if let tag = added.randomElement(using: &rng) { driver.resume(tag) }
            case 70..<72:
                if let tag = added.randomElement(using: &rng) {
                    driver.setPriority(Int.random(in: -1...1, using: &rng), of: tag)
                }
            case 72..<74:
                // A streamed source, sometimes announcing how many it will give.
                if !inDrain { (inDrain, lastFraction, drainHadFailure, drainStarted) = (true, 0, false, !isSuspended) }
                if driver.grants.count < 2 { driver.openSource(announcing: [0, 0, 5].randomElement(using: &rng)!) }
            case 74..<80:
                guard let (id, grant) = driver.grants.filter({ $0.value > 0 }).randomElement(using: &rng) else { break }
                let given = Int.random(in: 0...min(grant, 3), using: &rng)
                let tags = Array(nextTag..<nextTag + given)
                nextTag += given
                added.formUnion(tags)
                let ending = Int.random(in: 0..<4, using: &rng)
                driver.read(tags, from: id, ending: ending == 0 || given < min(grant, 3), failing: ending == 1)
            default:
                guard let transfer = driver.transfers.randomElement(using: &rng) else { break }
                driver.now += Double.random(in: 0...0.2, using: &rng)
                driver.send(randomEvent(for: transfer, using: &rng), to: transfer)
            }
            let deliveries = driver.takeDeliveries()
            let progress = driver.machine.progress(at: driver.now)
            let fraction = progress.fractionCompleted
            if fraction.isNaN || fraction < 0 || fraction > 1 { Issue.record("seed \(seed): fraction \(fraction)") }
            if fraction < lastFraction {
                Issue.record("seed \(seed): fraction fell from \(lastFraction) to \(fraction)")
            }
            if !progress.isTotalFinal, fraction >= 1, lastFraction < 1 {
                Issue.record("seed \(seed): reached 1.0 while a source was open")
            }
            if driver.grantsOverLookAhead > 0 {
                Issue.record("seed \(seed): a source was granted reads past the look-ahead")
            }
            lastFraction = fraction
            if limit > 0 {
                // Counted by the driver from start, cancel and completion: never a start at or over the limit.
                if !driver.inFlightAtStarts.allSatisfy({ $0 < limit }) { Issue.record("seed \(seed): over the limit") }
            }
            driver.inFlightAtStarts = []
            for line in deliveries {
                let words = line.split(separator: " ")
                if words[0] == "didFail" { drainHadFailure = true }
                if line == "queueDidFinish" {
                    inDrain = false
                    if !drainHadFailure, lastFraction != 1 {
                        Issue.record("seed \(seed): a drain of successes ended at \(lastFraction)")
                    }
                }
                tally(words, &ends, seed: seed)
            }
            // queueDidFinish exactly when a started drain's queue empties, once; never before go().
            let isEmpty = driver.machine.requestCount == 0 && driver.machine.sources.isEmpty
            if inDrain ? isEmpty && drainStarted : !isEmpty {
                Issue.record("seed \(seed): queueDidFinish missing or early")
            }
        }
        if let deadline {
            // The servers stop answering: with a deadline every request still ends, without a cancel.
            for tag in added { driver.resume(tag) }
            driver.go()
            for _ in 0..<(4 * added.count + 8) where driver.machine.requestCount > 0 {
                driver.timer(at: driver.now + deadline + 0.5)
            }
            #expect(driver.machine.requestCount == 0, "seed \(seed): a request outlived its deadline")
            for line in driver.takeDeliveries() { tally(line.split(separator: " "), &ends, seed: seed) }
        }
        // Cancel what is left: every request then has exactly one end (and a drain never started ends at go()).
        driver.cancelAll()
        driver.go()
        for line in driver.takeDeliveries() { tally(line.split(separator: " "), &ends, seed: seed) }
        #expect(ends.keys.sorted() == added.sorted(), "seed \(seed): requests without an end")
        #expect(ends.values.allSatisfy { $0 == 1 }, "seed \(seed): a request ended twice")
        #expect(driver.machine.requestCount == 0)
        #expect(driver.machine.sources.isEmpty, "seed \(seed): a source still open after cancelAll")
    }

    private func tally(_ words: [Substring], _ ends: inout [Int: Int], seed: UInt64) {
        guard words[0] == "didFinish" || words[0] == "didFail", let tag = Int(words[1]) else { return }
        ends[tag, default: 0] += 1
    }

    private func randomEvent(for transfer: MachineDriver.Transfer, using rng: inout SeededGenerator) -> TransferEvent {
        switch Int.random(in: 0..<10, using: &rng) {
        case 0..<3:
            MachineDriver.head(
                [200, 200, 200, 500].randomElement(using: &rng)!, length: [3, nil].randomElement(using: &rng)!)
        case 3..<6: .data(Data(count: Int.random(in: 1...3, using: &rng)))
        case 6..<9: .completed(nil)
        default: .completed(URLError([.networkConnectionLost, .timedOut].randomElement(using: &rng)!))
        }
    }
}
