import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

extension Scheduler {
    /// Every job that may start at `now`, in start order.
    mutating func startAll(at now: Double) -> [Job] {
        var started: [Job] = []
        while let job = nextStart(now: now) { started.append(job) }
        return started
    }
}

/// Per-host pacing and holds in the scheduler, on a clock the test drives.
@Suite(.admitted, .timeLimit(.minutes(10))) struct HostPacingTests {
    /// A running scheduler of `limit` slots with ids `0..<count`, id i on host `hostOf(i)`.
    private func scheduler(limit: Int, count: Int, hostOf: (Int) -> Int) -> Scheduler {
        var scheduler = Scheduler(limit: limit)
        for id in 0..<count {
            scheduler.setHost(id, hostOf(id))
            scheduler.enqueue(main(id)[0])
        }
        scheduler.go()
        return scheduler
    }

    /// As ``scheduler(limit:count:hostOf:)`` with accurate progress: a HEAD and a GET for each id, a window of 64, not
    /// started yet (`pacing`: the queue-wide interval).
    private func windowed(limit: Int, count: Int, pacing: Double = 0, hostOf: (Int) -> Int) -> Scheduler {
        var scheduler = Scheduler(limit: limit)
        scheduler.preflightWindow = 64
        scheduler.pacingInterval = pacing
        for id in 0..<count {
            scheduler.setHost(id, hostOf(id))
            scheduler.enqueue(head(id)[0])
            scheduler.enqueue(main(id)[0])
        }
        return scheduler
    }

    @Test func startsToOneHostAreSpacedByTheIntervalWhateverTheSlots() {
        var scheduler = scheduler(limit: 8, count: 5) { _ in 0 }
        scheduler.pacingInterval = 0.5
        #expect(scheduler.startAll(at: 10) == main(0))
        // Seven slots are free, but the host waits for its interval: nothing before 10.5, and the timer is asked
        // for exactly then.
        #expect(scheduler.startAll(at: 10.49) == [])
        #expect(scheduler.nextTimedStart(now: 10.49) == 10.5)
        #expect(scheduler.startAll(at: 10.5) == main(1))
        #expect(scheduler.nextTimedStart(now: 10.5) == 11)
        // Late: one start, and the next interval counts from it (no burst to catch up).
        #expect(scheduler.startAll(at: 13) == main(2))
        #expect(scheduler.startAll(at: 13.4) == [])
        #expect(scheduler.startAll(at: 13.5) == main(3))
        #expect(scheduler.activeCount == 4)
    }

    @Test func aPacedHostHoldsNoSlotAndOtherHostsStartMeanwhile() {
        // Ids 0–3 on host 0, 4–7 on host 1; host 1 is not paced.
        var scheduler = scheduler(limit: 3, count: 8) { $0 < 4 ? 0 : 1 }
        scheduler.setPacing(1, ofHost: 0)
        #expect(scheduler.startAll(at: 0) == main(0, 4, 5))
        scheduler.finish(main(4)[0])
        // Host 0's next job waits for its interval; host 1's takes the slot.
        #expect(scheduler.startAll(at: 0.1) == main(6))
        scheduler.finish(main(5)[0])
        #expect(scheduler.startAll(at: 1) == main(1))
        #expect(scheduler.startAll(at: 1.5) == [])
        scheduler.finish(main(6)[0])
        #expect(scheduler.startAll(at: 1.6) == main(7))
        #expect(scheduler.nextTimedStart(now: 1.6) == nil)  // every slot taken
        scheduler.finish(main(7)[0])
        #expect(scheduler.nextTimedStart(now: 1.7) == 2)
        #expect(scheduler.startAll(at: 2) == main(2))
    }

    @Test func aHoldStopsAHostsStartsUntilItsTimeAndALaterHoldExtendsIt() {
        var scheduler = scheduler(limit: 4, count: 6) { $0 % 2 }
        #expect(scheduler.startAll(at: 0) == main(0, 1, 2, 3))
        let held = scheduler.hold(host: 0, until: 2)
        let shortened = scheduler.hold(host: 0, until: 1.5)
        #expect(held && !shortened)
        for id in 0...3 { scheduler.finish(main(id)[0]) }
        // Host 1 goes on; host 0 waits for its hold.
        #expect(scheduler.startAll(at: 1) == main(5))
        #expect(scheduler.hosts.pendingOfHeldHosts(now: 1) == 1)
        #expect(scheduler.nextTimedStart(now: 1) == 2)
        let extended = scheduler.hold(host: 0, until: 3)
        #expect(extended)
        #expect(scheduler.startAll(at: 2.5) == [])
        #expect(scheduler.startAll(at: 3) == main(4))
        #expect(scheduler.hosts.pendingOfHeldHosts(now: 3) == 0)
    }

    @Test func preflightsCountAsStartsAndWaitForTheHostToo() {
        var scheduler = Scheduler(limit: 4)
        scheduler.pacingInterval = 1
        for id in 0..<2 {
            scheduler.setHost(id, 0)
            scheduler.enqueue(head(id)[0])
            scheduler.enqueue(main(id)[0])
        }
        scheduler.go()
        #expect(scheduler.startAll(at: 0) == head(0))
        scheduler.finish(head(0)[0])
        #expect(scheduler.startAll(at: 0.5) == [])
        #expect(scheduler.startAll(at: 1) == head(1))
        scheduler.finish(head(1)[0])
        #expect(scheduler.startAll(at: 2) == main(0))
        #expect(scheduler.startAll(at: 3) == main(1))
    }

    @Test func randomizedIntervalsStayBetweenHalfAndOneAndAHalfTimesAndVary() {
        var scheduler = scheduler(limit: 1, count: 401) { _ in 0 }
        scheduler.pacingInterval = 2
        scheduler.randomizesPacing = true
        var now = 0.0
        var waits: [Double] = []
        #expect(scheduler.startAll(at: now) == main(0))
        for id in 1...400 {
            scheduler.finish(main(id - 1)[0])
            guard let next = scheduler.nextTimedStart(now: now) else {
                Issue.record("no timed start after job \(id - 1)")
                return
            }
            waits.append(next - now)
            #expect(scheduler.startAll(at: next.nextDown) == [])
            #expect(scheduler.startAll(at: next) == main(id))
            now = next
        }
        #expect(waits.allSatisfy { $0 >= 1 && $0 < 3 })
        #expect(Set(waits).count > 390)
        let mean = waits.reduce(0, +) / Double(waits.count)
        #expect(abs(mean - 2) < 0.1)
    }

    /// With accurate progress, a paced host's HEADs waiting for their time hold no other server's transfer back: the
    /// first window ends once no HEAD runs and none pending may start now. (8 files of server A, paced at 0.5 s, and
    /// one of server B: B's GET goes at 0.5 s, when B's own pacing allows, not after A's eighth HEAD at 3.5 s.)
    @Test func aPacedHostsWaitingHeadsHoldNoOtherServerBack() {
        var scheduler = windowed(limit: 4, count: 9, pacing: 0.5) { $0 < 8 ? 0 : 1 }
        scheduler.go()
        #expect(scheduler.startAll(at: 0) == head(0, 8))
        scheduler.finish(head(0)[0])
        scheduler.finish(head(8)[0])
        // Both hosts wait for their intervals: nothing starts, and the window is over.
        #expect(scheduler.startAll(at: 0.1) == [])
        #expect(scheduler.startAll(at: 0.5) == head(1) + main(8))
        scheduler.finish(head(1)[0])
        // A's own GETs follow their HEADs, paced with them.
        #expect(scheduler.startAll(at: 1) == head(2))
    }

    /// The same for a host held by its server (a 429's `Retry-After`): its waiting HEADs keep no other server's GET
    /// behind the first window.
    @Test func aHeldHostsWaitingHeadsHoldNoOtherServerBack() {
        var scheduler = windowed(limit: 4, count: 7) { $0 < 6 ? 0 : 1 }
        scheduler.go()
        #expect(scheduler.startAll(at: 0) == head(0, 1, 2, 3))
        // Host 0's first answer was a 429 asking for 30 s.
        scheduler.hold(host: 0, until: 30)
        for id in 0..<4 { scheduler.finish(head(id)[0]) }
        #expect(scheduler.startAll(at: 0.1) == head(6))
        scheduler.finish(head(6)[0])
        // Host 0's two HEADs wait for the hold; host 1's GET goes now, not at 30 s.
        #expect(scheduler.startAll(at: 0.2) == main(6))
        #expect(scheduler.startAll(at: 30) == head(4, 5) + main(0))
    }

    /// A host's HEADs may wait for its sampled ones (the preflight policy) while the other hosts' go on; its main
    /// jobs are not held by it.
    @Test func aHostsHeadsWaitForItsSamplesAndOnlyThose() {
        var scheduler = windowed(limit: 8, count: 6) { $0 < 4 ? 0 : 1 }
        scheduler.go()
        scheduler.setPreflightsWait(true, ofHost: 0)
        // Host 0's HEADs wait; host 1's go.
        #expect(scheduler.startAll(at: 0) == head(4, 5))
        scheduler.finish(head(4)[0])
        scheduler.finish(head(5)[0])
        // No HEAD runs and none may start: the window is over, and host 1's GETs go.
        #expect(scheduler.startAll(at: 0) == main(4, 5))
        scheduler.setPreflightsWait(false, ofHost: 0)
        #expect(scheduler.startAll(at: 0) == head(0, 1, 2, 3))
        #expect(scheduler.startAll(at: 0) == [])
    }

    /// `--random-wait` is random: each queue's machine draws its pacing from its own seed (the queue's, random per
    /// queue), apart from the backoff's stream; one seed gives one sequence, as a test needs.
    @Test func eachQueueDrawsItsOwnRandomWaits() {
        func waits(seed: UInt64) -> [Double] {
            var machine = QueueStateMachine(limit: 1, seed: seed)
            return (0..<8).map { _ in Double.random(in: 0..<1, using: &machine.scheduler.jitter) }
        }
        #expect(waits(seed: 1) == waits(seed: 1))
        #expect(waits(seed: 1) != waits(seed: 2))
        let seeds = (0..<64).map { _ in UInt64.random(in: 1...UInt64.max) }
        #expect(Set(seeds.map { waits(seed: $0) }).count == 64)
        // Apart from the backoff's jitter, which the same seed starts.
        var backoff = JitterSource(seed: 1)
        #expect(waits(seed: 1) != (0..<8).map { _ in Double.random(in: 0..<1, using: &backoff) })
    }

    @Test func anExtraConnectionIsPacedAndHeldAsAStart() {
        var scheduler = scheduler(limit: 4, count: 1) { _ in 0 }
        scheduler.pacingInterval = 1
        #expect(scheduler.startAll(at: 0) == main(0))
        let lent = [
            scheduler.lendExtra(host: 0, now: 0.5), scheduler.lendExtra(host: 0, now: 1),
            scheduler.lendExtra(host: 0, now: 1.5),
        ]
        #expect(lent == [false, true, false])
        scheduler.hold(host: 1, until: 10)
        let held = [scheduler.lendExtra(host: 1, now: 5), scheduler.lendExtra(host: 1, now: 10)]
        #expect(held == [false, true])
    }

    @Test func aHostOwnIntervalOverridesTheDefaultAndZeroUnpacesIt() {
        var scheduler = scheduler(limit: 8, count: 6) { $0 % 3 }
        scheduler.pacingInterval = 1
        scheduler.setPacing(0, ofHost: 1)
        scheduler.setPacing(4, ofHost: 2)
        #expect(scheduler.startAll(at: 0) == main(0, 1, 2, 4))
        #expect(scheduler.startAll(at: 1) == main(3))
        #expect(scheduler.startAll(at: 3.9) == [])
        #expect(scheduler.startAll(at: 4) == main(5))
    }

    @Test func pendingCountsFollowAReassignedHost() {
        var scheduler = Scheduler(limit: 2)
        for id in 0..<4 { scheduler.enqueue(main(id)[0]) }
        scheduler.reassignHosts((0..<4).map { (id: $0, host: 0) })
        #expect(scheduler.hosts.pendingCount(ofHost: 0) == 4)
        scheduler.go()
        scheduler.hold(host: 0, until: 5)
        #expect(scheduler.startAll(at: 0) == [])
        #expect(scheduler.hosts.pendingOfHeldHosts(now: 0) == 4)
        scheduler.remove(main(3)[0])
        #expect(scheduler.hosts.pendingCount(ofHost: 0) == 3)
        _ = scheduler.removeAllPending()
        #expect(scheduler.hosts.pendingCount(ofHost: 0) == 0)
    }

    /// 100,000 jobs over 50 hosts, each host paced to one start a second, 8 slots (transfers end at once): every
    /// job starts, each host's starts exactly a second apart, no host starves, and the timer wakes only when a
    /// start is due (every wake-up starts something).
    @Test func aHundredThousandJobsOverFiftyPacedHostsAllStartEvenlySpaced() {
        let count = 100_000
        let hosts = 50
        var scheduler = scheduler(limit: 8, count: count) { $0 % hosts }
        scheduler.pacingInterval = 1
        var lastStart = [Double](repeating: -.infinity, count: hosts)
        var startsPerHost = [Int](repeating: 0, count: hosts)
        var now = 0.0
        var started = 0
        var wakeUps = 0
        var idleWakeUps = 0
        var justWoke = false
        while started < count {
            let jobs = scheduler.startAll(at: now)
            if justWoke, jobs.isEmpty { idleWakeUps += 1 }
            justWoke = false
            for job in jobs {
                let host = job.id % hosts
                if now - lastStart[host] < 1 { Issue.record("host \(host) started again at \(now)") }
                lastStart[host] = now
                startsPerHost[host] += 1
                scheduler.finish(job)
            }
            started += jobs.count
            guard jobs.isEmpty else { continue }
            guard let next = scheduler.nextTimedStart(now: now) else {
                Issue.record("no wake-up with \(count - started) jobs waiting")
                return
            }
            wakeUps += 1
            justWoke = true
            now = next
        }
        #expect(scheduler.hosts.isConsistent)
        #expect(startsPerHost.allSatisfy { $0 == count / hosts })
        #expect(lastStart.allSatisfy { $0 == 1_999 })
        #expect(wakeUps == 1_999)
        #expect(idleWakeUps == 0)
        #expect(scheduler.pendingCount == 0)
    }
}
