import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An engine pass's notices, applied under one acquisition of the lock (``QueueStateMachine/notices(_:now:)``), end as
/// the same notices applied one by one do: same statuses, same deliveries for each request; only the event's end (what
/// starts next, the timer, the delivery) comes once, after the last.
@Suite(.admitted, .timeLimit(.minutes(10))) struct TransferNoticeTests {
    /// Two requests running of four (limit 2): each gets a head, two bodies and its end. `batched`: as one pass.
    private static func run(batched: Bool) -> (lines: [String], deliveries: [String], driver: MachineDriver) {
        var driver = MachineDriver(limit: 2)
        for tag in 1...4 { driver.add(tag) }
        driver.go()
        _ = driver.takeDeliveries()
        let running = driver.transfers
        var notices: [TransferNotice] = []
        for transfer in running {
            let (slot, token) = (transfer.start.slot, transfer.start.token)
            notices.append(TransferNotice(slot: slot, token: token, kind: .event(MachineDriver.head(length: 3))))
            notices.append(TransferNotice(slot: slot, token: token, kind: .event(.data(Data([1, 2])))))
            notices.append(TransferNotice(slot: slot, token: token, kind: .event(.data(Data([3])))))
            notices.append(TransferNotice(slot: slot, token: token, kind: .event(.completed(nil))))
        }
        // A notice of a transfer that is no longer current (an old token) is dropped, batched or not.
        notices.append(TransferNotice(slot: running[0].start.slot, token: 999, kind: .body(5)))
        var lines: [String] = []
        if batched {
            lines = driver.apply(driver.machine.notices(&notices, now: 1))
        } else {
            for notice in notices { lines += driver.apply(driver.machine.notice(notice, now: 1)) }
        }
        return (lines, driver.takeDeliveries(), driver)
    }

    @Test func aPassOfNoticesEndsAsTheSameNoticesOneByOne() {
        let single = Self.run(batched: false)
        let pass = Self.run(batched: true)
        // One by one, each completion starts the next request at once and each event asks for a delivery; in a pass,
        // the starts come after the last notice, and one delivery is asked for.
        #expect(
            single.lines == [
                "publish 1 running", "deliver", "publish 1 finished", "publish 3 running", "start 3 main", "deliver",
                "publish 2 running", "deliver", "publish 2 finished", "publish 4 running", "start 4 main", "deliver",
            ])
        #expect(
            pass.lines == [
                "publish 1 running", "publish 1 finished", "publish 2 running", "publish 2 finished",
                "publish 3 running", "start 3 main", "publish 4 running", "start 4 main", "deliver",
            ])
        // The same deliveries, each request's in the same order; only the next requests' starts come after the pass.
        #expect(
            single.deliveries == [
                "headers 1 200", "settle 1 finished", "didFinish 1", "didStart 3", "headers 2 200", "settle 2 finished",
                "didFinish 2", "didStart 4",
            ])
        #expect(
            pass.deliveries == [
                "headers 1 200", "settle 1 finished", "didFinish 1", "headers 2 200", "settle 2 finished",
                "didFinish 2", "didStart 3", "didStart 4",
            ])
        for tag in 1...4 {
            #expect(pass.driver.requests[tag]!.state == single.driver.requests[tag]!.state, "request \(tag)")
        }
    }

    @Test func aPassLeavesItsListHoldingNothingAndReusable() {
        var driver = MachineDriver(limit: 1)
        driver.add(1)
        driver.go()
        let start = driver.transfers[0].start
        var notices = [
            TransferNotice(slot: start.slot, token: start.token, kind: .event(MachineDriver.head(length: 4))),
            TransferNotice(slot: start.slot, token: start.token, kind: .event(.data(Data([7, 8])))),
        ]
        let capacity = notices.capacity
        _ = driver.apply(driver.machine.notices(&notices, now: 1))
        // Every notice was moved out: what is left is the payload-free placeholder, and the list keeps its room.
        #expect(notices.count == 2)
        #expect(notices.allSatisfy { if case .body(0) = $0.kind { true } else { false } })
        notices.removeAll(keepingCapacity: true)
        #expect(notices.capacity == capacity)
        #expect(driver.machine.table[start.slot].progress.received == 2)
    }
}
