import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One request's machine alone, driven event by event: every event in every phase. A legal event gives exactly
/// the action and the next phase in the table below; an illegal one stops the process (an exit test each).
@Suite(.admitted, .timeLimit(.minutes(10))) struct RequestMachineTests {
    /// The phases, each reached from a new machine by events alone (the phase cannot be assigned).
    enum Phase: String, CaseIterable, Codable, Sendable {
        case pending, awaitingPreflight, adaptingPreflight, preflighting, awaitingMain, adaptingMain, running,
            deciding, waitingToRetry, committing, following, paused
    }

    /// The events, each with fixed inputs (see ``Bench/apply(_:to:)``).
    enum Event: String, CaseIterable, Codable, Sendable {
        case granted, grantedHead, grantedWithHooks, adapted, headRead, bodyPiece, transferSucceeded,
            transferFailed, fileOpened, fileFailed, fileCommitted, attemptEnded, retryDecided, timedCheck, retryTime,
            deadlinePassed, planPreflight, pause, resume, follow, inherit, cancel
    }

    /// What each legal event does in each phase: the action, then the phase after it. An event missing from a
    /// phase's row is illegal there. An event that fails an attempt gives the retry verdict itself (issue 51): with
    /// the bench's policy of 3 attempts a lost connection waits to retry; past the deadline (timed checks come at
    /// 100, the deadline at 6), a response that is not one and a file error, the request ends.
    static let legal: [Phase: [Event: String]] = [
        .pending: [
            .granted: "startTransfer first → running", .grantedWithHooks: "adapt → adaptingMain",
            .fileFailed: "none → pending", .attemptEnded: "end transport -1001 → pending",
            .planPreflight: "none → awaitingPreflight", .pause: "paused → paused", .resume: "none → pending",
            .follow: "none → following", .cancel: "end cancelled → pending", .deadlinePassed: "none → pending",
        ],
        .awaitingPreflight: [
            .grantedHead: "startPreflight → preflighting", .fileFailed: "none → awaitingPreflight",
            .attemptEnded: "end transport -1001 → awaitingPreflight", .pause: "paused → paused",
            .resume: "none → awaitingPreflight", .cancel: "end cancelled → awaitingPreflight",
            .deadlinePassed: "none → awaitingPreflight",
        ],
        .adaptingPreflight: [
            .adapted: "startPreflight → preflighting", .fileFailed: "none → adaptingPreflight",
            .attemptEnded: "end transport -1001 → adaptingPreflight",
            .timedCheck: "end preflight -1001 → adaptingPreflight", .pause: "paused → paused",
            .resume: "none → adaptingPreflight", .cancel: "end cancelled → adaptingPreflight",
            .deadlinePassed: "end deadline 5 → adaptingPreflight",
        ],
        .preflighting: [
            .headRead: "interim → preflighting", .transferSucceeded: "preflightDone → awaitingMain",
            .transferFailed: "waitToRetry → waitingToRetry", .fileFailed: "none → preflighting",
            .attemptEnded: "end transport -1001 → preflighting",
            .timedCheck: "preflightDone after transport -1001 → awaitingMain", .pause: "paused → paused",
            .resume: "none → preflighting", .cancel: "end cancelled → preflighting",
            .deadlinePassed: "end deadline 5 → preflighting",
        ],
        .awaitingMain: [
            .granted: "startTransfer first → running", .grantedWithHooks: "adapt → adaptingMain",
            .fileFailed: "none → awaitingMain", .attemptEnded: "end transport -1001 → awaitingMain",
            .pause: "paused → paused", .resume: "none → awaitingMain", .cancel: "end cancelled → awaitingMain",
            // The HEAD's deadline ended with it.
            .deadlinePassed: "none → awaitingMain",
        ],
        .adaptingMain: [
            .adapted: "startTransfer first → running", .fileFailed: "none → adaptingMain",
            .attemptEnded: "waitToRetry → waitingToRetry", .timedCheck: "end transport -1001 → adaptingMain",
            .pause: "paused → paused", .resume: "none → adaptingMain", .cancel: "end cancelled → adaptingMain",
            .deadlinePassed: "end deadline 5 → adaptingMain",
        ],
        .running: [
            .headRead: "read fresh 3 → running", .bodyPiece: "none → running",
            .transferSucceeded: "end transport -1011 → running", .transferFailed: "waitToRetry → waitingToRetry",
            .fileOpened: "none → running", .fileFailed: "end file → running",
            .attemptEnded: "waitToRetry → waitingToRetry",
            .timedCheck: "end transport -1001 → running", .pause: "paused stopping → paused",
            .resume: "none → running", .cancel: "end cancelled → running", .deadlinePassed: "end deadline 5 → running",
        ],
        .deciding: [
            .fileFailed: "none → deciding", .attemptEnded: "end transport -1001 → deciding",
            .retryDecided: "end transport -1001 → deciding", .timedCheck: "end transport -1001 → deciding",
            .pause: "paused → paused", .resume: "none → deciding", .cancel: "end cancelled → deciding",
            .deadlinePassed: "end deadline 5 → deciding",
        ],
        .waitingToRetry: [
            .fileFailed: "none → waitingToRetry", .attemptEnded: "end transport -1001 → waitingToRetry",
            .retryTime: "rejoin → pending", .pause: "paused → paused", .resume: "none → waitingToRetry",
            .cancel: "end cancelled → waitingToRetry", .deadlinePassed: "end deadline 5 → waitingToRetry",
        ],
        .committing: [
            .fileFailed: "none → committing", .fileCommitted: "end success → committing",
            .attemptEnded: "end transport -1001 → committing", .pause: "none → committing",
            .resume: "none → committing", .cancel: "none → committing", .deadlinePassed: "none → committing",
        ],
        .following: [
            .fileFailed: "none → following", .attemptEnded: "end transport -1001 → following",
            .pause: "none → following", .resume: "none → following", .follow: "none → following",
            .inherit: "none → pending", .cancel: "end cancelled → following", .deadlinePassed: "none → following",
        ],
        .paused: [
            .fileFailed: "none → paused", .attemptEnded: "end transport -1001 → paused", .pause: "none → paused",
            .resume: "resumed → pending", .cancel: "end cancelled → paused", .deadlinePassed: "none → paused",
        ],
    ]

    static var legalPairs: [(Phase, Event)] {
        Phase.allCases.flatMap { phase in Event.allCases.filter { legal[phase]?[$0] != nil }.map { (phase, $0) } }
    }

    static var illegalPairs: [(Phase, Event)] {
        Phase.allCases.flatMap { phase in Event.allCases.filter { legal[phase]?[$0] == nil }.map { (phase, $0) } }
    }

    @Test(arguments: legalPairs) func aLegalEventDoesExactlyWhatTheTableSays(_ phase: Phase, _ event: Event) throws {
        let bench = try Bench()
        var machine = try bench.make(phase)
        #expect(bench.apply(event, to: &machine) == Self.legal[phase]![event]!)
    }

    @Test(arguments: illegalPairs) func anIllegalEventStopsTheProcess(_ phase: Phase, _ event: Event) async {
        await #expect(processExitsWith: .failure) { [phase = phase as Phase, event = event as Event] in
            let bench = try Bench()
            var machine = try bench.make(phase)
            _ = bench.apply(event, to: &machine)
        }
    }

    @Test func theTableNamesEveryPhaseAndHasBothKindsOfEvent() {
        #expect(Set(Self.legal.keys) == Set(Phase.allCases))
        #expect(Self.legalPairs.count == 99)
        #expect(Self.illegalPairs.count == Phase.allCases.count * Event.allCases.count - 99)
    }

    @Test func eachPhaseIsReachedAndHoldsWhatItShould() throws {
        let bench = try Bench()
        var held: [String] = []
        var shown: [String] = []
        for phase in Phase.allCases {
            let machine = try bench.make(phase)
            let holdings = machine.phase.holdings
            var parts = [machine.phase.name]
            if holdings.mainLane { parts.append("main") }
            if holdings.preflightLane { parts.append("preflight") }
            if holdings.runsTransfers { parts.append("transfer") }
            if holdings.retryWait { parts.append("retryWait") }
            if holdings.committing { parts.append("committing") }
            if let leader = holdings.leader { parts.append("leader \(leader)") }
            held.append(parts.joined(separator: " "))
            let state = machine.phase
            shown.append(
                "\(state.token == nil ? "-" : "token") \(state.isTimed ? "timed" : "-") \(state.shown.state)"
                    + (state.endsAlone ? " alone" : ""))
        }
        #expect(
            held == [
                "pending main", "awaitingPreflight main preflight", "adaptingPreflight main preflight",
                "preflighting main preflight transfer", "awaitingMain main", "adaptingMain main",
                "running main transfer", "deciding", "waitingToRetry retryWait", "committing committing",
                "following leader 2", "paused",
            ])
        #expect(
            shown == [
                "- - pending", "- - pending", "token timed preflighting alone", "token timed preflighting alone",
                "- - pending", "token timed running alone", "token timed running alone",
                "token timed waitingToRetry alone", "token - waitingToRetry alone", "token - running",
                "- - pending alone",
                "- - paused alone",
            ])
    }

    @Test func anAttemptIsCountedWhenItGetsItsSlotAndUncountedWhenPaused() throws {
        let bench = try Bench()
        var machine = try bench.make(.running)
        #expect(machine.attempts == 1 && machine.hasStarted && machine.startedAt == 1)
        _ = machine.handle(.pause, of: bench.request, now: 2)
        #expect(machine.attempts == 0)
        _ = machine.handle(.resume, of: bench.request, now: 3)
        var shared = RequestMachine.Shared(nextToken: 100, jitter: JitterSource(seed: 1))
        guard
            case .startTransfer(_, let first, nil) = machine.handle(
                .granted(.main, hooks: false, sending: .request(bench.sent), expectedBefore: nil, deadline: 5),
                of: bench.request, &shared, now: 5)
        else {
            Issue.record("no transfer after resuming")
            return
        }
        // Once per request: the resumed transfer is not a new start to the delegate.
        #expect(!first && machine.attempts == 1 && machine.startedAt == 1 && shared.nextToken == 101)
    }

    @Test func aRefusedRangeSendsTheSameRequestAgainAsANewAttemptInTheSameSlot() throws {
        let bench = try Bench()
        var machine = try bench.make(.running)
        let refused = machine.phase.attempt!
        refused.continuedFrom = 100
        var shared = RequestMachine.Shared(nextToken: 50, jitter: JitterSource(seed: 1))
        let reading = HeadReading(bench.head(416), continuedFrom: 100, acceptableStatusCodes: nil)
        let action = machine.headRead(
            reading, of: bench.request, received: 0, existingFile: nil, expectedBefore: 7, wallClock: Date(), &shared,
            now: 9)
        guard case .refusedRange(100, .startTransfer(let attempt, false, let replacing?)) = action else {
            Issue.record("not sent again: \(action)")
            return
        }
        #expect(replacing === refused && attempt !== refused && attempt.token == 51)
        #expect(attempt.continuedFrom == 0 && attempt.expectedBefore == 7 && attempt.startedAt == 9)
        #expect(machine.phase.attempt === attempt && machine.attempts == 1)
    }

    /// Issue 50, item 1: a HEAD that failed (or timed out) asks the next mirror while one is left, as a new HEAD of
    /// the same request (a new token, the same request sent); with none left, it is an attempt of its request (issue
    /// 71): here past the request's deadline, so it goes on to its GET with its size unknown, never failing it.
    @Test(arguments: [false, true]) func aFailedHeadAsksTheNextMirrorThenGoesOnToItsGet(_ timesOut: Bool) throws {
        let bench = try Bench()
        var machine = try bench.make(.preflighting)
        let mirrors = [URL(string: "http://m1.test/a")!, URL(string: "http://m2.test/a")!]
        let request = NetworkRequest(bench.sent, fileOptions: .init(mirrors: mirrors))
        var shared = RequestMachine.Shared(nextToken: 20, jitter: JitterSource(seed: 1), retryPolicy: bench.policy)
        var now = 0.0
        func fail() -> RequestMachine.Action {
            now += 100
            if timesOut { return machine.handle(.timedCheck(idle: 10, speed: nil), of: request, &shared, now: now) }
            return machine.handle(
                .transferEnded(
                    .failed(URLError(.cannotConnectToHost)), received: 0, file: nil, checksExistingFile: false,
                    metrics: nil, expectedBefore: nil), of: request, &shared, now: now)
        }
        var sources: [Int] = []
        for _ in 0..<2 {
            let action = fail()
            guard case .startPreflight(let preflight) = action else {
                Issue.record("no next HEAD: \(action)")
                return
            }
            let token = shared.nextToken
            #expect(preflight.sent.url == bench.sent.url && preflight.token == token && machine.phase.token == token)
            sources.append(preflight.location)
        }
        #expect(sources == [1, 2] && shared.nextToken == 22)
        let last = fail()
        guard case .preflightDone(.transport(let error)?) = last else {
            Issue.record("not gone on to its GET: \(last)")
            return
        }
        #expect(error.code == (timesOut ? .timedOut : .cannotConnectToHost) && machine.phase.name == "awaitingMain")
    }

    /// Issue 71: a HEAD is an attempt of its request. Refused, reset, timed out or answered with a status the policy
    /// retries, it waits out the policy's backoff (a `Retry-After` when its response gave one) and is sent again as a
    /// HEAD; when the policy allows no more, the request goes on to its GET with its size unknown, its GET's own budget
    /// whole. A status the policy does not retry (501) is a HEAD answered: the size is unknown, no retry.
    @Test func aFailedHeadIsRetriedUnderItsPolicyThenItsGetGoesOnWithItsWholeBudget() throws {
        let bench = try Bench()
        var machine = RequestMachine()
        var shared = RequestMachine.Shared(jitter: JitterSource(seed: 3), retryPolicy: bench.policy)
        var now = 0.0
        func grantHead() -> RequestMachine.Action {
            machine.handle(
                .granted(.preflight, hooks: false, sending: .request(bench.sent), expectedBefore: nil, deadline: 600),
                of: bench.request, &shared, now: now)
        }
        func endHead(_ outcome: RequestMachine.TransferOutcome) -> RequestMachine.Action {
            machine.handle(
                .transferEnded(
                    outcome, received: 0, file: nil, checksExistingFile: false, metrics: nil, expectedBefore: nil),
                of: bench.request, &shared, now: now)
        }
        _ = machine.handle(.planPreflight, of: bench.request, now: 0)
        _ = grantHead()
        // Refused: the first retry waits at most the backoff's first bound (1 s), as a HEAD.
        guard
            case .waitToRetry(let first, let delay, .transport(let refused), nil) = endHead(
                .failed(URLError(.cannotConnectToHost)))
        else {
            Issue.record("the refused HEAD was not retried")
            return
        }
        #expect(
            first.preflight && (0...1).contains(delay) && refused.code == .cannotConnectToHost)
        now += 1
        #expect(
            bench.describe(machine.handle(.retryTimeCame, of: bench.request, now: 0)) == "rejoin"
                && machine.phase.name == "awaitingPreflight")
        // A 503 asking for 7 s: waited as asked.
        _ = grantHead()
        let busy = ResponseHead(
            url: bench.sent.url!, statusCode: 503, httpVersion: "HTTP/1.1",
            fields: [.init(name: "Retry-After", value: "7")])
        _ = machine.headRead(
            HeadReading(busy, continuedFrom: 0, acceptableStatusCodes: nil), of: bench.request, received: 0,
            existingFile: nil, expectedBefore: nil, wallClock: Date(), &shared, now: now)
        guard case .waitToRetry(let second, 7, .unacceptableStatus(503, _), nil) = endHead(.succeeded) else {
            Issue.record("the 503 HEAD was not retried after its Retry-After")
            return
        }
        #expect(second.preflight && second.serverAsked && machine.attempts == 0)
        now += 7
        _ = machine.handle(.retryTimeCame, of: bench.request, now: 0)
        // The third HEAD is reset: three attempts spent, the request goes on to its GET, its size unknown.
        _ = grantHead()
        let third = endHead(.failed(URLError(.networkConnectionLost)))
        #expect(bench.describe(third) == "preflightDone after transport -1005" && machine.phase.name == "awaitingMain")
        // Its GET has its own three attempts: a lost connection waits to retry.
        _ = machine.handle(
            .granted(.main, hooks: false, sending: .request(bench.sent), expectedBefore: nil, deadline: 600),
            of: bench.request, &shared, now: now)
        let get = machine.handle(
            .transferEnded(
                .failed(URLError(.networkConnectionLost)), received: 0, file: nil, checksExistingFile: false,
                metrics: nil, expectedBefore: nil), of: bench.request, &shared, now: now)
        #expect(bench.describe(get) == "waitToRetry" && machine.attempts == 1)
    }

    /// Issue 71: a HEAD answered 501 (not retried by the policy) is answered: no retry, its size unknown; a HEAD of a
    /// request whose policy has a closure is not retried either (the closure judges the GET's attempts).
    @Test func aHeadNotRetriedGoesOnToItsGet() throws {
        let bench = try Bench()
        for (policy, status) in [(bench.policy, 501), (bench.asking, 503)] {
            var machine = RequestMachine()
            var shared = RequestMachine.Shared(jitter: JitterSource(seed: 3), retryPolicy: policy)
            _ = machine.handle(.planPreflight, of: bench.request, now: 0)
            _ = machine.handle(
                .granted(.preflight, hooks: false, sending: .request(bench.sent), expectedBefore: nil, deadline: nil),
                of: bench.request, &shared, now: 0)
            _ = machine.headRead(
                HeadReading(bench.head(status), continuedFrom: 0, acceptableStatusCodes: nil), of: bench.request,
                received: 0, existingFile: nil, expectedBefore: nil, wallClock: Date(), &shared, now: 0)
            let ended = machine.handle(
                .transferEnded(
                    .succeeded, received: 0, file: nil, checksExistingFile: false, metrics: nil, expectedBefore: nil),
                of: bench.request, &shared, now: 0)
            let expected =
                status == 501 ? "preflightDone" : "preflightDone after HTTP status 503 from http://example.test/a"
            #expect(bench.describe(ended) == expected, "\(status)")
            #expect(machine.phase.name == "awaitingMain")
        }
    }

    /// Issue 71: a HEAD or attempt whose server is held waits with the server's others: its try not counted, its
    /// phase a wait the coordinator ends at once (the scheduler holds it), back to the lane it left.
    @Test func aTryOfAHeldServerIsNotCountedAndWaitsInItsLane() throws {
        let bench = try Bench()
        for preflight in [true, false] {
            var machine = try bench.make(preflight ? .preflighting : .running)
            var shared = RequestMachine.Shared(jitter: JitterSource(seed: 3), retryPolicy: bench.policy)
            let attemptsBefore = machine.attempts
            guard case .held(let wait, let left) = machine.handle(.heldByServer, of: bench.request, &shared, now: 2)
            else {
                Issue.record("not held")
                return
            }
            // The `.held` action (not `.waitToRetry`) says it waits for its server, not for a retry of its own.
            #expect(wait.serverAsked && wait.preflight == preflight && (left == nil) == preflight)
            #expect(machine.attempts == (preflight ? attemptsBefore : attemptsBefore - 1))
            _ = machine.handle(.retryTimeCame, of: bench.request, now: 0)
            #expect(machine.phase.name == (preflight ? "awaitingPreflight" : "pending"))
        }
    }

    @Test func anAttemptsTransfersAreKeptInOrderAndFoundByIdentity() {
        let (first, second, other) = (TransferCell.makeCell(), TransferCell.makeCell(), TransferCell.makeCell())
        var transfers = Transfers()
        #expect(transfers.first == nil && Array(transfers).isEmpty)
        transfers.insert(first)
        transfers.insert(second)
        #expect(transfers.first === first)
        #expect(Array(transfers).map(ObjectIdentifier.init) == [first, second].map(ObjectIdentifier.init))
        #expect(transfers.contains(second) && !transfers.contains(other))
    }

    @Test func aMachineStaysSmallForEveryWaitingRequestOfABatch() {
        // The phase (a tag and one word), the flag and the attempt count behind its tag, the last activity, the
        // first start, and the deadline clock (a word and a tag): 41 bytes on 64-bit platforms.
        #expect(MemoryLayout<RequestMachine>.size <= 41)
    }

    @Test func theTimerWaitsUntilTheWholeIdleTimeoutPassed() throws {
        let bench = try Bench()
        var machine = try bench.make(.running)
        machine.touched(at: 40)
        let token = machine.phase.token!
        var shared = RequestMachine.Shared(jitter: JitterSource(seed: 1))
        guard
            case .waitUntil(50, token) = machine.handle(
                .timedCheck(idle: 10, speed: nil), of: bench.request, &shared, now: 45)
        else {
            Issue.record("not waiting")
            return
        }
        #expect(machine.phase.name == "running")
    }
}

