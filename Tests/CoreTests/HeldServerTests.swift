import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A down server is held, not failed (issue 71, DESIGN semantics 24 revised), decided by the engine alone, time as a
/// parameter: its requests wait without a slot and without spending their attempts, one at a time probes it on the
/// retry policy's schedule, an answer releases them all, and only a server that stays down for the whole window (every
/// probe the policy allows failed) ends them, once for the batch.
@Suite(.admitted, .timeLimit(.minutes(10))) struct HeldServerTests {
    typealias Driver = MachineDriver

    static let unanswered = DeadHostTests.unanswered
    /// Three attempts, backoff bounds 1 s then 2 s, no jitter: the window is two probes, at +1 s and +2 s after.
    static let policy = RetryPolicy(maximumAttempts: 3, backoff: .init(jitter: false))

    /// Requests 1–8 to a.test and 9–10 to b.test, two slots, the policy above; three rounds of failed connects on
    /// a.test (1–2 at 1 and 3–4 at 2 fail alone and wait to retry, 5 at 3 makes the server held until 4); 6 then fails
    /// too, and is held with the others. b.test's requests take the slots.
    /// With `files`, the requests to a.test are those given (tags 1–8, in order) instead of plain ones.
    static func heldAt3(files: [NetworkRequest] = []) -> Driver {
        var driver = Driver(limit: 2, retryPolicy: policy)
        driver.machine.cancelsAllOnFailure = false
        driver.machine.outbox.isLogging = true
        if files.isEmpty {
            for tag in 1...8 { driver.add(tag, url: "http://a.test/\(tag)") }
        } else {
            for file in files { driver.add(file) }
        }
        for tag in 9...10 { driver.add(tag, url: "http://b.test/\(tag)") }
        driver.go()
        driver.now = 1
        driver.send(unanswered, to: 1)
        driver.send(unanswered, to: 2)
        driver.now = 2
        driver.send(unanswered, to: 3)
        driver.send(unanswered, to: 4)
        #expect(driver.transfers.map(\.tag) == [5, 6])
        driver.now = 3
        driver.send(unanswered, to: 5)
        driver.send(unanswered, to: 6)
        driver.timer(at: 3)
        return driver
    }

    /// The deliveries that are not progress, retries or logs: failures and the server's hold changes.
    static func said(_ driver: inout Driver) -> [String] {
        driver.takeDeliveries().filter { $0.hasPrefix("didFail") || $0.hasPrefix("server") }
    }

    @Test func aServerThatComesBackWithinItsWindowLosesNothing() {
        var driver = Self.heldAt3()
        #expect(Self.said(&driver) == ["server held http://a.test:80 after 0.0 s, 3 failures"])
        // No request failed; the server's are held (1–4 wait out their own retries first), b.test's run.
        #expect(driver.transfers.map(\.tag) == [9, 10])
        #expect(driver.machine.progress(at: 3).heldServerCount == 1)
        for tag in [9, 10] { HostBackoffMachineTests.succeed(tag, from: "http://b.test", &driver) }
        // Nothing of a.test starts before its first probe, at 3 + 1 s, though slots are free.
        driver.timer(at: 3.5)
        #expect(driver.transfers.isEmpty)
        driver.timer(at: 4)
        #expect(driver.transfers.count == 1)
        let probe = driver.transfers[0].tag
        // It is answered: the server is back, and every held request goes, none having spent its held try.
        HostBackoffMachineTests.succeed(probe, from: "http://a.test", &driver)
        #expect(Self.said(&driver) == ["server back http://a.test:80 after 1.0 s, 0 failures"])
        #expect(driver.machine.progress(at: driver.now).heldServerCount == 0)
        var finished = [probe]
        while let next = driver.transfers.first {
            HostBackoffMachineTests.succeed(next.tag, from: "http://a.test", &driver)
            finished.append(next.tag)
        }
        #expect(finished.sorted() == Array(1...8))
        #expect(Self.said(&driver) == [])
        #expect(driver.machine.requestCount == 0)
    }

    @Test func aServerDownForItsWholeWindowEndsItsRequestsOnceForTheBatch() {
        var driver = Self.heldAt3()
        _ = Self.said(&driver)
        for tag in [9, 10] { HostBackoffMachineTests.succeed(tag, from: "http://b.test", &driver) }
        // The first probe, at 4, fails: the next is due 2 s later (the policy's second bound), the others held.
        driver.timer(at: 4)
        driver.send(Self.unanswered, to: driver.transfers[0].tag)
        #expect(Self.said(&driver) == [])
        driver.timer(at: 5.9)
        #expect(driver.transfers.isEmpty)
        // The second and last probe, at 6, fails: the window (1 + 2 s) is spent, and all eight end, without a connect
        // each (six failures counted: three rounds, the one held with 5, and two probes).
        driver.timer(at: 6)
        #expect(driver.transfers.count == 1)
        driver.send(Self.unanswered, to: driver.transfers[0].tag)
        let said = Self.said(&driver)
        #expect(said.first == "server down http://a.test:80 after 3.0 s, 6 failures")
        #expect(said.dropFirst().count == 8)
        #expect(said.dropFirst().allSatisfy { $0.contains("is down: ") })
        #expect(driver.transfers.isEmpty && driver.machine.requestCount == 0)
    }

    /// The probe of a held server is a file split over two connections: the head its file begins with releases the
    /// server in the call that begins the file (the request's machine hears it as its own head). Before, only a later
    /// request's head released it: the held requests waited for the file to end.
    @Test func aSplitFileProbingAHeldServerReleasesItWithTheHeadItBeginsWith() {
        let files = (1...8).map { tag in
            NetworkRequest(
                URLRequest(url: URL(string: "http://a.test/\(tag)")!),
                fileOptions: .init(maximumConnections: 2), tag: tag)
        }
        var driver = Self.heldAt3(files: files)
        #expect(Self.said(&driver) == ["server held http://a.test:80 after 0.0 s, 3 failures"])
        for tag in [9, 10] { HostBackoffMachineTests.succeed(tag, from: "http://b.test", &driver) }
        driver.timer(at: 4)
        #expect(driver.transfers.count == 1)
        let probe = driver.transfers[0]
        // The shell splits the file: its first connection goes, and its head (4 MiB, ranges taken) begins the file.
        let work = SplitMachineTests.begin(&driver, files[probe.tag - 1])
        guard case .start(0, let request, _, _, _)? = work.first else {
            Issue.record("no first connection: \(work)")
            return
        }
        let sent = SplitMachineTests.sent(request, probe.start.outgoing.urlRequest)
        #expect(sent.url?.host == "a.test")
        let (slot, token) = (probe.start.slot, probe.start.token)
        let begun = SplitMachineTests.head()
        let head = ResponseHead(url: sent.url ?? begun.url, statusCode: 200, httpVersion: "1.1", fields: begun.fields)
        // The shell read the head and began the file on it: the file is shared, its head is the request's, and the
        // server is back; the held requests go.
        let reading = HeadReading(head, continuedFrom: 0, acceptableStatusCodes: nil)
        let shell = driver.split(.firstHead(reading, connection: 0), slot: slot, token: token, at: 4)
        #expect(shell.contains { if case .beginFile = $0 { true } else { false } }, "\(shell)")
        #expect(Self.said(&driver) == ["server back http://a.test:80 after 1.0 s, 0 failures"])
        #expect(driver.machine.progress(at: 4).heldServerCount == 0)
        #expect(driver.transfers.count == 2 && driver.transfers[1].tag != probe.tag)
    }
}
