import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The engine alone: event sequences in, exact actions and deliveries out. Time is a parameter.
@Suite(.admitted, .timeLimit(.minutes(10))) struct QueueStateMachineTests {
    typealias Driver = MachineDriver

    @Test func nothingStartsBeforeGoThenStartsUpToTheLimitInOrder() {
        var driver = Driver(limit: 2)
        #expect(driver.add(1) == ["timer 0.0"])  // the first change flushes progress at once
        #expect(driver.add(2) == [])
        #expect(driver.add(3) == [])
        #expect(driver.go() == ["publish 1 running", "start 1 main", "publish 2 running", "start 2 main", "deliver"])
        #expect(driver.takeDeliveries() == ["didStart 1", "didStart 2"])
        #expect(driver.go() == [])
    }

    @Test func aFinishedTransferEndsItsRequestAndStartsTheNext() {
        var driver = Driver(limit: 1)
        driver.add(1)
        driver.add(2)
        driver.go()
        // A listener hears the head, so the request shows its response before didReceiveHeaders.
        #expect(driver.send(Driver.head(), to: 1) == ["publish 1 running", "deliver"])
        #expect(driver.send(.data(Data("abc".utf8)), to: 1) == [])
        #expect(
            driver.send(.completed(nil), to: 1) == [
                "publish 1 finished", "publish 2 running", "start 2 main", "deliver",
            ])
        #expect(
            driver.takeDeliveries() == [
                "didStart 1", "headers 1 200", "settle 1 finished", "didFinish 1", "didStart 2",
            ])
        driver.send(Driver.head(), to: 2)
        driver.send(.data(Data("abc".utf8)), to: 2)
        #expect(driver.send(.completed(nil), to: 2) == ["publish 2 finished", "deliver"])
        #expect(
            driver.takeDeliveries() == [
                "headers 2 200", "settle 2 finished", "didFinish 2", "progress 1.0", "queueDidFinish",
            ])
        #expect(driver.machine.requestCount == 0)
    }

    @Test func cancellingAPendingRequestNeverStartsIt() {
        var driver = Driver(limit: 1)
        driver.add(1)
        driver.add(2)
        driver.go()
        _ = driver.takeDeliveries()
        #expect(driver.cancel(2) == ["publish 2 cancelled", "deliver"])
        #expect(driver.takeDeliveries() == ["settle 2 cancelled", "didFail 2 cancelled"])
        #expect(driver.cancel(2) == [])  // twice: nothing
        driver.send(Driver.head(), to: 1)
        driver.send(.data(Data("abc".utf8)), to: 1)
        #expect(driver.send(.completed(nil), to: 1) == ["publish 1 finished", "deliver"])
    }

    @Test func cancellingARunningRequestStopsItsTransferAndDropsItsLateEvents() {
        var driver = Driver(limit: 1)
        driver.add(1)
        driver.go()
        let transfer = driver.transfers[0]
        #expect(driver.cancel(1) == ["cancel 1", "publish 1 cancelled", "deliver"])
        #expect(driver.send(Driver.head(), to: transfer) == [])
        #expect(driver.send(.completed(nil), to: transfer) == [])
        #expect(
            driver.takeDeliveries() == [
                "didStart 1", "settle 1 cancelled", "didFail 1 cancelled", "progress 0.0", "queueDidFinish",
            ])
    }

    @Test func aFailureCancelsTheSiblingsRunningFirstThenWaitingInBulk() {
        var driver = Driver(limit: 2)
        for tag in 1...4 { driver.add(tag) }
        driver.go()
        _ = driver.takeDeliveries()
        #expect(
            driver.send(Driver.head(500), to: 1)
                == [
                    "publish 1 running", "cancel 1", "publish 1 failed", "cancel 2", "publish 2 cancelled",
                    "publishEnd [3, 4] cancelled", "free", "deliver",
                ])
        #expect(
            driver.takeDeliveries() == [
                "headers 1 500", "settle 1 failed", "didFail 1 HTTP status 500 from http://example.test/",
                "settle 2 cancelled", "didFail 2 cancelled", "settleAll [3, 4]", "didFail 3 cancelled",
                "didFail 4 cancelled",
                "progress 0.0", "queueDidFinish",
            ])
    }

    @Test func anIdleTransferTimesOutOnTheClockItIsGiven() {
        var driver = Driver(limit: 1)
        driver.machine.cancelsAllOnFailure = false
        driver.add(1, timeout: 5)
        driver.go()
        #expect(driver.timer(at: 0) == ["deliver", "timer 5.0"])  // the flush, then the deadline
        driver.now = 3
        driver.send(Driver.head(), to: 1)  // activity at 3 moves the deadline to 8
        #expect(driver.timer(at: 5) == ["deliver", "timer 8.0"])
        #expect(driver.machine.requestCount == 1)
        #expect(driver.timer(at: 8) == ["cancel 1", "publish 1 failed", "deliver"])
        #expect(
            driver.takeDeliveries().suffix(4) == [
                "settle 1 failed", "didFail 1 transport -1001", "progress 0.0", "queueDidFinish",
            ])
    }

    @Test func progressIsCoalescedToTheThrottleInterval() {
        var driver = Driver(limit: 1, listening: false)
        driver.add(1)
        // Shown running as it starts, though nobody listens: a caller reading the state after the transport started
        // the transfer finds it running (not at the next flush).
        #expect(driver.go() == ["publish 1 running", "start 1 main"])
        #expect(driver.timer(at: 0) == ["deliver", "timer 60.0"])  // the flush, then the default 60 s deadline
        driver.now = 0.001
        // The next flush may come 1/60 s after the last one, not before.
        #expect(driver.send(Driver.head(200, length: 10), to: 1) == ["timer \(1.0 / 60)"])
        #expect(driver.send(.data(Data(count: 5)), to: 1) == [])
        #expect(driver.send(.data(Data(count: 1)), to: 1) == [])
        // One publication and one progress for all three changes; the deadline's timer is armed again.
        #expect(driver.timer(at: 1.0 / 60) == ["publish 1 running", "deliver", "timer 60.0"])
        #expect(driver.takeDeliveries() == ["progress 0.0", "progress 0.6"])
    }

    @Test func anInvalidRequestFailsAtItsTurnWithoutATransfer() {
        var driver = Driver(limit: 1)
        driver.machine.cancelsAllOnFailure = false
        driver.add(1, url: "ftp://example.test/file")
        driver.add(2)
        #expect(driver.go() == ["publish 1 failed", "publish 2 running", "start 2 main", "deliver"])
        #expect(driver.transfers.map(\.tag) == [2])
    }

    @Test func raisingTheLimitStartsMoreAndLoweringItStartsNothingNew() {
        var driver = Driver(limit: 1)
        for tag in 1...4 { driver.add(tag) }
        driver.go()
        #expect(
            driver.setLimit(3) == ["publish 2 running", "start 2 main", "publish 3 running", "start 3 main", "deliver"])
        #expect(driver.setLimit(1) == [])
        driver.send(Driver.head(), to: 1)
        driver.send(.data(Data("abc".utf8)), to: 1)
        #expect(driver.send(.completed(nil), to: 1) == ["publish 1 finished", "deliver"])  // 2 and 3 in flight, limit 1
    }

    @Test func accurateProgressPreflightsBeforeAnyTransfer() {
        var driver = Driver(limit: 2)
        driver.machine.showsAccurateProgress = true
        driver.add(1)
        driver.add(2)
        #expect(
            driver.go() == [
                "publish 1 preflighting", "start 1 preflight", "publish 2 preflighting", "start 2 preflight",
            ])
        driver.send(Driver.head(200, length: 100), to: 1)
        #expect(driver.send(.completed(nil), to: 1) == ["publish 1 pending"])
        driver.send(Driver.head(200, length: 300), to: 2)
        #expect(
            driver.send(.completed(nil), to: 2)
                == [
                    "publish 2 pending", "publish 1 running", "start 1 main", "publish 2 running", "start 2 main",
                    "deliver",
                ])
        #expect(driver.machine.progress(at: 0).bytesExpectedToReceive == 400)
    }
}
