import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Retries and adapt hooks in the engine alone: exact deliveries, time as a parameter.
@Suite(.admitted, .timeLimit(.minutes(10))) struct RetryMachineTests {
    typealias Driver = MachineDriver

    /// A policy whose backoff is exactly `delay` (no jitter), so sequences are exact.
    static func policy(attempts: Int = 3, delay: Double = 2, early: Bool = true) -> RetryPolicy {
        RetryPolicy(
            maximumAttempts: attempts, backoff: .init(initialDelay: delay, multiplier: 1, jitter: false),
            retriesEarlyWhenHostRecovers: early)
    }

    static let body = Data("abc".utf8)

    /// Sends a successful 3-byte response to the newest transfer of `tag`.
    static func succeed(_ tag: Int, _ driver: inout Driver) {
        driver.send(Driver.head(), to: tag)
        driver.send(.data(body), to: tag)
        driver.send(.completed(nil), to: tag)
    }

    @Test func a503WithRetryAfterOneWaitsExactlyOneSecondThenSucceeds() {
        var driver = Driver(limit: 2, retryPolicy: Self.policy())
        driver.add(1)
        driver.go()
        // The timer is armed already (for the first progress flush, at 0): no new arming yet.
        #expect(
            driver.send(Driver.head(503, headers: ["Retry-After": "1"]), to: 1) == [
                "publish 1 running", "cancel 1", "publish 1 waitingToRetry", "deliver",
            ])
        #expect(driver.takeDeliveries() == ["didStart 1", "headers 1 503", "willRetry 1 1.0"])
        // The flush fires; the next firing is the retry, 1 s after the 503.
        #expect(driver.timer(at: 0.999) == ["deliver", "timer 1.0"])
        #expect(driver.transfers.isEmpty)
        #expect(driver.timer(at: 1.0) == ["publish 1 pending", "publish 1 running", "start 1 main", "timer 60.0"])
        Self.succeed(1, &driver)
        // didStart is not repeated: one start per request.
        #expect(
            driver.takeDeliveries() == [
                "progress 0.0", "headers 1 200", "settle 1 finished", "didFinish 1", "progress 1.0", "queueDidFinish",
            ])
        #expect(driver.machine.table.isEmpty)
    }

    /// Issue 71: a request's first lost connection is sent again at once (a reset as the request went out is what a
    /// browser retries at once, once); its second waits the backoff; with the policy's switch off, the first waits too.
    @Test func theFirstLostConnectionIsRetriedAtOnceAndTheSecondWaitsTheBackoff() {
        for atOnce in [true, false] {
            var policy = Self.policy(attempts: 3, delay: 2)
            policy.retriesFirstLostConnectionAtOnce = atOnce
            var driver = Driver(limit: 1, retryPolicy: policy)
            driver.add(1)
            driver.go()
            driver.send(.completed(URLError(.networkConnectionLost)), to: 1)
            #expect(driver.takeDeliveries().last == "willRetry 1 \(atOnce ? "0.0" : "2.0")")
            _ = driver.timer(at: atOnce ? 0 : 2)
            #expect(driver.transfers.map(\.tag) == [1], "sent again")
            driver.send(.completed(URLError(.networkConnectionLost)), to: 1)
            #expect(driver.takeDeliveries().last == "willRetry 1 2.0")
        }
        // Another fault (a failed connect) waits the backoff from the first.
        var driver = Driver(limit: 1, retryPolicy: Self.policy(attempts: 3, delay: 2))
        driver.add(1)
        driver.go()
        driver.send(.completed(URLError(.timedOut)), to: 1)
        #expect(driver.takeDeliveries().last == "willRetry 1 2.0")
    }

    @Test func aRequestWaitingToRetryHoldsNoSlot() {
        var driver = Driver(limit: 1, retryPolicy: Self.policy())
        driver.add(1)
        driver.add(2)
        driver.go()
        #expect(driver.transfers.map(\.tag) == [1])
        driver.send(.completed(URLError(.networkConnectionLost)), to: 1)
        // 1 waits for 2 s; 2 takes the only slot at once.
        #expect(driver.transfers.map(\.tag) == [2])
        #expect(driver.machine.scheduler.activeCount == 1)
        Self.succeed(2, &driver)
        // 2's success brings 1 back early (same host, a backoff wait).
        #expect(driver.transfers.map(\.tag) == [1])
    }

    @Test func didFailComesOnlyAfterTheLastAttemptWithItsError() {
        var driver = Driver(limit: 1, retryPolicy: Self.policy(attempts: 2, delay: 0.5))
        driver.add(1)
        driver.go()
        driver.send(.completed(URLError(.timedOut)), to: 1)
        #expect(driver.takeDeliveries() == ["didStart 1", "willRetry 1 0.5"])
        driver.timer(at: 0.5)
        driver.send(.completed(URLError(.cannotConnectToHost)), to: 1)
        #expect(
            driver.takeDeliveries() == [
                "progress 0.0", "settle 1 failed", "didFail 1 transport \(URLError.Code.cannotConnectToHost.rawValue)",
                "settleAll []",
                "progress 0.0", "queueDidFinish",
            ])
        #expect(driver.machine.table.isEmpty)
    }

    @Test func theLastAttemptsStatusIsShownWithItsCount() {
        var driver = Driver(limit: 1, retryPolicy: Self.policy(attempts: 2, delay: 0))
        driver.add(1)
        driver.go()
        driver.send(Driver.head(500), to: 1)
        // A zero delay rejoins at the next timer firing (armed for now).
        driver.timer(at: 0)
        let last = driver.send(Driver.head(502), to: 1)
        #expect(last.contains("publish 1 failed"))
        #expect(
            driver.takeDeliveries().suffix(4) == [
                "didFail 1 HTTP status 502 from http://example.test/", "settleAll []", "progress 0.0", "queueDidFinish",
            ])
    }

    @Test func cancellingAWaitingRequestEndsItAtOnceAndItNeverStartsAgain() {
        var driver = Driver(limit: 1, retryPolicy: Self.policy())
        driver.add(1)
        driver.go()
        driver.send(.completed(URLError(.networkConnectionLost)), to: 1)
        _ = driver.takeDeliveries()
        #expect(driver.cancel(1) == ["publish 1 cancelled", "deliver"])
        #expect(
            driver.takeDeliveries() == ["settle 1 cancelled", "didFail 1 cancelled", "progress 0.0", "queueDidFinish"])
        #expect(!driver.timer(at: 10).contains("start 1 main"))
        #expect(driver.transfers.isEmpty)
    }

    @Test func cancelAllOnFailureWaitsForTheFinalFailure() {
        var driver = Driver(limit: 2, retryPolicy: Self.policy(attempts: 2, delay: 1))
        driver.add(1)
        driver.add(2)
        driver.go()
        driver.send(Driver.head(503), to: 1)
        // A retried failure cancels nobody: 2 still runs.
        #expect(driver.machine.requests.map(\.tag) == [1, 2])
        #expect(driver.transfers.map(\.tag) == [2])
        driver.timer(at: 1)
        driver.send(Driver.head(503), to: 1)
        #expect(driver.machine.table.isEmpty)
        #expect(
            driver.takeDeliveries().filter { $0.hasPrefix("didFail") } == [
                "didFail 1 HTTP status 503 from http://example.test/", "didFail 2 cancelled",
            ])
    }

    @Test func queueDidFinishWaitsForPendingRetries() {
        var driver = Driver(limit: 2, retryPolicy: Self.policy(delay: 5))
        driver.add(1, url: "http://one.test/")
        driver.add(2, url: "http://two.test/")
        driver.go()
        driver.send(.completed(URLError(.timedOut)), to: 1)
        Self.succeed(2, &driver)
        // 2 is another host: no early retry, and the drain is not over.
        #expect(!driver.takeDeliveries().contains("queueDidFinish"))
        driver.timer(at: 5)
        Self.succeed(1, &driver)
        #expect(driver.takeDeliveries().suffix(2) == ["progress 1.0", "queueDidFinish"])
    }

    @Test func earlyRetryFollowsASuccessOnTheSameHostButNeverCutsARetryAfter() {
        var driver = Driver(limit: 3, retryPolicy: Self.policy(delay: 30))
        driver.add(1, url: "http://a.test/1")
        driver.add(2, url: "http://a.test:80/2")  // the same server as 1 and 4
        driver.add(3, url: "http://b.test/3")
        driver.go()
        driver.send(.completed(URLError(.networkConnectionLost)), to: 1)  // backoff: may come back early
        driver.send(.completed(URLError(.networkConnectionLost)), to: 3)  // another host
        driver.add(4, url: "http://A.test/4")
        driver.send(Driver.head(503, headers: ["Retry-After": "20"]), to: 4)  // the server's wait
        #expect(driver.transfers.map(\.tag) == [2])
        Self.succeed(2, &driver)
        #expect(driver.transfers.map(\.tag) == [1])
        #expect(driver.machine.table.records.filter { $0.record.machine.phase.name == "waitingToRetry" }.count == 2)
    }

    @Test func earlyRetryCanBeTurnedOff() {
        var driver = Driver(limit: 2, retryPolicy: Self.policy(delay: 30, early: false))
        driver.add(1)
        driver.add(2)
        driver.go()
        driver.send(.completed(URLError(.networkConnectionLost)), to: 1)
        Self.succeed(2, &driver)
        #expect(driver.transfers.isEmpty)
        driver.timer(at: 30)
        #expect(driver.transfers.map(\.tag) == [1])
    }

    @Test func tenAttemptsBackOffWithinTheJitterBoundsUpToTheCap() {
        let policy = RetryPolicy(
            maximumAttempts: 10, backoff: .init(initialDelay: 0.5, multiplier: 2, maximumDelay: 10))
        var driver = Driver(limit: 1, retryPolicy: policy)
        driver.add(1)
        driver.go()
        var delays: [Double] = []
        for _ in 1...9 {
            driver.send(.completed(URLError(.timedOut)), to: 1)
            let delay = driver.takeDeliveries().compactMap {
                $0.hasPrefix("willRetry 1 ") ? Double($0.dropFirst(12)) : nil
            }
            #expect(delay.count == 1)
            delays += delay
            driver.timer(at: driver.now + (delay.first ?? 0))
            #expect(driver.transfers.map(\.tag) == [1])
        }
        driver.send(.completed(URLError(.timedOut)), to: 1)
        #expect(driver.takeDeliveries().contains("didFail 1 transport \(URLError.Code.timedOut.rawValue)"))
        let bounds = [0.5, 1, 2, 4, 8, 10, 10, 10, 10]
        #expect(delays.count == 9)
        for (delay, bound) in zip(delays, bounds) { #expect(delay >= 0 && delay <= bound, "\(delay) over \(bound)") }
        // Jittered: not simply the bounds.
        #expect(delays != bounds)
    }

    @Test func postIsRetriedOnlyWhenItOptsInOrNeverReachedTheServer() {
        func post(_ tag: Int, policy: RetryPolicy?) -> NetworkRequest {
            var urlRequest = URLRequest(url: URL(string: "http://example.test/\(tag)")!)
            urlRequest.httpMethod = "POST"
            return NetworkRequest(urlRequest, retryPolicy: policy, tag: tag)
        }
        var driver = Driver(limit: 3, retryPolicy: Self.policy())
        driver.machine.cancelsAllOnFailure = false
        driver.add(post(1, policy: nil))
        driver.add(post(2, policy: RetryPolicy(retriesNonIdempotentMethods: true)))
        driver.add(post(3, policy: nil))
        driver.go()
        driver.send(Driver.head(503), to: 1)
        driver.send(Driver.head(503), to: 2)
        driver.send(.completed(URLError(.cannotConnectToHost)), to: 3)
        let deliveries = driver.takeDeliveries()
        #expect(deliveries.contains("didFail 1 HTTP status 503 from http://example.test/"))
        #expect(
            deliveries.filter { $0.hasPrefix("willRetry") }.map { $0.prefix(11) } == ["willRetry 2", "willRetry 3"])
    }

    @Test func aCutBodyRetriedCountsItsBytesOnceAndTheFractionNeverFalls() {
        var driver = Driver(limit: 1, retryPolicy: Self.policy(delay: 1))
        driver.add(1)
        driver.add(2)
        driver.go()
        var fractions: [Double] = []
        func sample(_ driver: Driver) -> QueueProgress {
            let progress = driver.machine.progress(at: driver.now)
            fractions.append(progress.fractionCompleted)
            return progress
        }
        driver.send(Driver.head(length: 1000), to: 1)
        driver.send(.data(Data(count: 600)), to: 1)
        #expect(sample(driver).bytesReceived == 600)
        driver.send(.completed(URLError(.networkConnectionLost)), to: 1)
        #expect(sample(driver).bytesReceived == 0)  // the failed attempt's bytes no longer count
        // 2 (1 unit, unknown size) runs while 1 waits.
        driver.send(Driver.head(length: nil), to: 2)
        driver.send(.completed(nil), to: 2)
        _ = sample(driver)
        driver.send(Driver.head(length: 1000), to: 1)
        for _ in 0..<4 {
            driver.send(.data(Data(count: 250)), to: 1)
            _ = sample(driver)
        }
        driver.send(.completed(nil), to: 1)
        let final = sample(driver)
        #expect(final.bytesReceived == 1000)
        #expect(final.fractionCompleted == 1.0)
        #expect(fractions == fractions.sorted(), "\(fractions)")
    }

    @Test func theDecideClosureIsAskedAndItsAnswerTaken() {
        let asking = RetryPolicy(decide: { _, _, _ in .useDefault })
        var driver = Driver(limit: 2, retryPolicy: asking)
        driver.add(1)
        driver.add(2)
        driver.go()
        #expect(
            driver.send(Driver.head(404), to: 1) == [
                "publish 1 running", "cancel 1", "publish 1 waitingToRetry", "decide 1", "deliver",
            ])
        #expect(driver.decisions.map(\.attempts) == [1])
        #expect(driver.answerDecision(.retryAfter(3)) == ["publish 1 waitingToRetry", "deliver"])
        #expect(driver.machine.retryDeadlines.earliest == 3.0)
        driver.send(Driver.head(503), to: 2)
        driver.answerDecision(.doNotRetry)
        #expect(
            driver.takeDeliveries().filter { $0.hasPrefix("willRetry") || $0.hasPrefix("didFail") } == [
                "willRetry 1 3.0", "didFail 2 HTTP status 503 from http://example.test/",
                // 2's final failure cancels the others, 1 waiting to retry included.
                "didFail 1 cancelled",
            ])
    }

    @Test func aDecisionForACancelledRequestIsDropped() {
        var driver = Driver(limit: 1, retryPolicy: RetryPolicy(decide: { _, _, _ in .retry }))
        driver.add(1)
        driver.go()
        driver.send(Driver.head(503), to: 1)
        driver.cancel(1)
        #expect(driver.answerDecision(.retry) == [])
        #expect(driver.machine.table.isEmpty)
    }

    @Test func adaptRunsBeforeEveryAttemptAndItsRequestIsSent() {
        var driver = Driver(limit: 1, retryPolicy: Self.policy(delay: 1))
        driver.machine.adapter = { $0 }
        driver.add(1)
        #expect(driver.go() == ["publish 1 running", "adapt 1"])
        var adapted = URLRequest(url: URL(string: "http://example.test/1")!)
        adapted.setValue("token-1", forHTTPHeaderField: "Authorization")
        #expect(driver.answerAdapt(.success(adapted)) == ["publish 1 running", "start 1 main", "deliver"])
        #expect(driver.transfers[0].start.outgoing.urlRequest.value(forHTTPHeaderField: "Authorization") == "token-1")
        driver.send(.completed(URLError(.networkConnectionLost)), to: 1)
        #expect(driver.timer(at: 1) == ["publish 1 pending", "publish 1 running", "adapt 1", "deliver", "timer 60.0"])
        adapted.setValue("token-2", forHTTPHeaderField: "Authorization")
        driver.answerAdapt(.success(adapted))
        #expect(driver.transfers[0].start.outgoing.urlRequest.value(forHTTPHeaderField: "Authorization") == "token-2")
        #expect(driver.machine.table[driver.slots[1]!].machine.attempts == 2)
    }

    @Test func aThrowingAdaptFailsTheRequestWhichNeverStarts() {
        struct Expired: Error {}
        var driver = Driver(limit: 1, retryPolicy: Self.policy())
        driver.machine.adapter = { $0 }
        driver.add(1)
        driver.go()
        driver.answerAdapt(.failure(.init(Expired())))
        #expect(driver.transfers.isEmpty)
        let deliveries = driver.takeDeliveries()
        #expect(!deliveries.contains("didStart 1"))
        #expect(deliveries.contains("didFail 1 adapting the request failed: Expired()"))
    }

    @Test func adaptAlsoRunsBeforeTheHeadPreflight() {
        var driver = Driver(limit: 1)
        driver.machine.adapter = { $0 }
        driver.machine.showsAccurateProgress = true
        driver.add(1)
        #expect(driver.go() == ["publish 1 preflighting", "adapt 1"])
        var adapted = URLRequest(url: URL(string: "http://example.test/1")!)
        adapted.setValue("yes", forHTTPHeaderField: "X-Adapted")
        #expect(driver.answerAdapt(.success(adapted)) == ["publish 1 preflighting", "start 1 preflight"])
        #expect(driver.transfers[0].start.outgoing.urlRequest.httpMethod == "HEAD")
        #expect(driver.transfers[0].start.outgoing.urlRequest.value(forHTTPHeaderField: "X-Adapted") == "yes")
        driver.send(Driver.head(length: 3), to: 1)
        #expect(driver.send(.completed(nil), to: 1) == ["publish 1 pending", "publish 1 running", "adapt 1"])
    }

    @Test func anAdaptedRequestThatIsInvalidFailsAsInvalid() {
        var driver = Driver(limit: 1)
        driver.machine.adapter = { $0 }
        driver.add(1)
        driver.go()
        driver.answerAdapt(.success(URLRequest(url: URL(string: "ftp://example.test/1")!)))
        #expect(driver.takeDeliveries().contains("didFail 1 invalid request: unsupported scheme ftp"))
        #expect(driver.transfers.isEmpty)
    }
}
