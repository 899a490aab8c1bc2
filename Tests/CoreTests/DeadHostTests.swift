import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A server that fails its connects several times in a row is down (DESIGN semantics 24), decided by the engine
/// alone, time as a parameter: its waiting requests end at once, a later one ends at once only while a probe failed
/// lately and otherwise probes the server alone (half-open), the probes' spacing doubling up to the cool-down, and the
/// other servers go on.
@Suite(.admitted, .timeLimit(.minutes(10))) struct DeadHostTests {
    typealias Driver = MachineDriver

    static let unanswered = TransferEvent.completed(URLError(.cannotConnectToHost))

    /// Requests 1–8 to a.test and 9–10 to b.test, two slots, a failure failing no other, started at 0: 1 and 2 run.
    static func twoServers(_ deadHosts: DeadHosts = DeadHosts()) -> Driver {
        var driver = Driver(limit: 2)
        driver.machine.cancelsAllOnFailure = false
        driver.machine.deadHosts = deadHosts
        driver.machine.outbox.isLogging = true
        for tag in 1...8 { driver.add(tag, url: "http://a.test/\(tag)") }
        for tag in 9...10 { driver.add(tag, url: "http://b.test/\(tag)") }
        driver.go()
        return driver
    }

    /// The request tags that failed, with how: `transport` (their own connect) or `down` (their server's).
    static func failures(_ driver: inout Driver) -> [String] {
        driver.takeDeliveries().compactMap { line in
            guard line.hasPrefix("didFail ") else { return nil }
            let tag = line.split(separator: " ")[1]
            return line.contains("is down: ") ? "\(tag) down" : line.contains("transport") ? "\(tag) transport" : line
        }
    }

    @Test func threeRoundsOfFailedConnectsEndTheServersRequestsAndTheOthersGoOn() {
        var driver = Self.twoServers()
        #expect(driver.transfers.map(\.tag) == [1, 2])
        // 1 and 2 began together: their failures are one round, counted once. 3 and 4 take their slots at 1.
        driver.now = 1
        driver.send(Self.unanswered, to: 1)
        driver.send(Self.unanswered, to: 2)
        #expect(driver.transfers.map(\.tag) == [3, 4])
        // The second round; 5 and 6 begin at 2.
        driver.now = 2
        driver.send(Self.unanswered, to: 3)
        driver.send(Self.unanswered, to: 4)
        #expect(Self.failures(&driver) == ["1 transport", "2 transport", "3 transport", "4 transport"])
        #expect(driver.transfers.map(\.tag) == [5, 6])
        // The third: the server is down. 5 ends with it, and 7 and 8 at their turn, sending nothing; 6, connecting,
        // goes on, and ends with it when it fails too. b.test's requests take the slots.
        driver.now = 3
        driver.send(Self.unanswered, to: 5)
        #expect(Self.failures(&driver) == ["5 down", "7 down", "8 down"])
        #expect(driver.transfers.map(\.tag) == [6, 9])
        driver.send(Self.unanswered, to: 6)
        #expect(Self.failures(&driver) == ["6 down"])
        for tag in [9, 10] { HostBackoffMachineTests.succeed(tag, from: "http://b.test", &driver) }
        #expect(driver.machine.requestCount == 0)
    }

    @Test func aBurstOfFailuresOfTransfersInFlightTogetherCountsOnce() {
        var driver = Self.twoServers(DeadHosts(failuresInARow: 2))
        driver.now = 1
        // Both began at 0 and fail at once (a broken connection, a loaded server's moment): one failure.
        driver.send(Self.unanswered, to: 1)
        driver.send(Self.unanswered, to: 2)
        #expect(Self.failures(&driver) == ["1 transport", "2 transport"])
        // Their successors are answered: the count starts over.
        HostBackoffMachineTests.succeed(3, from: "http://a.test", &driver)
        HostBackoffMachineTests.succeed(4, from: "http://a.test", &driver)
        #expect(driver.transfers.map(\.tag) == [5, 6])
    }

    /// Two rounds fail on a.test (down at 1 with failures in a row 2, no retry: its window is nothing; its requests end
    /// at once until 2, a second after, and the first after that probes it): 1–8 end, b.test's two finish.
    static func downAt1() -> Driver {
        var driver = Self.twoServers(DeadHosts(failuresInARow: 2, coolDown: 30))
        driver.now = 1
        driver.send(Self.unanswered, to: 1)
        driver.send(Self.unanswered, to: 2)
        driver.send(Self.unanswered, to: 3)
        #expect(
            Self.failures(&driver) == ["1 transport", "2 transport", "3 down", "5 down", "6 down", "7 down", "8 down"])
        driver.send(Self.unanswered, to: 4)
        for tag in [9, 10] { HostBackoffMachineTests.succeed(tag, from: "http://b.test", &driver) }
        #expect(Self.failures(&driver) == ["4 down"])
        return driver
    }

    @Test func aRequestEndsAtOnceOnlyWhileAProbeFailedLatelyAndALaterOneProbesAlone() {
        var driver = Self.downAt1()
        #expect(driver.machine.requestCount == 0)
        // Within a second of the verdict (the retry policy's first backoff, 1 s), a request's turn ends it at once.
        driver.now = 1.9
        driver.add(11, url: "http://a.test/11")
        #expect(Self.failures(&driver) == ["11 down"])
        #expect(driver.transfers.isEmpty)
        // Any time later (the old cool-down would have ended it until 31), the first goes alone, as the probe; the
        // next waits for its verdict, taking no slot.
        driver.now = 2
        driver.add(12, url: "http://a.test/12")
        driver.add(13, url: "http://a.test/13")
        #expect(driver.transfers.map(\.tag) == [12])
        #expect(driver.machine.progress(at: driver.now).heldRequestCount == 1)
        // It is answered: the server is back (after 1 s down), and 13 goes.
        HostBackoffMachineTests.succeed(12, from: "http://a.test", &driver)
        #expect(driver.transfers.map(\.tag) == [13])
        HostBackoffMachineTests.succeed(13, from: "http://a.test", &driver)
        #expect(Self.failures(&driver) == [])
        #expect(driver.machine.requestCount == 0)
    }

    /// ``downAt1()``, then at 31 requests 11 and 12 to a.test: 11 probes alone.
    static func probing() -> Driver {
        var driver = Self.downAt1()
        driver.now = 31
        driver.add(11, url: "http://a.test/11")
        driver.add(12, url: "http://a.test/12")
        return driver
    }

    @Test func aFailedProbeEndsTheWaitingRequestsAndTheNextProbeComesLater() {
        var driver = Self.probing()
        #expect(driver.transfers.map(\.tag) == [11])
        driver.now = 33
        driver.send(Self.unanswered, to: 11)
        #expect(Self.failures(&driver) == ["11 down", "12 down"])
        // A second of quiet: a request ends at once.
        driver.now = 33.5
        driver.add(13, url: "http://a.test/13")
        #expect(Self.failures(&driver) == ["13 down"])
        // Then the spacing has doubled: the next probe is due at 35, and a request at 34 waits for it, taking no slot.
        driver.now = 34
        driver.add(14, url: "http://a.test/14")
        #expect(driver.transfers.isEmpty && Self.failures(&driver) == [])
        #expect(driver.machine.progress(at: driver.now).heldRequestCount == 1)
        driver.timer(at: 35)
        #expect(driver.transfers.map(\.tag) == [14])
        // It fails too: 14 ends, and the spacing doubles again (quiet to 37, the next probe at 36 + 4 = 40).
        driver.now = 36
        driver.send(Self.unanswered, to: 14)
        #expect(Self.failures(&driver) == ["14 down"])
        driver.now = 38
        driver.add(15, url: "http://a.test/15")
        driver.add(16, url: "http://a.test/16")
        #expect(driver.transfers.isEmpty)
        driver.timer(at: 40)
        #expect(driver.transfers.map(\.tag) == [15])
        // The server is back: both go, and the log says how long it was down.
        HostBackoffMachineTests.succeed(15, from: "http://a.test", &driver)
        let back = driver.takeDeliveries().filter { $0.hasPrefix("server ") }
        #expect(back == ["server back http://a.test:80 after 39.0 s, 0 failures"], "\(back)")
        #expect(driver.transfers.map(\.tag) == [16])
        HostBackoffMachineTests.succeed(16, from: "http://a.test", &driver)
        #expect(Self.failures(&driver) == [])
        #expect(driver.machine.requestCount == 0)
    }

    @Test func theProbesSpacingDoublesUpToTheCoolDown() {
        var driver = Self.downAt1()
        // Each probe fails at once: the spacing after the n-th is 2^n s, at most the cool-down (30). A request a
        // second after each failure (its quiet time over) waits for the next probe, which it is.
        var spacings: [Double] = []
        var tag = 101
        var probeAt = 2.0
        driver.now = probeAt
        driver.add(tag, url: "http://a.test/\(tag)")
        for _ in 1...7 {
            #expect(driver.transfers.map(\.tag) == [tag])
            driver.send(Self.unanswered, to: tag)
            #expect(Self.failures(&driver) == ["\(tag) down"])
            tag += 1
            driver.now = probeAt + 1
            driver.add(tag, url: "http://a.test/\(tag)")
            var next = probeAt + 1
            while driver.transfers.isEmpty && next < probeAt + 100 {
                next += 1
                driver.timer(at: next)
            }
            spacings.append(next - probeAt)
            probeAt = next
        }
        #expect(Self.failures(&driver) == [])
        #expect(spacings == [2, 4, 8, 16, 30, 30, 30], "\(spacings)")
    }

    @Test func aProbeThatStopsWithoutAVerdictHandsTheProbingOn() {
        var driver = Self.probing()
        #expect(driver.transfers.map(\.tag) == [11])
        // The probe is cancelled: 12 probes in its place.
        driver.now = 32
        driver.cancel(11)
        #expect(driver.transfers.map(\.tag) == [12])
    }

    @Test func aRequestWithMirrorsIsNeverEndedByItsServersDeath() {
        var driver = Self.downAt1()
        driver.now = 10
        let request = NetworkRequest(
            url: URL(string: "http://a.test/11")!, destination: .file(URL(fileURLWithPath: "/tmp/nq-dead-11.bin")),
            fileOptions: .init(mirrors: [URL(string: "http://b.test/m")!]), tag: 11)
        driver.add(request)
        // It starts (its machine goes to its sources), where one without mirrors would end.
        #expect(driver.transfers.map(\.tag) == [11])
        #expect(Self.failures(&driver) == [])
    }

    @Test func aResponseBetweenFailuresStartsTheCountOver() {
        var driver = Self.twoServers(DeadHosts(failuresInARow: 2))
        driver.now = 1
        driver.send(Self.unanswered, to: 1)
        // 3 is answered (an error status is an answer, which fails it at its head): the count starts over.
        driver.send(HostBackoffMachineTests.head(500, from: "http://a.test"), to: 3)
        driver.now = 2
        driver.send(Self.unanswered, to: 2)
        driver.send(Self.unanswered, to: 4)
        #expect(
            Self.failures(&driver) == [
                "1 transport", "didFail 3 HTTP status 500 from http://a.test/x", "2 transport", "4 transport",
            ])
        #expect(driver.transfers.map(\.tag) == [5, 6])
    }

    @Test func aBigBatchToADeadServerEndsAtItsTurnsWithoutAConnectEach() async {
        var driver = Driver(limit: 8)
        driver.machine.cancelsAllOnFailure = false
        for tag in 1...TestEnvironment.bigBatch {
            driver.add(tag, url: "http://a.test/\(tag)")
            // A long synchronous loop would hold one of the cooperative pool's threads (see forEachSeed).
            if tag % 4_096 == 0 { await Task.yield() }
        }
        driver.go()
        #expect(driver.transfers.map(\.tag) == Array(1...8))
        // Each second, every transfer then connecting fails: one round.
        var connects = 0
        while !driver.transfers.isEmpty {
            driver.now += 1
            for connecting in driver.transfers {
                driver.send(Self.unanswered, to: connecting)
                connects += 1
            }
        }
        // Two rounds of eight failed on their own, their slots going to the next eight each time; in the third the
        // server is down: those connecting end with it, and every waiting request at its turn, in the same start
        // pass, sending nothing.
        #expect(connects == 24)
        let failures = Self.failures(&driver)
        #expect(failures.prefix(16) == ArraySlice((1...16).map { "\($0) transport" }))
        #expect(failures.count == TestEnvironment.bigBatch)
        #expect(failures.dropFirst(16).allSatisfy { $0.hasSuffix(" down") })
        #expect(driver.transfers.isEmpty)
        #expect(driver.machine.requestCount == 0)
    }

    static let reset = TransferEvent.completed(URLError(.networkConnectionLost))

    /// Requests 1–`count` to a.test, `limit` slots, `attempts` attempts `delay` seconds apart, a failure failing no
    /// other, started.
    static func resetting(attempts: Int, count: Int, limit: Int = 2, delay: Double = 0) -> Driver {
        var policy = RetryPolicy(
            maximumAttempts: attempts, backoff: .init(initialDelay: delay, multiplier: 1, jitter: false))
        // Every retry waits its delay, the first lost connection's too.
        policy.retriesFirstLostConnectionAtOnce = false
        var driver = Driver(limit: limit, retryPolicy: policy)
        driver.machine.cancelsAllOnFailure = false
        for tag in 1...count { driver.add(tag, url: "http://a.test/\(tag)") }
        driver.go()
        return driver
    }

    /// The deliveries that say a request's attempt was spent (a retry) or it ended.
    static func spent(_ driver: inout Driver) -> [String] {
        driver.takeDeliveries().compactMap { line in
            line.hasPrefix("willRetry ") || line.hasPrefix("didFail ")
                ? line.split(separator: " ").prefix(2).joined(separator: " ") : nil
        }
    }

    @Test func aResetBeforeAResponseWhileTheServerAnswersOthersIsSentAgainUnspent() {
        var driver = Self.resetting(attempts: 3, count: 3, delay: 1.5)
        // The first reset: the queue has not heard the server answer yet, so the attempt is spent (a retry in 1.5 s);
        // 3 takes the slot.
        driver.now = 1
        driver.send(Self.reset, to: 1)
        #expect(Self.spent(&driver) == ["willRetry 1"])
        // 2 is answered at 2: the server is up, and 1's retry goes early, as after any success of its server.
        driver.now = 2
        HostBackoffMachineTests.succeed(2, from: "http://a.test", &driver)
        #expect(driver.transfers.map(\.tag) == [3, 1])
        _ = driver.takeDeliveries()
        // At 3, 3 (begun at 1) and 1 (begun at 2, as the answer came) are reset: the server answered since each
        // began, so each is sent again at once, unspent.
        driver.now = 3
        driver.send(Self.reset, to: 3)
        driver.send(Self.reset, to: 1)
        #expect(Self.spent(&driver) == [])
        driver.timer(at: 3)
        #expect(driver.transfers.map(\.tag).sorted() == [1, 3])
        // 3 began at 3, after the server's last answer (2): its reset at 4 is spent.
        driver.now = 4
        driver.send(Self.reset, to: 3)
        #expect(Self.spent(&driver) == ["willRetry 3"])
        // Both finish, each with its second attempt: the unspent ones were never counted.
        HostBackoffMachineTests.succeed(1, from: "http://a.test", &driver)
        driver.timer(at: 5.5)
        HostBackoffMachineTests.succeed(3, from: "http://a.test", &driver)
        #expect(Self.spent(&driver) == [])
        #expect(driver.machine.requestCount == 0)
    }

    @Test func theUnspentResetsOfARequestAreBounded() {
        // Two attempts: at most three unspent resets, then its attempts are spent as ever.
        var driver = Self.resetting(attempts: 2, count: 7, limit: 8)
        var spent: [String] = []
        for step in 0..<5 {
            let time = 1 + 2 * Double(step)
            driver.now = time
            // Another request is answered after 1's last start.
            let other = driver.transfers.first { $0.tag != 1 }!.tag
            HostBackoffMachineTests.succeed(other, from: "http://a.test", &driver)
            driver.now = time + 1
            driver.send(Self.reset, to: 1)
            spent += Self.spent(&driver)
            driver.timer(at: time + 1)
        }
        // Three unspent, then its one retry, then its end.
        #expect(spent == ["willRetry 1", "didFail 1"])
    }

    @Test func offJudgesNoServerDown() {
        var driver = Self.twoServers(.off)
        for tag in 1...8 {
            driver.now = Double(tag)
            driver.send(Self.unanswered, to: tag)
        }
        #expect(Self.failures(&driver) == (1...8).map { "\($0) transport" })
        #expect(driver.transfers.map(\.tag) == [9, 10])
    }

    @Test func thePolicysBoundsHold() {
        #expect(DeadHosts(failuresInARow: 0).failuresInARow == 1)
        #expect(DeadHosts(coolDown: -1).coolDown == 60 && DeadHosts(coolDown: .nan).coolDown == 60)
        #expect(DeadHosts().failuresInARow == 3 && DeadHosts().coolDown == 60 && DeadHosts().isEnabled)
        #expect(DeadHostRules.isConnectFailure(URLError(.cannotFindHost)))
        #expect(DeadHostRules.isConnectFailure(URLError(.dnsLookupFailed)))
        #expect(!DeadHostRules.isConnectFailure(URLError(.timedOut)))
        #expect(!DeadHostRules.isConnectFailure(URLError(.networkConnectionLost)))
    }
}
