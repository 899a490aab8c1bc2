import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A server that fails its connects several times in a row is down (DESIGN semantics 24), decided by the engine
/// alone, time as a parameter: its waiting requests end at once, its later ones wait out the cool-down for one probe,
/// and the other servers go on.
@Suite(.testLane, .timeLimit(.minutes(5))) struct DeadHostTests {
    typealias Driver = MachineDriver

    static let unanswered = TransferEvent.completed(URLError(.cannotConnectToHost))

    /// Requests 1–5 to a.test and 6–7 to b.test, two slots, a failure failing no other, started: 1 and 2 run.
    static func twoServers(_ deadHosts: DeadHosts = DeadHosts()) -> Driver {
        var driver = Driver(limit: 2)
        driver.machine.cancelsAllOnFailure = false
        driver.machine.deadHosts = deadHosts
        driver.machine.outbox.isLogging = true
        for tag in 1...5 { driver.add(tag, url: "http://a.test/\(tag)") }
        for tag in 6...7 { driver.add(tag, url: "http://b.test/\(tag)") }
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

    @Test func threeFailedConnectsInARowEndTheServersWaitingRequestsAndTheOthersGoOn() {
        var driver = Self.twoServers()
        #expect(driver.transfers.map(\.tag) == [1, 2])
        driver.now = 1
        driver.send(Self.unanswered, to: 1)
        driver.send(Self.unanswered, to: 2)
        #expect(Self.failures(&driver) == ["1 transport", "2 transport"])
        #expect(driver.transfers.map(\.tag) == [3, 4])
        driver.now = 2
        driver.send(Self.unanswered, to: 3)
        // The third in a row: 3 ends with its server, and so does 5, which waited; 4, connecting, goes on.
        #expect(Self.failures(&driver) == ["3 down", "5 down"])
        #expect(driver.transfers.map(\.tag) == [4, 6])
        driver.send(Self.unanswered, to: 4)
        #expect(Self.failures(&driver) == ["4 down"])
        #expect(driver.transfers.map(\.tag) == [6, 7])
        for tag in [6, 7] { HostBackoffMachineTests.succeed(tag, from: "http://b.test", &driver) }
        #expect(driver.machine.requestCount == 0)
    }

    @Test func duringTheCoolDownItsRequestsEndAtTheirTurnAndAfterItOneProbesAlone() {
        var driver = Self.twoServers(DeadHosts(failuresInARow: 2, coolDown: 30))
        driver.now = 1
        driver.send(Self.unanswered, to: 1)
        driver.send(Self.unanswered, to: 2)
        // 3 took 1's slot and is connecting when 2's failure makes the server down: it goes on, 4 and 5 end.
        #expect(Self.failures(&driver) == ["1 transport", "2 down", "4 down", "5 down"])
        driver.send(Self.unanswered, to: 3)
        #expect(Self.failures(&driver) == ["3 down"])
        for tag in [6, 7] { HostBackoffMachineTests.succeed(tag, from: "http://b.test", &driver) }
        // A request whose turn comes during the cool-down (to 31) ends at once, sending nothing.
        driver.now = 20
        driver.add(8, url: "http://a.test/8")
        #expect(Self.failures(&driver) == ["8 down"])
        #expect(driver.transfers.isEmpty)
        // After it, the first goes alone, as the probe; the next waits for its verdict.
        driver.now = 31
        driver.add(9, url: "http://a.test/9")
        driver.add(10, url: "http://a.test/10")
        #expect(driver.transfers.map(\.tag) == [9])
        #expect(driver.machine.progress(at: driver.now).heldRequestCount == 1)
        // It is answered: the server is back, and 10 goes.
        HostBackoffMachineTests.succeed(9, from: "http://a.test", &driver)
        #expect(driver.transfers.map(\.tag) == [10])
        HostBackoffMachineTests.succeed(10, from: "http://a.test", &driver)
        #expect(Self.failures(&driver) == [])
        #expect(driver.machine.requestCount == 0)
    }

    /// 1–3 fail to connect to a.test (down after two, 3 with it), b.test's two finish: a.test's cool-down runs to 31.
    static func downUntil31() -> Driver {
        var driver = Self.twoServers(DeadHosts(failuresInARow: 2, coolDown: 30))
        driver.now = 1
        for tag in 1...3 { driver.send(Self.unanswered, to: tag) }
        for tag in [6, 7] { HostBackoffMachineTests.succeed(tag, from: "http://b.test", &driver) }
        _ = Self.failures(&driver)
        return driver
    }

    @Test func aFailedProbeEndsTheWaitingRequestsAgainAndStartsANewCoolDown() {
        var driver = Self.downUntil31()
        driver.now = 31
        driver.add(8, url: "http://a.test/8")
        driver.add(9, url: "http://a.test/9")
        #expect(driver.transfers.map(\.tag) == [8])
        driver.now = 33
        driver.send(Self.unanswered, to: 8)
        #expect(Self.failures(&driver) == ["8 down", "9 down"])
        // The next cool-down runs to 63.
        driver.now = 62
        driver.add(10, url: "http://a.test/10")
        #expect(Self.failures(&driver) == ["10 down"])
        driver.now = 63
        driver.add(11, url: "http://a.test/11")
        #expect(driver.transfers.map(\.tag) == [11])
    }

    @Test func aProbeThatStopsWithoutAVerdictHandsTheProbingOn() {
        var driver = Self.downUntil31()
        driver.now = 31
        driver.add(8, url: "http://a.test/8")
        driver.add(9, url: "http://a.test/9")
        #expect(driver.transfers.map(\.tag) == [8])
        // The probe is cancelled: 9 probes in its place.
        driver.now = 32
        driver.cancel(8)
        #expect(driver.transfers.map(\.tag) == [9])
    }

    @Test func aRequestWithMirrorsIsNeverEndedByItsServersDeath() {
        var driver = Self.downUntil31()
        driver.now = 10
        let request = NetworkRequest(
            url: URL(string: "http://a.test/8")!, destination: .file(URL(fileURLWithPath: "/tmp/nq-dead-8.bin")),
            fileOptions: .init(mirrors: [URL(string: "http://b.test/m")!]), tag: 8)
        driver.add(request)
        // It starts (its machine goes to its sources), where one without mirrors would end.
        #expect(driver.transfers.map(\.tag) == [8])
        #expect(Self.failures(&driver) == [])
    }

    @Test func aResponseBetweenFailuresStartsTheCountOver() {
        var driver = Self.twoServers()
        driver.now = 1
        driver.send(Self.unanswered, to: 1)
        driver.send(Self.unanswered, to: 2)
        // 3 is answered (an error status is an answer, which fails it at its head): the count starts over.
        driver.send(HostBackoffMachineTests.head(500, from: "http://a.test"), to: 3)
        driver.send(Self.unanswered, to: 4)
        driver.send(Self.unanswered, to: 5)
        #expect(
            Self.failures(&driver) == [
                "1 transport", "2 transport", "didFail 3 HTTP status 500 from http://a.test/x",
                "4 transport", "5 transport",
            ])
    }

    @Test func offJudgesNoServerDown() {
        var driver = Self.twoServers(.off)
        driver.now = 1
        for tag in 1...5 { driver.send(Self.unanswered, to: tag) }
        #expect(Self.failures(&driver) == (1...5).map { "\($0) transport" })
        #expect(driver.transfers.map(\.tag) == [6, 7])
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
