import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

/// ``AdaptiveConcurrency`` alone, against simulated servers (time driven by the test): one whose throughput saturates
/// at 4 transfers and falls beyond, one that answers 503 above 6 in flight, one with 100 ms of latency and no limit
/// (issue 75). Each settles within one of the best level, does at least 90% of the best fixed level's work, and sees
/// no 503 once settled.
@Suite(.admitted, .timeLimit(.minutes(10))) struct AdaptiveConcurrencyTests {
    /// A server model: what a transfer started with `inFlight` running (itself included) does.
    struct Model {
        /// The server's total rate with `n` transfers running, bytes per second (infinity: only latency bounds it).
        var capacity: (Int) -> Double = { _ in .infinity }
        /// The least time a transfer takes.
        var latency = 0.0
        /// Refuses (503 after 5 ms) a transfer started above this many in flight.
        var refusesAbove = Int.max
        var size: Double = 100_000
    }

    struct Transfer {
        var remaining: Double
        let endsNoSoonerThan: Double
        let refused: Bool
    }

    /// Runs `model` for `seconds` in steps of 5 ms with infinite demand, at the adaptive level (`fixed`: that level
    /// instead); returns the bytes received, the levels over time and the times of refusals.
    static func simulate(
        _ model: Model, seconds: Double, rules: AdaptiveConcurrency, fixed: Int? = nil
    ) -> (bytes: Double, levels: [(time: Double, level: Int)], refusals: [Double]) {
        var levels = AdaptiveLevels(rules)
        var level = fixed ?? levels.level(ofHost: 0)
        var running: [Transfer] = []
        var history = [(time: 0.0, level: level)]
        var refusals: [Double] = []
        var bytes = 0.0
        let step = 0.005
        var now = 0.0
        while now < seconds {
            while running.count < level {
                let refused = running.count + 1 > model.refusesAbove
                running.append(
                    Transfer(
                        remaining: refused ? 0 : model.size,
                        endsNoSoonerThan: now + (refused ? 0.005 : model.latency), refused: refused))
            }
            now += step
            let rate = model.capacity(running.count) / Double(max(1, running.count))
            var index = 0
            while index < running.count {
                running[index].remaining -= rate * step
                let transfer = running[index]
                guard transfer.remaining <= 0, now >= transfer.endsNoSoonerThan else {
                    index += 1
                    continue
                }
                let inFlight = running.count
                running.remove(at: index)
                if transfer.refused { refusals.append(now) } else { bytes += model.size }
                guard fixed == nil else { continue }
                let outcome: AdaptiveConcurrency.Outcome =
                    transfer.refused ? .overloaded : .ended(bytes: Int64(model.size))
                if let change = levels.record(outcome, host: 0, inFlight: inFlight, now: now) {
                    level = change.level
                    history.append((now, level))
                }
            }
        }
        return (bytes, history, refusals)
    }

    /// The levels the adaptive run held over its second half.
    static func settled(_ levels: [(time: Double, level: Int)], after time: Double) -> Set<Int> {
        var held: Set<Int> = [levels.last(where: { $0.time <= time })?.level ?? levels[0].level]
        for entry in levels where entry.time > time { held.insert(entry.level) }
        return held
    }

    /// The best fixed level's bytes over `seconds`, among `levels`.
    static func bestFixed(_ model: Model, seconds: Double, levels: [Int]) -> (level: Int, bytes: Double) {
        levels.map { ($0, simulate(model, seconds: seconds, rules: AdaptiveConcurrency(), fixed: $0).bytes) }
            .max { $0.1 < $1.1 }!
    }

    @Test func aServerThatSaturatesAtFourSettlesAtFour() {
        // 40 MB/s with up to 4, then 8% less for each transfer beyond (a disk that seeks).
        let model = Model(capacity: { n in 40e6 * (n <= 4 ? Double(n) / 4 : max(0.2, 1 - 0.08 * Double(n - 4))) })
        let rules = AdaptiveConcurrency(maximum: 32)
        let run = Self.simulate(model, seconds: 60, rules: rules)
        let best = Self.bestFixed(model, seconds: 60, levels: Array(1...8) + [16, 32])
        #expect(best.level == 4)
        #expect(Self.settled(run.levels, after: 30).isSubset(of: [3, 4, 5]), "\(run.levels)")
        #expect(run.bytes >= 0.9 * best.bytes, "\(run.bytes) vs \(best.bytes)")
    }

    @Test func aServerThatRefusesAboveSixSettlesAtSixOrBelowAndIsNotRefusedOnceSettled() {
        let model = Model(latency: 0.05, refusesAbove: 6)
        let rules = AdaptiveConcurrency(maximum: 32)
        let run = Self.simulate(model, seconds: 60, rules: rules)
        let best = Self.bestFixed(model, seconds: 60, levels: Array(1...10) + [16, 32])
        #expect(best.level == 6)
        #expect(Self.settled(run.levels, after: 30).isSubset(of: [5, 6]), "\(run.levels)")
        #expect(run.refusals.filter { $0 > 10 }.isEmpty, "\(run.refusals)")
        #expect(run.bytes >= 0.9 * best.bytes, "\(run.bytes) vs \(best.bytes)")
    }

    @Test func aServerWithLatencyAndNoLimitReachesTheCap() {
        let model = Model(latency: 0.1)
        for cap in [16, 64] {
            let rules = AdaptiveConcurrency(maximum: cap)
            let run = Self.simulate(model, seconds: 60, rules: rules)
            let best = Self.bestFixed(model, seconds: 60, levels: [1, 4, cap / 2, cap - 1, cap])
            #expect(best.level == cap)
            #expect(Self.settled(run.levels, after: 10) == [cap], "\(run.levels)")
            #expect(run.bytes >= 0.9 * best.bytes, "\(run.bytes) vs \(best.bytes)")
        }
    }

    @Test func theQueuesLevelHearsEndsNotOverloadsAndKeepsWithinTheQueuesLimit() {
        var levels = AdaptiveLevels(AdaptiveConcurrency(maximum: 8), queueMaximum: 12, now: 0)
        #expect(levels.queueLevel == 4)
        // A server's overload lowers that server, never the queue.
        #expect(levels.recordForQueue(.overloaded, inFlight: 4, now: 0.1) == nil)
        #expect(levels.record(.overloaded, host: 0, inFlight: 4, now: 0.1)?.level == 3)
        #expect(levels.queueLevel == 4)
        // Busy rounds whose throughput doubles: 4 → 8 → 12 (the queue's limit, above a server's 8).
        var now = 0.1
        var rate = 1_000.0
        for _ in 0..<3 {
            let level = levels.queueLevel
            for _ in 0..<level {
                now += 0.3 / Double(level)
                _ = levels.recordForQueue(.ended(bytes: Int64(rate * 0.3 / Double(level))), inFlight: level, now: now)
            }
            rate *= 2
        }
        #expect(levels.queueLevel == 12)
        // The queue's limit lowered: its level with it.
        levels.setQueueMaximum(6, now: now)
        #expect(levels.queueLevel == 6)
    }

    @Test func aLevelNeverLeavesItsBoundsAndIdleRoundsDoNotGrowIt() {
        let rules = AdaptiveConcurrency(minimum: 2, maximum: 6, initial: 9)
        #expect(rules.initial == 6)
        var server = AdaptiveConcurrency.Server(level: 4, now: 0)
        // Rounds with one transfer in flight at a time: the level of 4 was never used, so it never grows.
        var now = 0.0
        for _ in 0..<200 {
            now += 0.2
            #expect(server.record(.ended(bytes: 1000), inFlight: 1, rules: rules, now: now) == nil)
        }
        #expect(server.level == 4)
        // Overloads in a row: down to the minimum, never below.
        for _ in 0..<10 { _ = server.record(.overloaded, inFlight: 1, rules: rules, now: now) }
        #expect(server.level == 2)
    }
}
