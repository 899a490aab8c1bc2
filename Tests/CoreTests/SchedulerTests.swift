import TestSupport
import Testing

@testable import NetworkQueue

typealias IntScheduler = Scheduler

extension Scheduler {
    /// Every job that may start now, in start order.
    mutating func startAll() -> [Job] {
        var started: [Job] = []
        while let job = nextStart(now: 0) { started.append(job) }
        return started
    }
}

func main(_ ids: Int...) -> [IntScheduler.Job] { ids.map { .init(id: $0, lane: .main) } }
func head(_ ids: Int...) -> [IntScheduler.Job] { ids.map { .init(id: $0, lane: .preflight) } }

@Suite(.admitted, .timeLimit(.minutes(10))) struct SchedulerTests {
    @Test func newSchedulerIsSuspendedAndStartsNothing() {
        var scheduler = IntScheduler(limit: 2)
        for id in 1...3 { scheduler.enqueue(main(id)[0]) }
        #expect(scheduler.isSuspended)
        #expect(scheduler.startAll().isEmpty)
        #expect(scheduler.pendingCount == 3)
    }

    @Test func aPreflightWindowHoldsTheMainLaneForTheFirstWindowOnlyThenRollsAhead() {
        var scheduler = IntScheduler(limit: 2)
        scheduler.preflightWindow = 2
        for id in 1...5 {
            scheduler.enqueue(head(id)[0])
            scheduler.enqueue(main(id)[0])
        }
        scheduler.go()
        // The first window: two HEADs, and no main job until both are done.
        #expect(scheduler.startAll() == head(1, 2))
        scheduler.finish(head(1)[0])
        #expect(scheduler.startAll().isEmpty)
        scheduler.finish(head(2)[0])
        // Two ahead (done, main not started): the window is full, so the first window is over. 1's main job
        // starts, and HEADs keep their priority within the window: 3's takes the other slot.
        #expect(scheduler.preflightsAhead == 2)
        #expect(scheduler.startAll() == main(1) + head(3))
        #expect(scheduler.preflightsAhead == 2)
        scheduler.finish(main(1)[0])
        #expect(scheduler.startAll() == main(2))
        scheduler.finish(main(2)[0])
        #expect(scheduler.startAll() == head(4))
        scheduler.finish(head(4)[0])
        // 3's HEAD still runs: its main job may not start; 4's may, though it is behind 3. No HEAD holds the
        // main lane any more.
        #expect(scheduler.startAll() == main(4))
        scheduler.remove(head(3)[0])
        #expect(scheduler.preflightsAhead == 0)
        #expect(scheduler.startAll() == head(5))
    }

    @Test func fifoStartsOldestFirstUpToTheLimit() {
        var scheduler = IntScheduler(limit: 2)
        for id in 1...5 { scheduler.enqueue(main(id)[0]) }
        scheduler.go()
        #expect(scheduler.startAll() == main(1, 2))
        scheduler.finish(main(1)[0])
        #expect(scheduler.startAll() == main(3))
        #expect(scheduler.activeCount == 2)
    }

    @Test func lifoStartsNewestPendingFirstAndLeavesRunningAlone() {
        var scheduler = IntScheduler(limit: 1, order: .lifo)
        for id in 1...4 { scheduler.enqueue(main(id)[0]) }
        scheduler.go()
        #expect(scheduler.startAll() == main(4))
        scheduler.enqueue(main(5)[0])
        #expect(scheduler.startAll().isEmpty)
        #expect(scheduler.isActive(main(4)[0]))
        scheduler.finish(main(4)[0])
        #expect(scheduler.startAll() == main(5))
        scheduler.finish(main(5)[0])
        #expect(scheduler.startAll() == main(3))
    }

    @Test func changingOrderTakesEffectAtTheNextStart() {
        var scheduler = IntScheduler(limit: 1)
        for id in 1...4 { scheduler.enqueue(main(id)[0]) }
        scheduler.go()
        #expect(scheduler.startAll() == main(1))
        scheduler.order = .lifo
        scheduler.finish(main(1)[0])
        #expect(scheduler.startAll() == main(4))
    }

    @Test func zeroLimitIsUnlimited() {
        var scheduler = IntScheduler(limit: 0)
        for id in 1...100 { scheduler.enqueue(main(id)[0]) }
        scheduler.go()
        #expect(scheduler.startAll().count == 100)
    }

    @Test func negativeLimitIsClampedToUnlimited() {
        var scheduler = IntScheduler(limit: -3)
        #expect(scheduler.limit == 0)
        scheduler.limit = -1
        #expect(scheduler.limit == 0)
    }

    @Test func raisingTheLimitStartsMoreAtOnce() {
        var scheduler = IntScheduler(limit: 1)
        for id in 1...5 { scheduler.enqueue(main(id)[0]) }
        scheduler.go()
        #expect(scheduler.startAll() == main(1))
        scheduler.limit = 3
        #expect(scheduler.startAll() == main(2, 3))
    }

    @Test func loweringTheLimitLetsRunningJobsFinish() {
        var scheduler = IntScheduler(limit: 3)
        for id in 1...5 { scheduler.enqueue(main(id)[0]) }
        scheduler.go()
        #expect(scheduler.startAll() == main(1, 2, 3))
        scheduler.limit = 1
        #expect(scheduler.activeCount == 3)
        scheduler.finish(main(1)[0])
        #expect(scheduler.startAll().isEmpty)
        scheduler.finish(main(2)[0])
        #expect(scheduler.startAll().isEmpty)
        scheduler.finish(main(3)[0])
        #expect(scheduler.startAll() == main(4))
    }

    @Test func suspendStopsNewStartsOnly() {
        var scheduler = IntScheduler(limit: 2)
        for id in 1...4 { scheduler.enqueue(main(id)[0]) }
        scheduler.go()
        #expect(scheduler.startAll() == main(1, 2))
        scheduler.suspend()
        scheduler.finish(main(1)[0])
        #expect(scheduler.startAll().isEmpty)
        #expect(scheduler.isActive(main(2)[0]))
        scheduler.go()
        #expect(scheduler.startAll() == main(3))
    }

    @Test func removedPendingJobNeverStarts() {
        var scheduler = IntScheduler(limit: 0)
        for id in 1...4 { scheduler.enqueue(main(id)[0]) }
        #expect(scheduler.remove(main(2)[0]) == .wasPending)
        #expect(scheduler.remove(main(2)[0]) == .notFound)
        scheduler.go()
        #expect(scheduler.startAll() == main(1, 3, 4))
    }

    @Test func removingAnActiveJobFreesItsSlot() {
        var scheduler = IntScheduler(limit: 1)
        for id in 1...2 { scheduler.enqueue(main(id)[0]) }
        scheduler.go()
        _ = scheduler.startAll()
        #expect(scheduler.remove(main(1)[0]) == .wasActive)
        #expect(scheduler.startAll() == main(2))
        #expect(scheduler.finish(main(1)[0]) == false)
    }

    @Test func duplicateEnqueueIsRejected() {
        var scheduler = IntScheduler(limit: 1)
        let first = scheduler.enqueue(main(1)[0])
        let second = scheduler.enqueue(main(1)[0])
        #expect(first && !second)
        scheduler.go()
        _ = scheduler.startAll()
        let whileActive = scheduler.enqueue(main(1)[0])
        #expect(!whileActive)
        #expect(scheduler.pendingCount == 0)
    }

    @Test func preflightLaneRunsFirstAndHoldsTheMainLaneUntilDone() {
        var scheduler = IntScheduler(limit: 2)
        for id in 1...3 {
            scheduler.enqueue(main(id)[0])
            scheduler.enqueue(head(id)[0])
        }
        scheduler.go()
        #expect(scheduler.startAll() == head(1, 2))
        scheduler.finish(head(1)[0])
        #expect(scheduler.startAll() == head(3))
        scheduler.finish(head(2)[0])
        // A slot is free, but head 3 is still running: no main job may start yet.
        #expect(scheduler.startAll().isEmpty)
        scheduler.finish(head(3)[0])
        #expect(scheduler.startAll() == main(1, 2))
    }

    @Test func removeAllPendingLeavesActiveJobs() {
        var scheduler = IntScheduler(limit: 1)
        for id in 1...3 { scheduler.enqueue(main(id)[0]) }
        scheduler.enqueue(head(9)[0])
        scheduler.go()
        #expect(scheduler.startAll() == head(9))
        #expect(scheduler.removeAllPending() == main(1, 2, 3))
        #expect(scheduler.pendingCount == 0)
        #expect(scheduler.activeCount == 1)
        scheduler.finish(head(9)[0])
        #expect(scheduler.isIdle)
    }

    @Test func cancellingOneHundredThousandPendingJobsLeavesNothing() {
        var scheduler = IntScheduler(limit: 4)
        for id in 0..<100_000 { scheduler.enqueue(main(id)[0]) }
        // Remove in an order that defeats a naive array (middle outwards).
        for id in stride(from: 50_000, to: 100_000, by: 1) { #expect(scheduler.remove(main(id)[0]) == .wasPending) }
        for id in stride(from: 49_999, through: 0, by: -1) { _ = scheduler.remove(main(id)[0]) }
        #expect(scheduler.pendingCount == 0)
        scheduler.go()
        #expect(scheduler.startAll().isEmpty)
    }
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct PendingListTests {
    @Test func popsFromBothEndsSkippingRemoved() {
        var list = PendingList()
        for id in 1...6 { list.append(id) }
        list.remove(1)
        list.remove(6)
        list.remove(3)
        #expect(list.popFirst() == 2)
        #expect(list.popLast() == 5)
        #expect(list.popFirst() == 4)
        #expect(list.popFirst() == nil)
        #expect(list.popLast() == nil)
        #expect(list.isEmpty)
    }

    @Test func compactionKeepsOrderAndRemoval() {
        var list = PendingList()
        for id in 0..<5_000 { list.append(id) }
        for expected in 0..<3_000 { #expect(list.popFirst() == expected) }
        let removed = list.remove(4_000)
        #expect(removed)
        #expect(list.count == 1_999)
        #expect(list.popLast() == 4_999)
        #expect(list.popFirst() == 3_000)
        #expect(list.removeAll().count == 1_997)
    }
}
