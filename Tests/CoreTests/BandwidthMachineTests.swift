import Foundation
import Testing

@testable import NetworkQueue

/// The queue-wide rate cap in the engine alone: each running transfer gets an equal share, given again
/// whenever the running set or the cap changes.
@Suite struct BandwidthMachineTests {
    typealias Driver = MachineDriver

    @Test func theCapIsSharedEquallyAndSharedAgainAsTransfersEnd() {
        var driver = Driver(limit: 3)
        _ = driver.machine.setMaximumBytesPerSecond(900, now: 0)
        for tag in 1...4 { driver.add(tag) }
        let started = driver.go()
        #expect(started.filter { $0.hasPrefix("limitRate") } == ["limitRate 3 300"])
        driver.send(Driver.head(), to: 1)
        driver.send(.data(Data("abc".utf8)), to: 1)
        // One ends, the fourth starts: still three, same share: only the new one is told.
        #expect(driver.send(.completed(nil), to: 1).filter { $0.hasPrefix("limitRate") } == ["limitRate 1 300"])
        #expect(driver.cancel(2).filter { $0.hasPrefix("limitRate") } == ["limitRate 2 450"])
        // Changed while running; then removed: the running transfers are uncapped.
        #expect(driver.apply(driver.machine.setMaximumBytesPerSecond(2000, now: 0)).filter { $0.hasPrefix("limitRate") } == ["limitRate 2 1000"])
        #expect(driver.apply(driver.machine.setMaximumBytesPerSecond(nil, now: 0)).filter { $0.hasPrefix("limitRate") } == ["limitRate 2 none"])
        #expect(driver.cancel(3).filter { $0.hasPrefix("limitRate") } == [])
    }

    @Test func aCapSetWhileTransfersRunReachesThem() {
        var driver = Driver(limit: 2)
        driver.add(1)
        driver.add(2)
        driver.go()
        #expect(driver.apply(driver.machine.setMaximumBytesPerSecond(0, now: 0)).filter { $0.hasPrefix("limitRate") } == [])
        #expect(driver.apply(driver.machine.setMaximumBytesPerSecond(1001, now: 0)).filter { $0.hasPrefix("limitRate") } == ["limitRate 2 500"])
    }
}
