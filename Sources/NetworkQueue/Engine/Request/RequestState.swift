import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One request's life inside the queue: a phase, carrying what only that phase has.
///
/// ```
/// pending ───────────────────────────────────────────────┐
///    │ go() with accurate progress                       ▼
///    └─► awaitingPreflight ─► [adaptingPreflight] ─► preflighting ─► awaitingMain
///                                                                         │
///   ┌─────────────────────────────────────────────────────────────────────┘
///   ▼
/// [adaptingMain] ─► running ─► committing ─► (ended)
///                      │ a failed attempt its retry policy allows again
///                      ├─► [deciding] ─► waitingToRetry ─► pending (its turn again)
/// ```
/// Every phase but `committing`, `following` and `paused` may be paused; `paused` goes back to `pending`, or
/// to `awaitingPreflight` when its HEAD had not finished. Every phase may end (the request leaves the table);
/// ``holdings`` says what it must release then.
///
/// Only a request's ``RequestMachine`` moves it from one phase to another, each event switching over every
/// phase; the coordinator (``QueueStateMachine``) reads what a phase holds to keep its lanes and counts in step.
enum RequestState {
    /// Waiting for a slot in the main lane; no HEAD planned. Next: adaptingMain, running, awaitingPreflight
    /// (go() with accurate progress), following (added as a duplicate), paused.
    case pending
    /// Waiting for a slot in the preflight lane (and listed in the main lane too). Next: adaptingPreflight,
    /// preflighting, paused.
    case awaitingPreflight
    /// Its HEAD request runs. Next: awaitingMain, paused.
    case preflighting(Preflight)
    /// Its HEAD finished; waiting for a slot for the transfer itself. Next: adaptingMain, running, paused.
    case awaitingMain
    /// Its adapt hooks run before its HEAD (holding the slot). Next: preflighting, paused.
    case adaptingPreflight(token: UInt64)
    /// Its adapt hooks run before its transfer (holding the slot). Next: running, deciding, waitingToRetry,
    /// paused.
    case adaptingMain(token: UInt64)
    /// Its transfer runs. Next: running (sent again without a range), committing, deciding, waitingToRetry,
    /// paused.
    case running(Attempt)
    /// An attempt failed; the retry policy's closure decides whether it is sent again. Next: waitingToRetry,
    /// paused.
    case deciding(Decision)
    /// An attempt failed; it waits for its retry time (or an early retry), holding no slot. Next: pending,
    /// paused.
    case waitingToRetry(RetryWait)
    /// Its transfer succeeded and its file is being moved into place: only its end follows.
    case committing(Attempt)
    /// A duplicate coalesced onto the request in the slot `leader`: it holds no slot and ends with the
    /// leader's result, unless the leader is cancelled and hands it the work (next: pending).
    case following(leader: Int)
    /// Paused by the user: in no lane, holding no slot. Next: pending or awaitingPreflight.
    case paused(withPreflight: Bool)

    // The phases' data are objects, so that the state itself stays a tag and one word: every pending request
    // of a batch of millions holds one.

    /// A HEAD preflight's own data.
    final class Preflight {
        let token: UInt64
        let cell: TransferCell
        /// Which location the HEAD asks: 0 for the request's URL, k for its k-th mirror (a dead origin's
        /// mirrors are asked in turn).
        let location: Int
        /// The request the HEAD was made from (after the adapt hooks): a mirror's HEAD is made from it too.
        let sent: OutgoingRequest
        /// The HEAD's response, when it said the existing file is unchanged: the request ends with it.
        var unchangedHead: ResponseHead?
        /// Set when the HEAD's length is over the request's size limit: the request fails with it, sending no GET.
        var tooLarge: NetworkQueueError?
        /// Set when the HEAD's status is one its retry policy retries: the HEAD failed, as an attempt.
        var failure: NetworkQueueError?
        /// That failing response's `Retry-After`, in seconds.
        var retryAfter: Double?
        /// When the HEAD started (queue clock): a failed connect counts against its server only when it started after
        /// the server's last counted failure (see ``HostHealth``).
        let startedAt: Double

        init(token: UInt64, cell: TransferCell, location: Int = 0, sent: OutgoingRequest, startedAt: Double) {
            self.token = token
            self.cell = cell
            self.location = location
            self.sent = sent
            self.startedAt = startedAt
        }
    }

    /// The retry closure's question about a failed attempt.
    final class Decision {
        let token: UInt64
        let failure: NetworkQueueError
        /// The failed attempt's `Retry-After`, in seconds.
        let retryAfter: Double?
        /// The failed attempt's final head, still shown.
        let lastHead: ResponseHead?

        init(token: UInt64, failure: NetworkQueueError, retryAfter: Double?, lastHead: ResponseHead?) {
            self.token = token
            self.failure = failure
            self.retryAfter = retryAfter
            self.lastHead = lastHead
        }
    }

    /// A wait for the next attempt.
    final class RetryWait {
        let token: UInt64
        /// True while waiting out a `Retry-After` (never cut short by an early retry).
        let serverAsked: Bool
        /// The failed attempt's final head, still shown.
        let lastHead: ResponseHead?
        /// True when the HEAD is retried (the request waits in the preflight lane again).
        let preflight: Bool

        init(token: UInt64, serverAsked: Bool, lastHead: ResponseHead?, preflight: Bool = false) {
            self.token = token
            self.serverAsked = serverAsked
            self.lastHead = lastHead
            self.preflight = preflight
        }
    }

    /// What a phase holds: what leaving it (ending, pausing) must release.
    struct Holdings {
        /// Listed in, or holding a slot of, the scheduler's main lane.
        var mainLane = false
        /// Listed in, or holding a slot of, the preflight lane.
        var preflightLane = false
        /// True while transfers run (the HEAD, or the attempt's: see ``RequestState/transfers``).
        var runsTransfers = false
        /// Counted among the requests waiting to retry.
        var retryWait = false
        /// Counted among the requests whose file is being moved into place.
        var committing = false
        /// The slot of the leader it follows.
        var leader: Int?
    }