/// The inputs every event is given, and the way to each phase.
struct Bench {
    let sent = URLRequest(url: URL(string: "http://example.test/a")!)
    let request: NetworkRequest
    /// Three attempts, a backoff, and (for `deciding`) a closure to ask.
    let policy = RetryPolicy(maximumAttempts: 3)
    let asking = RetryPolicy(maximumAttempts: 3, decide: { _, _, _ in .useDefault })
    let failure = NetworkQueueError.transport(URLError(.timedOut))

    init() throws {
        request = NetworkRequest(URLRequest(url: URL(string: "http://example.test/a")!))
    }

    func head(_ status: Int, length: Int = 3) -> ResponseHead {
        ResponseHead(
            url: sent.url!, statusCode: status, httpVersion: "HTTP/1.1",
            fields: [.init(name: "Content-Length", value: "\(length)")])
    }

    /// A new machine brought to `phase` by events alone.
    func make(_ phase: RequestMachineTests.Phase) throws -> RequestMachine {
        var machine = RequestMachine()
        var shared = RequestMachine.Shared(jitter: JitterSource(seed: 1), retryPolicy: policy)
        func grant(_ lane: Scheduler.Lane, hooks: Bool) {
            _ = machine.handle(
                .granted(lane, hooks: hooks, sending: .request(sent), expectedBefore: nil, deadline: 5), of: request,
                &shared, now: 1)
        }
        switch phase {
        case .pending: break
        case .awaitingPreflight: _ = machine.handle(.planPreflight, of: request, now: 0)
        case .adaptingPreflight:
            _ = machine.handle(.planPreflight, of: request, now: 0)
            grant(.preflight, hooks: true)
        case .preflighting, .awaitingMain:
            _ = machine.handle(.planPreflight, of: request, now: 0)
            grant(.preflight, hooks: false)
            if phase == .awaitingMain {
                _ = machine.handle(
                    .transferEnded(
                        .succeeded, received: 0, file: nil, checksExistingFile: false, metrics: nil, expectedBefore: nil
                    ), of: request, &shared, now: 1)
            }
        case .adaptingMain: grant(.main, hooks: true)
        case .running, .deciding, .waitingToRetry, .committing:
            grant(.main, hooks: false)
            if phase == .deciding || phase == .waitingToRetry {
                shared.retryPolicy = phase == .deciding ? asking : policy
                _ = machine.handle(.attemptEnded(failure), of: request, &shared, now: 1)
            }
            if phase == .committing {
                let reading = HeadReading(head(200), continuedFrom: 0, acceptableStatusCodes: nil)
                _ = machine.headRead(
                    reading, of: request, received: 0, existingFile: nil, expectedBefore: nil, wallClock: Date(),
                    &shared, now: 1)
                let (sink, url) = try Self.sink()
                _ = machine.handle(.file(.opened(sink), file: url, metrics: nil), of: request, &shared, now: 1)
                _ = machine.handle(
                    .transferEnded(
                        .succeeded, received: 3, file: url, checksExistingFile: false, metrics: nil, expectedBefore: nil
                    ), of: request, &shared, now: 1)
            }
        case .following: _ = machine.handle(.follow(leader: 2), of: request, now: 0)
        case .paused: _ = machine.handle(.pause, of: request, now: 1)
        }
        guard machine.phase.name == phase.rawValue else { throw BenchError.notReached(phase.rawValue) }
        return machine
    }

