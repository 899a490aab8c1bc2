import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Concurrency that finds its own level: how many transfers a queue runs at once to each server when it adapts
/// (``NetworkQueue/adaptiveConcurrency``), within the bounds the user set.
///
/// Each server's level starts at ``initial`` and is judged in *rounds*: a round ends when at least as many
/// transfers ended as the level allowed at once (at least ``minimumSamples``) and at least ``roundSeconds`` passed
/// (``growingRoundSeconds`` while doubling).
/// A round's throughput is the bytes its ended transfers received over its length.
/// - **Growing**: while a doubled level brings at least a fifth more throughput, the level doubles each round (a
///   server with latency and no limit reaches the cap in a few rounds); a smaller gain ends the doubling, a loss
///   goes back to the level before.
/// - **Holding**: the level is tried one higher now and then (after 2 rounds, then 4, 8, 16 while tries fail); a
///   try that brings at least ``minimumGain`` is kept, else the level goes back.
/// - **Overload** (429, 503, a connection reset, a timeout): the level drops at once to three quarters of the
///   transfers in flight when it came, and the server's *ceiling* becomes one below them: the level never tries it
///   again until ``ceilingSeconds`` pass without another overload. No 429 or 503 comes from a level the server
///   already refused.
/// - **Demand**: a round in which the server never had as many transfers in flight as its level proves nothing
///   about a higher one: the level does not grow (as Netflix's limiters never grow while under half used).
///
/// Pure: time is a parameter, every decision a return value.
public struct AdaptiveConcurrency: Sendable, Hashable {
    /// The lowest level; default 1.
    public var minimum: Int
    /// The highest level for one server; default 64. The queue's ``NetworkQueue/maxConcurrentRequestsPerHost`` (when
    /// set) and ``NetworkQueue/maxConcurrentRequestCount`` bound it too.
    public var maximum: Int
    /// The level each server starts at; default 4.
    public var initial: Int
    /// The shortest round, in seconds; default 0.5.
    public var roundSeconds: Double
    /// The shortest round while the level doubles, in seconds; default 0.2: a server with latency and no limit
    /// reaches a level of 64 within about a second.
    public var growingRoundSeconds: Double
    /// The fewest ended transfers a round needs; default 4.
    public var minimumSamples: Int
    /// The throughput a try one level higher must add to be kept, as a fraction; default 0.05 (5%).
    public var minimumGain: Double
    /// How long a ceiling set by an overload holds without another, in seconds; default 300.
    public var ceilingSeconds: Double

    /// Adapts between `minimum` and `maximum`, starting at `initial` (each brought within the others).
    public init(minimum: Int = 1, maximum: Int = 64, initial: Int = 4) {
        self.minimum = max(1, minimum)
        self.maximum = max(self.minimum, maximum)
        self.initial = min(self.maximum, max(self.minimum, initial))
        roundSeconds = 0.5
        growingRoundSeconds = 0.2
        minimumSamples = 4
        minimumGain = 0.05
        ceilingSeconds = 300
    }

    /// What ended a transfer, for a server's level.
    enum Outcome: Equatable {
        /// The transfer ended (well, or with a failure that says nothing of load), having received `bytes`.
        case ended(bytes: Int64)
        /// The server said it is overloaded (429, 503), reset the connection or did not answer in time.
        case overloaded
    }

    /// What a main transfer's end says of its server's load: a connection lost (a reset) or a timeout is an
    /// overload; any other end counts the bytes the request received.
    static func outcome(of ended: RequestMachine.TransferOutcome, received: Int64) -> Outcome {
        if case .failed(let error) = ended, error.code == .networkConnectionLost || error.code == .timedOut {
            return .overloaded
        }
        return .ended(bytes: received)
    }

    /// Why a level changed, for the log.
    enum Reason: Equatable {
        /// `gain`: what the last round gained over the one before (nil: it was the first).
        case doubled(gain: Double?)
        case tried
        case kept(gain: Double)
        case wentBack(gain: Double)
        case overloaded(inFlight: Int)
        case ceilingLifted
    }

