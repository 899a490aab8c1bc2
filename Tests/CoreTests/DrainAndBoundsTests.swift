import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The engine's bounds (any limit, any announced count) and a drain that never ends, or reports what its
/// sources did, before `go()`.
@Suite(.admitted, .timeLimit(.minutes(10))) struct DrainAndBoundsTests {
    typealias Driver = MachineDriver

    // MARK: Limits

    @Test(arguments: [Int.max, Int.max / 8 + 1, 1 << 40, 0, -1])
    func anyLimitRunsWithinTheCeilingWithoutOverflow(limit: Int) {
        var driver = Driver(limit: limit, ceiling: 6)
        for tag in 1...10 { driver.add(tag) }
        driver.setLimit(limit)
        driver.go()
        #expect(driver.machine.limit == max(0, limit))
        #expect(driver.transfers.count == 6)
        #expect(driver.machine.readAhead == 4 * 64)
        #expect(QueueStateMachine.preflightWindow(limit: limit) == (limit > 512 ? 4_096 : 64))
    }

    @Test func aLimitBelowTheCeilingIsTheLimit() {
        var driver = Driver(limit: 3, ceiling: 6)
        for tag in 1...10 { driver.add(tag) }
        driver.go()
        #expect(driver.transfers.count == 3)
        driver.setLimit(100)
        #expect(driver.transfers.count == 6)
        driver.setLimit(0)
        #expect(driver.transfers.count == 6)
        #expect(driver.machine.limit == 0)
    }

    /// Unlimited, a queue starts whatever it reads: the look-ahead counts the running requests, so a source is
    /// read no further than that while none ends.
    @Test func anUnlimitedQueueReadsASourceOnlyAsFarAsTheLookAhead() {
        var driver = Driver(limit: 0, ceiling: 4_096)
        driver.go()
        let id = driver.openSource()
        var nextTag = 1
        while let grant = driver.grants[id], grant > 0 {
            driver.read(Array(nextTag..<nextTag + grant), from: id)
            nextTag += grant
        }
        let lookAhead = driver.machine.readAhead
        #expect(lookAhead == 16_384)
        #expect(nextTag - 1 == lookAhead)
        #expect(driver.transfers.count == 4_096)
        // One request ends: one more may be read, after a batch's worth of room (a reader wakes per batch).
        driver.send(Driver.head(), to: 1)
        driver.send(.data(Data("abc".utf8)), to: 1)
        driver.send(.completed(nil), to: 1)
        #expect(driver.machine.progress(at: 0).finishedRequestCount == 1)
        #expect(driver.grants[id] == 0)
        #expect(driver.grantsOverLookAhead == 0)
    }

    // MARK: Announced counts

    @Test func announcementsPastIntMaxAreClampedNotATrap() {
        var driver = Driver(limit: 4)
        driver.openSource(announcing: Int.max / 2 + 1)
        driver.openSource(announcing: Int.max / 2 + 1)
        driver.openSource(announcing: Int.max)
        let progress = driver.machine.progress(at: 0)
        #expect(progress.estimatedRequestCount == ProgressLedger.mostAnnounced)
        #expect(progress.fractionCompleted == 0)
    }

    // MARK: No end before go()

    @Test func aSourceThatEndsBeforeGoEndsTheDrainOnlyAtGo() {
        var driver = Driver(limit: 4)
        let id = driver.openSource()
        driver.read([], from: id, ending: true)
        #expect(driver.machine.sources.isEmpty)
        #expect(driver.takeDeliveries().filter { $0 == "queueDidFinish" }.isEmpty)
        driver.go()
        #expect(driver.takeDeliveries() == ["progress 1.0", "queueDidFinish"])
    }

    @Test func aSourceThatFailsBeforeGoIsHeardAtGoThenItsCancellations() {
        var driver = Driver(limit: 4)
        let id = driver.openSource()
        driver.read([1, 2], from: id, failing: true)
        let before = driver.takeDeliveries()
        #expect(!before.contains { $0.hasPrefix("sourceDidFail") || $0 == "queueDidFinish" || $0.hasPrefix("didFail") })
        driver.go()
        let after = driver.takeDeliveries().filter { !$0.hasPrefix("progress") && !$0.hasPrefix("settle") }
        #expect(after.count == 4)
        #expect(after.first?.hasPrefix("sourceDidFail") == true)
        #expect(Array(after.dropFirst()) == ["didFail 1 cancelled", "didFail 2 cancelled", "queueDidFinish"])
        #expect(driver.transfers.isEmpty)
    }

    /// What the caller does is heard at once: a cancelAll that empties a queue never started ends its drain then,
    /// with the failure its source had before.
    @Test func aCancelAllThatEmptiesAQueueNeverStartedEndsItsDrainAtOnce() {
        var driver = Driver(limit: 4)
        driver.add(1)
        let id = driver.openSource()
        driver.read([2], from: id, failing: true)
        _ = driver.takeDeliveries()
        driver.cancelAll()
        let heard = driver.takeDeliveries().filter { !$0.hasPrefix("progress") && !$0.hasPrefix("settle") }
        #expect(heard.count == 4)
        #expect(Array(heard.prefix(2)) == ["didFail 1 cancelled", "didFail 2 cancelled"])
        #expect(heard.dropFirst(2).first?.hasPrefix("sourceDidFail") == true)
        #expect(heard.last == "queueDidFinish")
        #expect(driver.go() == [])
        #expect(driver.takeDeliveries().isEmpty)
    }

    @Test func cancellingTheLastRequestOfAQueueNeverStartedEndsItsDrain() {
        var driver = Driver(limit: 4)
        driver.add(1)
        driver.cancel(1)
        #expect(driver.takeDeliveries().suffix(1) == ["queueDidFinish"])
    }

    @Test func aDrainBegunOnASuspendedQueueWaitsForGoAgain() {
        var driver = Driver(limit: 4)
        driver.go()
        driver.machine.suspend()
        let id = driver.openSource()
        driver.read([], from: id, ending: true)
        #expect(!driver.takeDeliveries().contains("queueDidFinish"))
        driver.go()
        #expect(driver.takeDeliveries().contains("queueDidFinish"))
    }

    @Test func aDrainBegunOnARunningQueueEndsAsItEmpties() {
        var driver = Driver(limit: 4)
        driver.go()
        let id = driver.openSource()
        driver.read([], from: id, ending: true)
        #expect(driver.takeDeliveries() == ["progress 1.0", "queueDidFinish"])
    }

    // MARK: Simple progress

    /// 400 downloads of the same size, sizes learned from each response's head: the fraction is what is done
    /// of the whole batch, not of the few sizes known so far.
    @Test func simpleProgressFollowsTheBatchNotTheFirstSizes() {
        var driver = Driver(limit: 4)
        for tag in 1...400 { driver.add(tag) }
        driver.go()
        for tag in 1...16 {
            driver.send(Driver.head(length: 1_000), to: tag)
            driver.send(.data(Data(count: 1_000)), to: tag)
            driver.send(.completed(nil), to: tag)
        }
        let progress = driver.machine.progress(at: driver.now)
        #expect(progress.finishedRequestCount == 16)
        #expect(abs(progress.fractionCompleted - 16.0 / 400) < 1e-9)
        #expect(progress.estimatedBytesExpectedToReceive == 400_000)
    }
}