    /// A part file of a claimed destination in a directory of its own, removed at once (the open descriptor
    /// keeps the file until the sink is dropped).
    static func sink() throws -> (FileSink, URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("machine-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("file")
        guard let claim = DestinationClaim.claim(url), let sink = try FileSink(claim: claim, continuing: false) else {
            throw BenchError.notReached("a file")
        }
        return (sink, url)
    }

    /// Applies `event` with its fixed inputs; returns the action and the phase after it.
    func apply(_ event: RequestMachineTests.Event, to machine: inout RequestMachine) -> String {
        var shared = RequestMachine.Shared(nextToken: 1_000, jitter: JitterSource(seed: 2), retryPolicy: policy)
        let said: String
        switch event {
        case .granted, .grantedHead, .grantedWithHooks:
            said = describe(
                machine.handle(
                    .granted(
                        event == .grantedHead ? .preflight : .main, hooks: event == .grantedWithHooks,
                        sending: .request(sent), expectedBefore: nil, deadline: 5), of: request, &shared, now: 2))
        case .adapted:
            said = describe(machine.handle(.adapted(.success(sent), expectedBefore: nil), of: request, &shared, now: 2))
        case .headRead:
            let reading = HeadReading(head(200), continuedFrom: 0, acceptableStatusCodes: nil)
            switch machine.headRead(
                reading, of: request, received: 0, existingFile: nil, expectedBefore: nil, wallClock: Date(), &shared,
                now: 2)
            {
            case .interim: said = "interim"
            case .refusedRange: said = "refusedRange"
            case .read(let continuation, let length, _, let problem):
                said = "read \(continuation) \(length.map(String.init) ?? "-")\(problem == nil ? "" : " problem")"
            }
        case .bodyPiece:
            said = describe(
                machine.handle(.bodyPiece(keeping: Data([1, 2, 3]), received: 3), of: request, &shared, now: 2))
        case .transferSucceeded, .transferFailed:
            said = describe(
                machine.handle(
                    .transferEnded(
                        event == .transferSucceeded ? .succeeded : .failed(URLError(.networkConnectionLost)),
                        received: 0, file: nil, checksExistingFile: false, metrics: nil, expectedBefore: nil),
                    of: request, &shared, now: 2))
        case .fileOpened:
            guard let (sink, url) = try? Self.sink() else { return "no file" }
            said = describe(machine.handle(.file(.opened(sink), file: url, metrics: nil), of: request, &shared, now: 2))
        case .fileFailed:
            let failed = NetworkQueueError.fileError(path: "/x", reason: "full")
            said = describe(
                machine.handle(.file(.failed(failed), file: nil, metrics: nil), of: request, &shared, now: 2))
        case .fileCommitted:
            said = describe(
                machine.handle(.file(.committed(nil), file: nil, metrics: nil), of: request, &shared, now: 2))
        case .attemptEnded:
            said = describe(machine.handle(.attemptEnded(failure), of: request, &shared, now: 2))
        case .retryDecided:
            said = describe(machine.handle(.retryDecided(.doNotRetry), of: request, &shared, now: 2))
        case .timedCheck:
            said = describe(machine.handle(.timedCheck(idle: 10, speed: nil), of: request, &shared, now: 100))
        case .retryTime: said = describe(machine.handle(.retryTimeCame, of: request, now: 0))
        case .deadlinePassed:
            said = describe(machine.handle(.deadlinePassed(seconds: 5, url: nil), of: request, now: 100))
        case .planPreflight: said = describe(machine.handle(.planPreflight, of: request, now: 0))
        case .pause: said = describe(machine.handle(.pause, of: request, now: 2))
        case .resume: said = describe(machine.handle(.resume, of: request, now: 2))
        case .follow: said = describe(machine.handle(.follow(leader: 2), of: request, now: 0))
        case .inherit: said = describe(machine.handle(.follow(leader: nil), of: request, now: 0))
        case .cancel: said = describe(machine.handle(.cancel, of: request, now: 0))
        }
        return "\(said) → \(machine.phase.name)"
    }

    func describe(_ action: RequestMachine.Action) -> String {
        switch action {
        case .none: "none"
        case .adapt: "adapt"
        case .startPreflight: "startPreflight"
        case .startTransfer(_, let first, let replacing):
            "startTransfer" + (first ? " first" : "") + (replacing == nil ? "" : " replacing")
        case .askRetry: "askRetry"
        case .waitToRetry: "waitToRetry"
        case .commit: "commit"
        case .end(.success(let response)): "end success" + (response.keptExistingFile ? " kept" : "")
        case .end(.failure(let error)): "end " + describe(error)
        case .rejoin: "rejoin"
        case .waitUntil(let time, _): "waitUntil \(time)"
        case .preflightDone(let failure): "preflightDone" + (failure.map { " after " + describe($0) } ?? "")
        case .held(let wait, _): "held" + (wait.preflight ? " preflight" : "")
        case .paused(let stopped): "paused" + (stopped == nil ? "" : " stopping")
        case .resumed(let withPreflight): "resumed" + (withPreflight ? " withPreflight" : "")
        }
    }

    func describe(_ error: NetworkQueueError) -> String {
        if error.isCancellation { return "cancelled" }
        if case .transport(let underlying) = error { return "transport \(underlying.code.rawValue)" }
        if case .preflightFailed(let underlying) = error { return "preflight \(underlying.code.rawValue)" }
        if case .fileError = error { return "file" }
        if case .deadlineExceeded(let seconds, _) = error { return "deadline \(LogText.seconds(seconds))" }
        if case .tooSlow(let rate, _, _) = error { return "tooSlow \(rate)" }
        return "\(error)"
    }
}

enum BenchError: Error {
    case notReached(String)
}

extension RequestMachine {
    /// Decides `event` of `request` with what every machine draws on made afresh (the events that draw on nothing
    /// shared: a pause, a resume, a cancel, a retry's time, a HEAD planned, a leader followed, a deadline).
    mutating func handle(_ event: Event, of request: NetworkRequest, now: Double) -> Action {
        var shared = Shared(jitter: JitterSource(seed: 0))
        return handle(event, of: request, &shared, now: now)
    }
}
