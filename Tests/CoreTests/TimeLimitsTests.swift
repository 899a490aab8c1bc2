import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request's deadline and lowest speed (``TimeLimits``), decided by the engine on the time the test gives it:
/// every figure below is exact, and no test sleeps. The limit is a guard against a hang, as the integration suites':
/// the big batch's 10,000 requests take 2.4 s alone under the thread sanitizer, and a clean-clone run, its thread
/// shared with seven other suites, took them past two minutes.
@Suite(.admitted, .timeLimit(.minutes(10))) struct TimeLimitsTests {
    typealias Driver = MachineDriver

    /// The lines of the deliveries that say how requests ended or were retried.
    private func ends(_ driver: inout Driver) -> [String] {
        driver.takeDeliveries().filter {
            $0.hasPrefix("didFail") || $0.hasPrefix("didFinish") || $0.hasPrefix("willRetry")
        }
    }

    private func data(_ count: Int) -> TransferEvent { .data(Data(count: count)) }

    /// A driver of one request (tag 1) started at 0 under `limits` (`retryDelay`: up to 5 attempts, that far
    /// apart; nil: none).
    private func running(_ limits: TimeLimits, retryDelay: Double? = nil) -> Driver {
        // Every retry waits `retryDelay`, a lost connection's first too: the deadline is what these tests judge.
        let policy = retryDelay.map {
            RetryPolicy(
                maximumAttempts: 5, backoff: .init(initialDelay: $0, jitter: false),
                retriesFirstLostConnectionAtOnce: false)
        }
        var driver = Driver(limit: 1, retryPolicy: policy ?? .never)
        driver.machine.timeLimits = limits
        driver.add(1)
        driver.go()
        return driver
    }

    /// ``running(_:retryDelay:)`` under a lowest speed of `bytesPerSecond` over `seconds`.
    private func running(lowest bytesPerSecond: Int64, over seconds: Double) -> Driver {
        running(TimeLimits(lowestSpeed: LowestSpeed(bytesPerSecond: bytesPerSecond, over: seconds)))
    }

    // MARK: Lowest speed

    @Test func aTricklingTransferEndsTooSlowAtItsWindowsEndAndIsRetried() {
        var driver = Driver(
            limit: 1, retryPolicy: RetryPolicy(maximumAttempts: 2, backoff: .init(initialDelay: 1, jitter: false)))
        driver.machine.timeLimits = TimeLimits(lowestSpeed: LowestSpeed(bytesPerSecond: 100, over: 10))
        driver.add(1)
        driver.go()
        // The first check is at the end of the first window (10 s), before the idle timeout (60 s).
        #expect(driver.timer(at: 0) == ["deliver", "timer 10.0"])
        driver.now = 1
        driver.send(Driver.head(200, length: 1_000), to: 1)
        for second in [2.0, 4, 6, 8] {
            driver.now = second
            driver.send(data(5), to: 1)
        }
        _ = driver.takeDeliveries()
        // 20 bytes in 10 s: 2 B/s, below 100 B/s. The transfer stops (after the progress flush due then); the
        // retry policy sends it again a second later.
        #expect(
            driver.timer(at: 10) == [
                "publish 1 running", "cancel 1", "publish 1 waitingToRetry", "deliver", "timer 10.016666666666667",
            ])
        #expect(ends(&driver) == ["willRetry 1 1.0"])
        _ = driver.timer(at: 10.5)
        #expect(driver.timer(at: 11) == ["publish 1 pending", "publish 1 running", "start 1 main", "timer 21.0"])
        // The second attempt keeps the speed in its first window (1,000 bytes in 10 s), not in its second.
        driver.now = 12
        driver.send(Driver.head(200, length: 5_000), to: 1)
        driver.send(data(1_000), to: 1)
        #expect(driver.timer(at: 21) == ["publish 1 running", "deliver", "timer 31.0"])
        driver.now = 25
        driver.send(data(999), to: 1)
        #expect(driver.timer(at: 31).prefix(3) == ["publish 1 running", "cancel 1", "publish 1 failed"])
        #expect(
            ends(&driver) == [
                "didFail 1 transfer from http://example.test/1 too slow: 99 B/s, below 100 B/s over 10 s"
            ])
    }

    @Test func aTransferThatKeepsTheSpeedIsNeverJudgedSlowAndFinishes() {
        var driver = running(lowest: 100, over: 2)
        driver.send(Driver.head(200, length: 1_000), to: 1)
        for second in 1...5 {
            driver.now = Double(second)
            driver.send(data(200), to: 1)
            // Exactly the speed over each window: 200 bytes in 2 s is 100 B/s, not below it.
            _ = driver.timer(at: Double(second) + 0.5)
        }
        driver.send(.completed(nil), to: 1)
        #expect(ends(&driver) == ["didFinish 1"])
    }

    @Test func uploadedBytesCountAsMovedBytes() {
        var driver = running(lowest: 100, over: 10)
        driver.now = 5
        driver.send(.sent(totalBytesSent: 1_000, totalBytesExpectedToSend: 2_000), to: 1)
        #expect(driver.timer(at: 10) == ["publish 1 running", "deliver", "timer 20.0"])
        #expect(driver.machine.requestCount == 1)
    }

    @Test func theQueuesOwnCapIsNotASlowServer() {
        for capped in [true, false] {
            var driver = Driver(limit: 2)
            driver.machine.cancelsAllOnFailure = false
            driver.machine.rateCap = capped ? 1_000 : nil
            driver.machine.timeLimits = TimeLimits(lowestSpeed: LowestSpeed(bytesPerSecond: 600, over: 10))
            driver.add(1)
            driver.add(2)
            driver.go()
            driver.send(Driver.head(200, length: 100_000), to: 1)
            driver.send(Driver.head(200, length: 100_000), to: 2)
            // The cap's share: 400 B/s each, 800 B/s in all (at least three quarters of the cap).
            driver.now = 5
            driver.send(data(4_000), to: 1)
            driver.send(data(4_000), to: 2)
            _ = driver.timer(at: 10)
            #expect(driver.machine.requestCount == (capped ? 2 : 0), "capped: \(capped)")
            _ = driver.takeDeliveries()
            guard capped else { continue }
            // The queue no longer fills its cap (300 B/s in all): the slow transfers are slow.
            driver.now = 15
            driver.send(data(1_500), to: 1)
            driver.send(data(1_500), to: 2)
            _ = driver.timer(at: 20)
            #expect(
                ends(&driver) == [
                    "didFail 1 transfer from http://example.test/1 too slow: 150 B/s, below 600 B/s over 10 s",
                    "didFail 2 transfer from http://example.test/2 too slow: 150 B/s, below 600 B/s over 10 s",
                ])
        }
    }

    @Test func aPausedRequestIsNotSlowAndItsResumedAttemptHasNewWindows() {
        var driver = running(lowest: 100, over: 10)
        driver.now = 2
        driver.pause(1)
        // Paused for 100 s, far past its window: nothing to judge.
        _ = driver.timer(at: 102)
        #expect(driver.machine.requestCount == 1)
        driver.resume(1)
        _ = driver.takeDeliveries()
        // The resumed attempt's first window ends 10 s after it started.
        #expect(driver.timer(at: 111.9).isEmpty)
        _ = driver.timer(at: 112)
        #expect(
            ends(&driver) == ["didFail 1 transfer from http://example.test/1 too slow: 0 B/s, below 100 B/s over 10 s"])
    }

    // MARK: Deadline

    @Test func theDeadlineCountsRetriesAndWaitsButNotPausedTime() {
        var driver = running(TimeLimits(deadline: 30), retryDelay: 5)
        #expect(driver.timer(at: 0) == ["deliver", "timer 30.0"])
        driver.now = 4
        driver.send(.completed(URLError(.networkConnectionLost)), to: 1)
        #expect(
            driver.timer(at: 9) == ["publish 1 pending", "publish 1 running", "start 1 main", "deliver", "timer 30.0"])
        #expect(ends(&driver) == ["willRetry 1 5.0"])
        driver.now = 12
        driver.pause(1)
        // Paused, its clock stopped with 18 s left: the deadline's time (30) passes and nothing happens, nor at the
        // idle times of the two attempts (60, 69).
        #expect(driver.timer(at: 30) == ["deliver", "timer 60.0"])
        #expect(driver.timer(at: 60) == ["timer 69.0"])
        #expect(driver.timer(at: 69).isEmpty)
        #expect(driver.machine.requestCount == 1)
        // Resumed at 112: its deadline is now 130.
        driver.now = 112
        #expect(
            driver.resume(1) == ["publish 1 pending", "publish 1 running", "start 1 main", "deliver", "timer 130.0"])
        driver.now = 113
        driver.send(Driver.head(200, length: 1_000), to: 1)
        driver.now = 129
        driver.send(data(10), to: 1)
        #expect(driver.timer(at: 129.99) == ["publish 1 running", "deliver", "timer 130.0"])
        #expect(driver.timer(at: 130).prefix(2) == ["cancel 1", "publish 1 failed"])
        #expect(ends(&driver) == ["didFail 1 no end for http://example.test/1 within its deadline of 30 s"])
    }

    @Test func aPassedDeadlineIsFinalAndARetryThatCouldNotStartBeforeItIsNotWaitedFor() {
        var driver = running(TimeLimits(deadline: 10), retryDelay: 20)
        driver.now = 1
        // The retry would start at 21, past the deadline (10): the attempt's own failure ends the request now.
        driver.send(.completed(URLError(.networkConnectionLost)), to: 1)
        #expect(ends(&driver) == ["didFail 1 transport -1005"])
        #expect(driver.machine.requestCount == 0)
    }

    @Test func aHEADPreflightHasADeadlineOfItsOwnAndTheTransferStartsItsClockAgain() {
        var driver = Driver(limit: 2)
        driver.machine.cancelsAllOnFailure = false
        driver.machine.showsAccurateProgress = true
        driver.machine.timeLimits = TimeLimits(deadline: 5)
        driver.add(1)
        driver.add(2)
        driver.go()
        _ = driver.takeDeliveries()
        // Request 1's HEAD ends at 4; request 2's HEAD hangs until its deadline (5), and then request 1's GET
        // starts (the HEADs of the window come first), its clock with it: its deadline is at 10.
        driver.now = 4
        driver.send(Driver.head(200, length: 3), to: 1)
        driver.send(.completed(nil), to: 1)
        #expect(driver.timer(at: 5).contains("start 1 main"))
        #expect(ends(&driver) == ["didFail 2 no end for http://example.test/2 within its deadline of 5 s"])
        #expect(driver.machine.requestCount == 1)
        _ = driver.timer(at: 9.99)
        #expect(driver.machine.requestCount == 1)
        _ = driver.timer(at: 10)
        #expect(ends(&driver) == ["didFail 1 no end for http://example.test/1 within its deadline of 5 s"])
    }

    @Test func outOfRangeLimitsMakeTheRequestInvalid() {
        let badOnes = [
            TimeLimits(deadline: 0), TimeLimits(deadline: -1), TimeLimits(connect: 0), TimeLimits(connect: -2),
            TimeLimits(lowestSpeed: LowestSpeed(bytesPerSecond: 0, over: 1)),
            TimeLimits(lowestSpeed: LowestSpeed(bytesPerSecond: 10, over: 0)),
            TimeLimits(lowestSpeed: LowestSpeed(bytesPerSecond: 10, over: .infinity)),
            TimeLimits(lowestSpeed: LowestSpeed(bytesPerSecond: 10, over: .nan)),
        ]
        for limits in badOnes {
            let request = NetworkRequest(url: URL(string: "http://example.test/a")!, timeLimits: limits)
            guard case .invalidTimeLimits(let reported) = request.invalidReason else {
                Issue.record("\(limits) accepted")
                continue
            }
            #expect(String(describing: reported) == String(describing: limits))
        }
        // No deadline at all: infinity, NaN, or the no-timeout threshold and above.
        for deadline in [TimeInterval.infinity, .nan, NetworkRequest.noTimeoutThreshold] {
            #expect(
                TimeLimits(deadline: deadline).problem == nil && TimeLimits(deadline: deadline).deadlineSeconds == nil)
            // The same for the connect: the transport's own bound.
            #expect(TimeLimits(connect: deadline).problem == nil && TimeLimits(connect: deadline).connectSeconds == nil)
        }
        #expect(TimeLimits().connectSeconds == 20 && TimeLimits(connect: 0.25).connectSeconds == 0.25)
        // The queue's own limits fail each request that uses them, at its start.
        var driver = Driver(limit: 1)
        driver.machine.timeLimits = TimeLimits(deadline: -1)
        driver.add(1)
        driver.go()
        #expect(ends(&driver) == ["didFail 1 invalid request: time limits: deadline -1.0 is not positive"])
    }

    @Test func deadlinesOfABigBatchKeepFewTimerEntries() async {
        var driver = Driver(limit: 8)
        driver.machine.timeLimits = TimeLimits(deadline: 1_000)
        for tag in 1...TestEnvironment.bigBatch { driver.add(tag) }
        driver.go()
        var most = 0
        var ended = 0
        while let transfer = driver.transfers.first {
            driver.now += 0.001
            driver.send(Driver.head(200, length: 0), to: transfer)
            driver.send(.completed(nil), to: transfer)
            most = max(most, driver.machine.timer.deadlines.count)
            _ = driver.takeDeliveries()
            ended += 1
            // A long synchronous loop would hold one of the cooperative pool's threads (see forEachSeed).
            if ended % 256 == 0 { await Task.yield() }
        }
        #expect(ended == TestEnvironment.bigBatch)
        #expect(driver.machine.requestCount == 0)
        // Entries of ended requests are dropped in bulk once they double: never many more than run at once.
        #expect(most <= 2 * 8 + 64 + 1)
        #expect(driver.machine.timer.deadlines.count == 0)
    }

    // MARK: The window alone

    @Test func aWindowIsJudgedAtItsEndOnItsAverageAndTheCapsShare() {
        let limit = LowestSpeed(bytesPerSecond: 100, over: 10)
        var window = SpeedWindow(start: 0, moved: 50, queueReceived: 0)
        #expect(window.judge(limit, moved: 50, queueReceived: 0, rateCap: nil, now: 9.99) == .due(10))
        #expect(window.judge(limit, moved: 1_050, queueReceived: 0, rateCap: nil, now: 10) == .kept(nextDue: 20))
        #expect(window == SpeedWindow(start: 10, moved: 1_050, queueReceived: 0))
        #expect(
            window.judge(limit, moved: 2_049, queueReceived: 0, rateCap: nil, now: 20) == .tooSlow(bytesPerSecond: 99))
        // A late check averages over the whole time since the window began.
        #expect(
            window.judge(limit, moved: 2_049, queueReceived: 0, rateCap: nil, now: 30) == .tooSlow(bytesPerSecond: 49))
        // Three quarters of a 1,000 B/s cap over 20 s is 15,000 bytes.
        #expect(
            window.judge(limit, moved: 1_050, queueReceived: 15_000, rateCap: 1_000, now: 30) == .kept(nextDue: 40))
        #expect(
            window.judge(limit, moved: 1_050, queueReceived: 22_499, rateCap: 1_000, now: 50)
                == .tooSlow(bytesPerSecond: 0))
    }
}
