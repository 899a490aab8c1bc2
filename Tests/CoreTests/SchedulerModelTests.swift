import TestSupport
import Testing

@testable import NetworkQueue

/// A deliberately naive scheduler: plain arrays, linear searches. Obviously right, not fast.
struct ReferenceScheduler {
    var pending: [IntScheduler.Job] = []
    var active: [IntScheduler.Job] = []
    var limit: Int
    var order: SchedulingOrder = .fifo
    var isSuspended = true
    var perHostLimit = 0
    var hosts: [Int: Int] = [:]
    var priorities: [Int: Int] = [:]

    func priority(_ job: IntScheduler.Job) -> Int { priorities[job.id] ?? 0 }

    /// A new priority for `id`: its pending jobs move behind everything (within their new priority).
    mutating func setPriority(_ id: Int, _ priority: Int) {
        guard self.priority(IntScheduler.Job(id: id, lane: .main)) != priority else { return }
        priorities[id] = priority
        let moved = pending.filter { $0.id == id }
        pending.removeAll { $0.id == id }
        pending += moved
    }

    /// The pending jobs of `lane`, highest priority first, each priority in order of arrival.
    func byPriority(_ lane: IntScheduler.Lane) -> [IntScheduler.Job] {
        let jobs = pending.filter { $0.lane == lane }
        return Set(jobs.map(priority)).sorted(by: >).flatMap { level in jobs.filter { priority($0) == level } }
    }

    /// True when the job's host (if any) is under the per-host limit.
    func hostAllows(_ job: IntScheduler.Job) -> Bool {
        guard perHostLimit > 0, let host = hosts[job.id] else { return true }
        return active.filter { hosts[$0.id] == host }.count < perHostLimit
    }

    mutating func nextStart() -> IntScheduler.Job? {
        if isSuspended || (limit > 0 && active.count >= limit) { return nil }
        let heads = pending.filter { $0.lane == .preflight }
        var candidates: [IntScheduler.Job]
        if !heads.isEmpty {
            candidates = heads
        } else if active.contains(where: { $0.lane == .preflight }) {
            return nil
        } else {
            candidates = pending
        }
        candidates = candidates.filter(hostAllows)
        let top = candidates.map(priority).max()
        candidates = candidates.filter { priority($0) == top }
        guard let job = order == .fifo ? candidates.first : candidates.last else { return nil }
        pending.removeAll { $0 == job }
        active.append(job)
        return job
    }
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct SchedulerModelTests {
    /// Ten thousand sequences by default (see ``TestEnvironment/modelSeeds``).
    @Test func tenThousandRandomSequencesMatchTheReferenceModel() async {
        let seeds = TestEnvironment.modelSeeds
        var totalStarts = 0
        await forEachSeed(seeds) { totalStarts += compareOneSequence(seed: $0) }
        // The sequences must actually exercise starts, not just pass vacuously.
        #expect(totalStarts > 5 * seeds)
    }

    /// Runs one random sequence on both schedulers; returns the number of starts compared.
    private func compareOneSequence(seed: UInt64) -> Int {
        var rng = SeededGenerator(seed: seed)
        let limit = Int.random(in: 0...4, using: &rng)
        var real = IntScheduler(limit: limit)
        var model = ReferenceScheduler(limit: limit)
        var nextID = 0
        var starts = 0
        for step in 0..<Int.random(in: 10...60, using: &rng) {
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<35:
                let job = IntScheduler.Job(
                    id: nextID, lane: Int.random(in: 0..<5, using: &rng) == 0 ? .preflight : .main)
                nextID += 1
                // Most jobs keep the default priority; some get one of four others.
                if Int.random(in: 0..<3, using: &rng) == 0 {
                    let priority = Int.random(in: -2...2, using: &rng) * 4
                    real.setPriority(job.id, priority)
                    model.priorities[job.id] = priority
                }
                // Two hosts, or none (never held back by a host limit).
                let host = [nil, 0, 1].randomElement(using: &rng)!
                real.setHost(job.id, host)
                model.hosts[job.id] = host
                real.enqueue(job)
                model.pending.append(job)
            case 35..<55:
                if let job = model.active.randomElement(using: &rng) {
                    let finished = real.finish(job)
                    #expect(finished)
                    model.active.removeAll { $0 == job }
                }
            case 55..<65:
                let candidates = model.pending + model.active
                if let job = candidates.randomElement(using: &rng) {
                    let expected: IntScheduler.Removal = model.active.contains(job) ? .wasActive : .wasPending
                    #expect(real.remove(job) == expected, "seed \(seed) step \(step)")
                    model.pending.removeAll { $0 == job }
                    model.active.removeAll { $0 == job }
                }
            case 65..<75:
                real.go()
                model.isSuspended = false
            case 75..<80:
                real.suspend()
                model.isSuspended = true
            case 80..<86:
                let newLimit = Int.random(in: 0...5, using: &rng)
                real.limit = newLimit
                model.limit = newLimit
            case 86..<88:
                // A new priority (of five) for a known id, pending or not.
                if nextID > 0 {
                    let id = Int.random(in: 0..<nextID, using: &rng)
                    let priority = Int.random(in: -2...2, using: &rng) * 4
                    real.setPriority(id, priority)
                    model.setPriority(id, priority)
                }
            case 88..<91:
                let newLimit = Int.random(in: 0...3, using: &rng)
                real.perHostLimit = newLimit
                model.perHostLimit = newLimit
            case 91..<94:
                let order: SchedulingOrder = Bool.random(using: &rng) ? .fifo : .lifo
                real.order = order
                model.order = order
            default:
                let removed = real.removeAllPending()
                let expected = model.byPriority(.preflight) + model.byPriority(.main)
                #expect(removed == expected, "seed \(seed) step \(step)")
                model.pending = []
            }
            let activeBefore = real.activeCount
            var started: [IntScheduler.Job] = []
            while let job = real.nextStart(now: 0) {
                started.append(job)
                // Never above the limit: no start may push past it.
                #expect(real.limit == 0 || real.activeCount <= real.limit, "seed \(seed) step \(step)")
                if real.perHostLimit > 0, let host = real.host(of: job.id) {
                    #expect(real.activeCount(ofHost: host) <= real.perHostLimit, "seed \(seed) step \(step)")
                }
            }
            var expected: [IntScheduler.Job] = []
            while let job = model.nextStart() { expected.append(job) }
            #expect(started == expected, "seed \(seed) step \(step)")
            #expect(real.activeCount == model.active.count && real.pendingCount == model.pending.count)
            #expect(real.hosts.isConsistent, "seed \(seed) step \(step)")
            #expect(started.isEmpty || activeBefore < max(real.limit, 1) || real.limit == 0)
            starts += started.count
        }
        return starts
    }
}
