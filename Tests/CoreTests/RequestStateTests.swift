import Foundation
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One request's state machine alone: each transition from each phase it is legal in, what the phase holds
/// (what ending or pausing it releases), and the tokens that make late events stale.
@Suite(.timeLimit(.minutes(1))) struct RequestStateTests {
    let sent = URLRequest(url: URL(string: "http://example.test/a")!)

    func attempt(_ token: UInt64) -> Attempt {
        Attempt(token: token, cell: TransferCell(), sent: sent, startedAt: 1, expectedBefore: nil)
    }

    /// An attempt for the exit tests, whose bodies capture nothing.
    static func anAttempt() -> Attempt {
        Attempt(
            token: 1, cell: TransferCell(), sent: URLRequest(url: URL(string: "http://example.test/")!), startedAt: 0,
            expectedBefore: nil)
    }

    func head(_ status: Int) -> ResponseHead {
        ResponseHead(url: sent.url!, statusCode: status, httpVersion: "HTTP/1.1", fields: [])
    }

    /// The phase's name and what it holds, as one line.
    func describe(_ state: RequestState) -> String {
        let held = state.holdings
        var parts = [state.name]
        if held.mainLane { parts.append("main") }
        if held.preflightLane { parts.append("preflight") }
        if held.transfer != nil { parts.append("transfer") }
        if held.retryWait { parts.append("retryWait") }
        if held.committing { parts.append("committing") }
        if let leader = held.leader { parts.append("leader \(leader)") }
        return parts.joined(separator: " ")
    }

    @Test func aPlainRequestGoesPendingRunningCommitting() {
        var state = RequestState.pending
        #expect(describe(state) == "pending main")
        #expect(state.token == nil && state.shown.state == .pending)
        state.startAttempt(attempt(7))
        #expect(describe(state) == "running main transfer")
        #expect(state.token == 7 && state.isTimed && state.shown.state == .running)
        state.withAttempt { $0.head = head(200) }
        #expect(state.shown.head?.statusCode == 200)
        let committed = state.startCommit()
        #expect(committed.token == 7)
        #expect(describe(state) == "committing committing")
        #expect(state.token == 7 && !state.isTimed && !state.endsAlone)
        #expect(state.shown.head?.statusCode == 200)
    }

    @Test func aPreflightedRequestHoldsBothLanesUntilItsHeadEnds() {
        var state = RequestState.pending
        state.planPreflight()
        #expect(describe(state) == "awaitingPreflight main preflight")
        state.startAdapting(preflight: true, token: 3)
        #expect(describe(state) == "adaptingPreflight main preflight")
        #expect(state.token == 3 && state.isTimed && state.shown.state == .preflighting)
        state.startPreflight(token: 4, cell: TransferCell())
        #expect(describe(state) == "preflighting main preflight transfer")
        state.keepUnchanged(head(200))
        guard case .preflighting(let preflight) = state else {
            Issue.record("left preflighting: \(state.name)")
            return
        }
        #expect(preflight.unchangedHead?.statusCode == 200)
        state.finishPreflight()
        #expect(describe(state) == "awaitingMain main")
        state.startAdapting(preflight: false, token: 5)
        #expect(describe(state) == "adaptingMain main")
        state.startAttempt(attempt(6))
        #expect(state.token == 6)
    }

    @Test func aFailedAttemptDecidesWaitsAndRejoinsShowingItsHeadMeanwhile() {
        var state = RequestState.running(attempt(1))
        state.withAttempt { $0.head = head(503) }
        let failed = state.attempt!
        state.startDeciding(.init(token: 2, failure: .cancelled, retryAfter: 1.5, lastHead: failed.head))
        #expect(describe(state) == "deciding")
        #expect(state.token == 2 && state.isTimed && state.shown.state == .waitingToRetry)
        #expect(state.shown.head?.statusCode == 503)
        state.startWaiting(.init(token: 3, serverAsked: true, lastHead: failed.head))
        #expect(describe(state) == "waitingToRetry retryWait")
        #expect(state.token == 3 && !state.isTimed && state.endsAlone)
        #expect(state.shown.head?.statusCode == 503)
        state.rejoin()
        #expect(describe(state) == "pending main")
        #expect(state.shown.head == nil)
    }

    @Test func aRangeRefusedSendsTheSameAttemptAgainFromRunning() {
        var state = RequestState.running(attempt(1))
        state.withAttempt { $0.continuedFrom = 100 }
        state.startAttempt(attempt(2))
        #expect(state.token == 2)
        // A new attempt value: nothing of the refused transfer is carried over by hand.
        #expect(state.attempt?.continuedFrom == 0 && state.attempt?.head == nil)
    }

    @Test func pausingReleasesWhatEachPhaseHeld() {
        let cases: [(RequestState, String, Bool, Bool)] = [
            (.pending, "pending main", false, false),
            (.awaitingPreflight, "awaitingPreflight main preflight", true, false),
            (.preflighting(.init(token: 1, cell: TransferCell())), "preflighting main preflight transfer", true, false),
            (.awaitingMain, "awaitingMain main", false, false),
            (.adaptingPreflight(token: 1), "adaptingPreflight main preflight", true, false),
            (.adaptingMain(token: 1), "adaptingMain main", false, false),
            (.running(attempt(1)), "running main transfer", false, true),
            (.deciding(.init(token: 1, failure: .cancelled, retryAfter: nil, lastHead: nil)), "deciding", false, false),
            (
                .waitingToRetry(.init(token: 1, serverAsked: false, lastHead: nil)), "waitingToRetry retryWait", false,
                false
            ),
        ]
        for (start, held, withPreflight, stopsAttempt) in cases {
            var state = start
            let before = describe(state)
            guard let (released, stopped) = state.pause() else {
                Issue.record("\(held) could not be paused")
                continue
            }
            #expect(before == held)
            #expect(
                released.mainLane == start.holdings.mainLane && released.preflightLane == start.holdings.preflightLane)
            #expect((stopped != nil) == stopsAttempt, "\(held)")
            #expect(state.name == "paused" && state.token == nil && state.shown.state == .paused)
            #expect(state.resume() == withPreflight, "\(held)")
            #expect(state.name == (withPreflight ? "awaitingPreflight" : "pending"))
        }
    }

    @Test func whatCannotBePausedOrResumedSaysSoAndStaysPut() {
        for start in [RequestState.committing(attempt(1)), .following(leader: 4), .paused(withPreflight: false)] {
            var state = start
            #expect(state.pause() == nil)
            #expect(state.name == start.name)
        }
        for start in [RequestState.pending, .running(attempt(1)), .following(leader: 4)] {
            var state = start
            #expect(state.resume() == nil)
            #expect(state.name == start.name)
        }
    }

    @Test func aFollowerHoldsOnlyItsLeaderUntilItInheritsTheWork() {
        var state = RequestState.pending
        state.follow(2)
        #expect(describe(state) == "following leader 2")
        #expect(state.shown.state == .pending && state.endsAlone)
        state.inherit()
        #expect(describe(state) == "pending main")
    }

    @Test func changingTheAttemptInPlaceKeepsEveryChange() {
        let state = RequestState.running(attempt(1))
        for _ in 0..<3 { state.withAttempt { $0.body.append(contentsOf: [1, 2, 3]) } }
        #expect(state.attempt?.body == Data([1, 2, 3, 1, 2, 3, 1, 2, 3]))
        #expect(state.name == "running")
    }

    @Test func anIllegalMoveStopsTheProcessNamingThePhase() async {
        await #expect(processExitsWith: .failure) {
            var state = RequestState.paused(withPreflight: false)
            state.startAttempt(RequestStateTests.anAttempt())
        }
    }

    @Test func aCommittingRequestCannotGoBackToDeciding() async {
        await #expect(processExitsWith: .failure) {
            let attempt = RequestStateTests.anAttempt()
            var state = RequestState.committing(attempt)
            state.startDeciding(.init(token: 2, failure: .cancelled, retryAfter: nil, lastHead: nil))
        }
    }

    @Test func aPendingRequestHasNoPreflightToFinish() async {
        await #expect(processExitsWith: .failure) {
            var state = RequestState.pending
            state.finishPreflight()
        }
    }

    @Test func aRunningRequestCannotRejoinThePendingOnes() async {
        await #expect(processExitsWith: .failure) {
            let attempt = RequestStateTests.anAttempt()
            var state = RequestState.running(attempt)
            state.rejoin()
        }
    }
}
