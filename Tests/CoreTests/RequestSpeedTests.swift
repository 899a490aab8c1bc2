import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request's own speed and time left, from the same meter as the queue's, with time passed in.
@Suite(.admitted, .timeLimit(.minutes(10))) struct RequestSpeedTests {
    @Test func aDownloadsSpeedAndTimeLeftFollowItsBytes() {
        var driver = MachineDriver(limit: 1)
        driver.add(1)
        driver.go()
        driver.send(MachineDriver.head(length: 1_000), to: 1)
        let slot = driver.slots[1]!
        #expect(driver.machine.table[slot].downloadProgress.throughput == nil)
        driver.now = 1
        driver.send(.data(Data(count: 250)), to: 1)
        var progress = driver.machine.table[slot].downloadProgress
        #expect(progress.completedBytes == 250)
        #expect(progress.throughput == 250)
        #expect(progress.estimatedTimeRemaining == 3)
        driver.now = 2
        driver.send(.data(Data(count: 250)), to: 1)
        progress = driver.machine.table[slot].downloadProgress
        #expect(progress.throughput == 250)
        #expect(progress.estimatedTimeRemaining == 2)
    }

    @Test func anUnknownSizeHasASpeedButNoTimeLeft() {
        var driver = MachineDriver(limit: 1)
        driver.add(1)
        driver.go()
        driver.send(MachineDriver.head(length: nil), to: 1)
        driver.now = 0.5
        driver.send(.data(Data(count: 100)), to: 1)
        let progress = driver.machine.table[driver.slots[1]!].downloadProgress
        #expect(progress.throughput == 200)
        #expect(progress.estimatedTimeRemaining == nil)
    }

    @Test func timeRemainingIsZeroWhenDoneAndUnknownWithoutARate() {
        #expect(ThroughputMeter.timeRemaining(0, at: nil) == 0)
        #expect(ThroughputMeter.timeRemaining(10, at: nil) == nil)
        #expect(ThroughputMeter.timeRemaining(10, at: 0) == nil)
        #expect(ThroughputMeter.timeRemaining(10, at: 5) == 2)
        #expect(ThroughputMeter.timeRemaining(nil, at: 5) == nil)
    }
}

extension RequestRecord {
    /// The download's progress as the request's status would show it now.
    fileprivate var downloadProgress: TransferProgress {
        status().download
    }
}