    /// One server's level and what it is learning.
    struct Server {
        enum Phase: Equatable {
            /// Doubling while it pays.
            case growing
            /// Holding; a try one higher comes after `wait` more rounds (`patience` is the wait after a failed try).
            case holding(wait: Int, patience: Int)
            /// Trying one higher than `from`.
            case trying(from: Int, patience: Int)
        }

        private(set) var level: Int
        private(set) var phase = Phase.growing
        /// The level and throughput of the round before the change being judged (nil: none yet).
        private var before: (level: Int, throughput: Double)?
        /// The current round: when it began, transfers ended, bytes they received, the most in flight seen.
        private var roundStart: Double
        private var ended = 0
        private var bytes: Int64 = 0
        private var busiest = 0
        /// No level above this (set by an overload), until `ceilingUntil`.
        private(set) var ceiling = Int.max
        private var ceilingUntil = -Double.infinity

        init(level: Int, now: Double) {
            self.level = level
            roundStart = now
        }

        /// Hears how a transfer ended at `now`, with `inFlight` still running to the server (the ended one
        /// included); returns the new level and why, when it changed.
        mutating func record(
            _ outcome: Outcome, inFlight: Int, rules: AdaptiveConcurrency, now: Double
        ) -> (level: Int, reason: Reason)? {
            busiest = max(busiest, inFlight)
            if case .overloaded = outcome { return overloaded(inFlight: inFlight, rules: rules, now: now) }
            guard case .ended(let received) = outcome else { return nil }
            ended += 1
            bytes += max(0, received)
            if ceiling != .max, now >= ceilingUntil {
                ceiling = .max
                if level < rules.maximum { return changed(to: level, .ceilingLifted, now: now) }
            }
            let length = now - roundStart
            let shortest = phase == .growing ? rules.growingRoundSeconds : rules.roundSeconds
            guard ended >= max(rules.minimumSamples, level), length >= shortest, length > 0 else {
                return nil
            }
            return judged(throughput: Double(bytes) / length, rules: rules, now: now)
        }

        /// A round ended with `throughput`: the next level.
        private mutating func judged(
            throughput: Double, rules: AdaptiveConcurrency, now: Double
        ) -> (level: Int, reason: Reason)? {
            let wasBusy = busiest >= level
            let top = min(rules.maximum, ceiling)
            let measured = before.map { $0.throughput > 0 ? throughput / $0.throughput - 1 : 1 }
            let gain = measured ?? 0
            switch phase {
            case .growing:
                if let before, gain < 0 {
                    // The doubling lost: back to the level before, and hold there.
                    phase = .holding(wait: 2, patience: 2)
                    return changed(to: before.level, .wentBack(gain: gain), now: now)
                }
                guard before == nil || gain >= 0.2, wasBusy, level < top else {
                    phase = .holding(wait: 2, patience: 2)
                    return restart(now: now, keeping: throughput)
                }
                let next = min(top, level * 2)
                before = (level, throughput)
                return changed(to: next, .doubled(gain: measured), now: now)
            case .holding(let wait, let patience):
                guard wait <= 1 else {
                    phase = .holding(wait: wait - 1, patience: patience)
                    return restart(now: now, keeping: throughput)
                }
                guard wasBusy, level < top else {
                    phase = .holding(wait: patience, patience: patience)
                    return restart(now: now, keeping: throughput)
                }
                phase = .trying(from: level, patience: patience)
                before = (level, throughput)
                return changed(to: level + 1, .tried, now: now)
            case .trying(let from, let patience):
                if gain >= rules.minimumGain {
                    // Kept: try again soon.
                    phase = .holding(wait: 1, patience: 2)
                    _ = restart(now: now, keeping: throughput)
                    return (level, .kept(gain: gain))
                }
                phase = .holding(wait: min(16, patience * 2), patience: min(16, patience * 2))
                return changed(to: from, .wentBack(gain: gain), now: now)
            }
        }

        private mutating func overloaded(
            inFlight: Int, rules: AdaptiveConcurrency, now: Double
        ) -> (level: Int, reason: Reason)? {
            let refused = max(1, inFlight)
            ceiling = max(rules.minimum, min(ceiling, refused - 1))
            ceilingUntil = now + rules.ceilingSeconds
            let next = max(rules.minimum, min(ceiling, min(level, refused * 3 / 4)))
            phase = .holding(wait: 2, patience: 2)
            guard next != level else { return restart(now: now, keeping: nil) }
            return changed(to: next, .overloaded(inFlight: inFlight), now: now)
        }

