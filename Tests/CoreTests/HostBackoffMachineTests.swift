import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A server's word held by the whole queue, and per-host pacing, in the engine alone: time as a parameter.
@Suite(.admitted, .timeLimit(.minutes(10))) struct HostBackoffMachineTests {
    typealias Driver = MachineDriver

    /// A head from `server` (a `scheme://host` prefix).
    static func head(_ status: Int, from server: String, _ headers: [String: String] = [:]) -> TransferEvent {
        var fields = headers
        fields["Content-Length"] = "3"
        return .head(
            ResponseHead(
                HTTPURLResponse(
                    url: URL(string: "\(server)/x")!, statusCode: status, httpVersion: "HTTP/1.1",
                    headerFields: fields)!))
    }

    /// A successful 3-byte response to the newest transfer of `tag`, from `server`.
    static func succeed(_ tag: Int, from server: String, _ driver: inout Driver) {
        driver.send(head(200, from: server), to: tag)
        driver.send(.data(Data("abc".utf8)), to: tag)
        driver.send(.completed(nil), to: tag)
    }

    /// Requests 1–3 to a.test and 4–5 to b.test, two slots, a failure failing no other, started: 1 and 2 run.
    static func twoServers() -> Driver {
        var driver = Driver(limit: 2)
        driver.machine.cancelsAllOnFailure = false
        for tag in 1...3 { driver.add(tag, url: "http://a.test/\(tag)") }
        for tag in 4...5 { driver.add(tag, url: "http://b.test/\(tag)") }
        driver.go()
        return driver
    }

    @Test func a429WithRetryAfterHoldsItsServerWhileTheOtherRuns() {
        var driver = Self.twoServers()
        driver.machine.outbox.isLogging = true
        #expect(driver.transfers.map(\.tag) == [1, 2])
        driver.now = 0.5
        driver.send(Self.head(429, from: "http://a.test", ["Retry-After": "2"]), to: 1)
        // 1 failed (no retries); its slot goes to b.test, not to 3: a.test is held until 2.5. 2 is not cut.
        #expect(driver.transfers.map(\.tag) == [2, 4])
        #expect(driver.takeDeliveries().contains("log 1 hostHeld"))
        #expect(driver.machine.progress(at: 0.5).heldRequestCount == 1)
        Self.succeed(2, from: "http://a.test", &driver)
        #expect(driver.transfers.map(\.tag) == [4, 5])
        Self.succeed(4, from: "http://b.test", &driver)
        Self.succeed(5, from: "http://b.test", &driver)
        #expect(driver.transfers.isEmpty)
        // The timer is armed for the hold's end.
        #expect(driver.machine.scheduler.nextTimedStart(now: driver.now) == 2.5)
        #expect(driver.timer(at: 1).last == "timer 2.5")
        driver.timer(at: 2.4)
        #expect(driver.transfers.isEmpty)
        driver.timer(at: 2.5)
        #expect(driver.transfers.map(\.tag) == [3])
        #expect(driver.machine.progress(at: 2.5).heldRequestCount == 0)
    }

    @Test func aSpentBudgetWithAUnixResetHoldsTheServerUntilThen() {
        var driver = Self.twoServers()
        driver.machine.outbox.wallClockOrigin = 1_700_000_000
        // A success that says the budget is spent until the Unix time 1,700,000,007: 7 s from now.
        driver.send(
            Self.head(
                200, from: "http://a.test", ["X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1700000007"]),
            to: 1)
        driver.send(.data(Data("abc".utf8)), to: 1)
        driver.send(.completed(nil), to: 1)
        #expect(driver.transfers.map(\.tag) == [2, 4])
        #expect(driver.machine.scheduler.nextTimedStart(now: 0) == nil)  // nothing of a.test waits for a slot yet
        for tag in [2, 4] { Self.succeed(tag, from: tag == 2 ? "http://a.test" : "http://b.test", &driver) }
        #expect(driver.transfers.map(\.tag) == [5])
        driver.timer(at: 6.9)
        Self.succeed(5, from: "http://b.test", &driver)
        #expect(driver.transfers.isEmpty)
        driver.timer(at: 7)
        #expect(driver.transfers.map(\.tag) == [3])
    }

    @Test func aRetryAfterOfAYearIsCappedAtTheMaximumHold() {
        var driver = Self.twoServers()
        driver.machine.hostBackoff = HostBackoff(maximumHold: 30)
        driver.send(Self.head(503, from: "http://a.test", ["Retry-After": "31536000"]), to: 1)
        Self.succeed(2, from: "http://a.test", &driver)
        Self.succeed(4, from: "http://b.test", &driver)
        Self.succeed(5, from: "http://b.test", &driver)
        #expect(driver.machine.scheduler.hosts.heldUntil(0, now: 0) == 30)
        driver.timer(at: 29.9)
        #expect(driver.transfers.isEmpty)
        driver.timer(at: 30)
        #expect(driver.transfers.map(\.tag) == [3])
    }

    @Test func withTheBackoffOffOnlyTheRequestItselfWaits() {
        var driver = Self.twoServers()
        driver.machine.hostBackoff = .off
        driver.send(Self.head(429, from: "http://a.test", ["Retry-After": "2"]), to: 1)
        #expect(driver.transfers.map(\.tag) == [2, 3])
        #expect(driver.machine.numbersHosts == false)
    }

    @Test func aNotSpentBudgetOrAStatusWithoutAWaitHoldsNothing() {
        var driver = Self.twoServers()
        driver.send(
            Self.head(200, from: "http://a.test", ["X-RateLimit-Remaining": "5", "X-RateLimit-Reset": "60"]), to: 1)
        driver.send(.data(Data("abc".utf8)), to: 1)
        driver.send(.completed(nil), to: 1)
        driver.send(Self.head(429, from: "http://a.test"), to: 2)
        #expect(driver.transfers.map(\.tag) == [3, 4])
        #expect(driver.machine.numbersHosts == false)
    }

    @Test func pacingSpacesOneServersStartsAndLeavesTheOtherAlone() {
        var driver = Driver(limit: 8)
        _ = driver.machine.setHostPacing(HostPacing(interval: 0.5), now: 0)
        _ = driver.machine.setHostPacing(.unpaced, forServer: "http://b.test:80", now: 0)
        for tag in 1...3 { driver.add(tag, url: "http://a.test/\(tag)") }
        for tag in 4...5 { driver.add(tag, url: "http://b.test/\(tag)") }
        driver.go()
        #expect(driver.transfers.map(\.tag) == [1, 4, 5])
        #expect(driver.machine.scheduler.nextTimedStart(now: 0) == 0.5)
        driver.timer(at: 0.25)
        #expect(driver.transfers.map(\.tag) == [1, 4, 5])
        driver.timer(at: 0.5)
        #expect(driver.transfers.map(\.tag) == [1, 4, 5, 2])
        driver.timer(at: 1)
        #expect(driver.transfers.map(\.tag) == [1, 4, 5, 2, 3])
    }
}