    // MARK: Queries

    /// The phase's name, for precondition messages and tests.
    var name: String {
        switch self {
        case .pending: "pending"
        case .awaitingPreflight: "awaitingPreflight"
        case .preflighting: "preflighting"
        case .awaitingMain: "awaitingMain"
        case .adaptingPreflight: "adaptingPreflight"
        case .adaptingMain: "adaptingMain"
        case .running: "running"
        case .deciding: "deciding"
        case .waitingToRetry: "waitingToRetry"
        case .committing: "committing"
        case .following: "following"
        case .paused: "paused"
        }
    }

    /// The token of what the request waits for now (a transfer, hooks, a decision, a retry time); events
    /// carrying another token are stale.
    var token: UInt64? {
        switch self {
        case .preflighting(let preflight): preflight.token
        case .adaptingPreflight(let token), .adaptingMain(let token): token
        case .running(let attempt), .committing(let attempt): attempt.token
        case .deciding(let decision): decision.token
        case .waitingToRetry(let wait): wait.token
        case .pending, .awaitingPreflight, .awaitingMain, .following, .paused: nil
        }
    }

    /// True while the request's `timeoutInterval` bounds what it waits for: a transfer, its adapt hooks or
    /// the retry policy's closure.
    var isTimed: Bool {
        switch self {
        case .preflighting, .adaptingPreflight, .adaptingMain, .running, .deciding: true
        case .pending, .awaitingPreflight, .awaitingMain, .waitingToRetry, .committing, .following, .paused: false
        }
    }

    /// True when a user's cancel ends the request (``RequestMachine/Event/cancel``): unless its file is being moved into
    /// place.
    var endsWhenCancelled: Bool { if case .committing = self { false } else { true } }

    /// True when the request is not merely waiting in the scheduler's lanes: a bulk end must end it one
    /// by one (committing requests excepted: they end on their own).
    var endsAlone: Bool {
        switch self {
        case .running, .preflighting, .adaptingPreflight, .adaptingMain, .deciding, .waitingToRetry, .following,
            .paused:
            true
        case .pending, .awaitingPreflight, .awaitingMain, .committing: false
        }
    }

    /// True when `other` is this very phase: the same case carrying the same object or value. A cheap check that an
    /// event moved nothing (most body pieces and heads), so that nothing of the request's holdings need be compared.
    func isSame(as other: RequestState) -> Bool {
        switch (self, other) {
        case (.pending, .pending), (.awaitingPreflight, .awaitingPreflight), (.awaitingMain, .awaitingMain): true
        case (.preflighting(let one), .preflighting(let two)): one === two
        case (.running(let one), .running(let two)), (.committing(let one), .committing(let two)): one === two
        case (.adaptingPreflight(let one), .adaptingPreflight(let two)),
            (.adaptingMain(let one), .adaptingMain(let two)):
            one == two
        case (.deciding(let one), .deciding(let two)): one === two
        case (.waitingToRetry(let one), .waitingToRetry(let two)): one === two
        case (.following(let one), .following(let two)): one == two
        case (.paused(let one), .paused(let two)): one == two
        case (.pending, _), (.awaitingPreflight, _), (.preflighting, _), (.awaitingMain, _), (.adaptingPreflight, _),
            (.adaptingMain, _), (.running, _), (.deciding, _), (.waitingToRetry, _), (.committing, _), (.following, _),
            (.paused, _):
            false
        }
    }

    /// The running attempt (nil in any other phase).
    var attempt: Attempt? {
        if case .running(let attempt) = self { return attempt }
        return nil
    }

    /// What the public status shows of this phase, read in one pass: the state, the final head (the current
    /// attempt's, or the failed one's while it waits) and the body size that head announced.
    var shown: (state: NetworkRequest.State, head: ResponseHead?, announcedLength: Int64?) {
        switch self {
        case .running(let attempt), .committing(let attempt): (.running, attempt.head, attempt.announcedLength)
        case .deciding(let decision): (.waitingToRetry, decision.lastHead, nil)
        case .waitingToRetry(let wait): (.waitingToRetry, wait.lastHead, nil)
        case .pending, .awaitingPreflight, .awaitingMain, .following: (.pending, nil, nil)
        case .preflighting, .adaptingPreflight: (.preflighting, nil, nil)
        case .adaptingMain: (.running, nil, nil)
        case .paused: (.paused, nil, nil)
        }
    }

    /// The transfers the phase runs: the HEAD's, or the attempt's.
    var transfers: Transfers {
        switch self {
        case .preflighting(let preflight): Transfers(preflight.cell)
        case .running(let attempt): attempt.transfers
        case .pending, .awaitingPreflight, .awaitingMain, .adaptingPreflight, .adaptingMain, .deciding,
            .waitingToRetry, .committing, .following, .paused:
            Transfers()
        }
    }

    /// What the phase holds (see ``Holdings``).
    var holdings: Holdings {
        switch self {
        case .pending, .awaitingMain, .adaptingMain: Holdings(mainLane: true)
        case .awaitingPreflight, .adaptingPreflight: Holdings(mainLane: true, preflightLane: true)
        case .preflighting: Holdings(mainLane: true, preflightLane: true, runsTransfers: true)
        case .running: Holdings(mainLane: true, runsTransfers: true)
        case .waitingToRetry: Holdings(retryWait: true)
        case .committing: Holdings(committing: true)
        case .following(let leader): Holdings(leader: leader)
        case .deciding, .paused: Holdings()
        }
    }
}