        /// A new level from `now`: a new round, judged against the last (set by the caller in `before`).
        private mutating func changed(to next: Int, _ reason: Reason, now: Double) -> (level: Int, reason: Reason)? {
            switch reason {
            case .wentBack, .overloaded, .ceilingLifted: before = nil
            case .doubled, .tried, .kept: break
            }
            level = next
            startRound(at: now)
            return (level, reason)
        }

        /// A new round at the same level; the last round's throughput (when given) is what the next change is
        /// judged against. Nothing to tell.
        private mutating func restart(now: Double, keeping throughput: Double?) -> (level: Int, reason: Reason)? {
            if let throughput { before = (level, throughput) }
            startRound(at: now)
            return nil
        }

        /// A round begins at `now`: nothing ended in it yet.
        private mutating func startRound(at now: Double) {
            roundStart = now
            ended = 0
            bytes = 0
            busiest = 0
        }
    }
}

/// Each server's ``AdaptiveConcurrency/Server``, by the number the queue gives the server, and the queue's own: the
/// transfers at once to all servers together, judged by the same rules on every transfer's end (their total
/// throughput; an overload is a server's, never the queue's), within `queueMaximum`.
struct AdaptiveLevels {
    let rules: AdaptiveConcurrency
    private var servers: [Int: AdaptiveConcurrency.Server] = [:]
    /// The queue's level, and its rules: the servers' with the queue's limit as their maximum.
    private var queue: AdaptiveConcurrency.Server
    private var queueRules: AdaptiveConcurrency

    /// Levels by `rules`, the queue's within `queueMaximum` (the queue's limit) from `now`.
    init(_ rules: AdaptiveConcurrency, queueMaximum: Int = .max, now: Double = 0) {
        self.rules = rules
        queueRules = rules
        queueRules.maximum = max(queueRules.minimum, queueMaximum)
        queueRules.initial = min(queueRules.maximum, rules.initial)
        queue = AdaptiveConcurrency.Server(level: queueRules.initial, now: now)
    }

    /// The queue's level: the transfers at once to all servers together.
    var queueLevel: Int { queue.level }

    /// The queue's limit changed to `maximum`: the queue's level is bounded by it from now on (lowered at once when
    /// above it).
    mutating func setQueueMaximum(_ maximum: Int, now: Double) {
        queueRules.maximum = max(queueRules.minimum, maximum)
        if queueLevel > queueRules.maximum { queue = AdaptiveConcurrency.Server(level: queueRules.maximum, now: now) }
    }

    /// A transfer ended with `outcome` at `now`, `inFlight` running in all (the ended one included): the queue's new
    /// level and why, when it changed. An overload is heard by its server alone.
    mutating func recordForQueue(
        _ outcome: AdaptiveConcurrency.Outcome, inFlight: Int, now: Double
    ) -> (level: Int, reason: AdaptiveConcurrency.Reason)? {
        guard case .ended = outcome else { return nil }
        return queue.record(outcome, inFlight: inFlight, rules: queueRules, now: now)
    }

    /// The level of `host` (the initial one for a server not heard of yet).
    func level(ofHost host: Int) -> Int { servers[host]?.level ?? rules.initial }

    /// A transfer to `host` ended with `outcome` at `now`, `inFlight` running to it then (the ended one included):
    /// the server's new level and why, when it changed. The first end heard of a server starts its first round (an
    /// overload is heeded at once).
    mutating func record(
        _ outcome: AdaptiveConcurrency.Outcome, host: Int, inFlight: Int, now: Double
    ) -> (level: Int, reason: AdaptiveConcurrency.Reason)? {
        if servers[host] == nil {
            servers[host] = AdaptiveConcurrency.Server(level: rules.initial, now: now)
            guard case .overloaded = outcome else { return nil }
        }
        return servers[host]?.record(outcome, inFlight: inFlight, rules: rules, now: now)
    }
}
