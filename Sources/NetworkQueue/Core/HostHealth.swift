import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What the queue does about a server that stops answering connects (see ``NetworkQueue/deadHosts``, DESIGN
/// semantics 24): after ``failuresInARow`` failed connects or name lookups with no answer between, the server is down
/// and its requests are *held*: none takes a slot or sends anything (as in a 429 hold), and the requests that were
/// connecting when it went down join them without spending an attempt. One request at a time probes it, on the retry
/// policy's schedule: the first after the policy's first backoff (``RetryPolicy/Backoff/bound(forRetry:)`` of 1, no
/// jitter), each next after the next bound, as many probes as the policy allows retries. Any response releases them
/// all. When every probe has failed, the server has stayed down for the whole window the policy would have given one
/// request (its backoffs and the probes' connect limits): the held requests end with
/// ``NetworkQueueError/hostDown(host:failures:)`` at their turn. From then on the server is judged as a circuit
/// breaker's half-open state judges: a request whose turn comes while a probe failed *lately* (within the policy's
/// first backoff, at least a second) ends at once, sending nothing; a later one probes the server alone and the
/// others wait for its verdict. The probes' spacing grows, doubling from that second up to ``coolDown``, so that a
/// request that comes before the next probe is due waits for it (taking no slot). A probe that is answered releases
/// every waiting request; one that fails ends them. So the retry budget is spent once per server, never once per
/// request: a restart shorter than the window loses nothing, a dead server costs one window for the whole batch and
/// a probe's connect for each later burst, and a server that is back is asked again at once. A request with mirrors
/// is never held or ended so: its machine tries them; the failed connects of its locations (its URL's, its mirrors',
/// a split file's every connection) count against each one's own server, so that a mirror that goes down holds the
/// requests whose own URL it is. Other servers go on throughout.
public struct DeadHosts: Sendable, Hashable {
    /// Whether servers are ever judged down. Default true.
    public var isEnabled: Bool
    /// The failed connects (or name lookups) in a row, with no response between, that make a server down; at
    /// least 1. A failure counts only when its attempt began at or after the last counted one, so that transfers
    /// that fail together (a broken connection, a loaded server's moment) count once: a server is down after this many
    /// rounds of new attempts failed. Default 3: one failure is a blip.
    public var failuresInARow: Int
    /// The longest spacing of a down server's probes once its hold window was spent, in seconds: the spacing doubles
    /// from the retry policy's first backoff (at least a second) after each failed probe, up to this. A request whose
    /// turn comes before the next probe is due waits for it. Values that are not finite and non-negative mean 60; a
    /// value below the first spacing leaves the spacing at the first. Default 60.
    public var coolDown: TimeInterval

    /// Judges no server down: each request fails, and is retried, on its own.
    public static let off = DeadHosts(isEnabled: false)

    /// Creates a policy; every parameter defaults as its property says.
    public init(isEnabled: Bool = true, failuresInARow: Int = 3, coolDown: TimeInterval = 60) {
        self.isEnabled = isEnabled
        self.failuresInARow = max(1, failuresInARow)
        self.coolDown = coolDown.isFinite && coolDown >= 0 ? coolDown : 60
    }
}

/// The books of ``DeadHosts``, by the scheduler's host numbers: each server's failed connects in a row, and whether it
/// is held (until its next probe), probed (by which slot), or down (its window spent). Pure: time and the retry policy
/// are parameters.
struct HostHealth {
    enum State: Equatable {
        /// Answering, or not failed often enough yet; `since`: when the last failure was counted.
        case up(failures: Int, since: Double)
        /// Held since `heldAt`: no request of it starts before `until`, when the next probes it as probe number `probe`
        /// of the `probes` its retry policy allows.
        case held(until: Double, probe: Int, probes: Int, failures: Int, heldAt: Double)
        /// The request in `slot` probes it (probe number `probe` of `probes`); the others wait for its verdict.
        /// `round`: 0 for a probe of the hold window, n for the n-th probe after the server was found down.
        case probing(slot: Int, probe: Int, probes: Int, failures: Int, heldAt: Double, round: Int)
        /// Down: its window was spent, or a probe after that failed, at `failedAt`. Its requests end at their turn
        /// until `quietUntil`; a request after it probes the server once `nextProbe` comes (waiting for it until
        /// then). `round`: the probes failed since the window was spent.
        case down(failedAt: Double, quietUntil: Double, nextProbe: Double, round: Int, failures: Int, heldAt: Double)
    }

    private var states: [Int: State] = [:]
    /// The servers held or probed now (for the progress, read at every snapshot: counted as states change, never by a
    /// scan of every server that failed a connect).
    private(set) var heldCount = 0
    /// The key (`scheme://host:port`) of each server that was held, said by the error its requests end with and by
    /// its hold's notices: kept here, so that each of them costs no search of the servers' numbers.
    private var keys: [Int: String] = [:]

    /// When each server watched since a connection to it was reset before its response (``watch(_:)``) last answered.
    private var answeredAt: [Int: Double] = [:]

    /// True when no server ever failed a connect and none is watched: nothing is looked up.
    var isEmpty: Bool { states.isEmpty && answeredAt.isEmpty }

    /// From now on, `host`'s answers are timed (``answered(_:since:)``): a connection to it was reset before its
    /// response came.
    mutating func watch(_ host: Int) {
        if answeredAt[host] == nil { answeredAt[host] = -.infinity }
    }

    /// True when `host`, watched, answered a response at or after `time` (an answer in the same instant, the same
    /// engine pass, counts: the server was answering as the attempt began).
    func answered(_ host: Int, since time: Double) -> Bool { (answeredAt[host] ?? -.infinity) >= time }

    /// The state of `host`.
    func state(of host: Int) -> State { states[host] ?? .up(failures: 0, since: -.infinity) }

    /// What a failed connect means.
    enum Failure: Equatable {
        /// Not down (yet): the request fails, or is retried, on its own.
        case counted
        /// The server is held: the request waits with its others, its attempt not spent, until `until` (the next
        /// probe). `wentDown`: this failure made it held; `probeFailed`: this was its probe, the window not yet spent.
        case held(wentDown: Bool, probeFailed: Bool, failures: Int, until: Double)
        /// The server is down, its window spent: the request ends with it. `heldFor`: set when this failure made it
        /// down (it spent the window, `round` 0, or it was the `round`-th probe since): the requests that waited for it
        /// end now; the seconds since the server was first held. `nextProbe`: when the next request may probe it.
        case down(failures: Int, heldFor: Double?, round: Int, nextProbe: Double)
    }

    /// The key of `host` as given when it was held (see ``connectFailed(_:key:slot:startedAt:policy:retry:now:)``).
    func key(of host: Int) -> String? { keys[host] }

    /// A connect of `host`'s request in `slot`, begun at `startedAt`, failed at `now`; `key` names the server (read only
    /// when it goes down); `retry` is the retry policy whose schedule its probes follow. While the server is up, a
    /// failure counts only when its attempt began at or after the last counted one: the transfers in flight when a
    /// connection breaks (a burst of one cause: a GOAWAY, a loaded server's moment) count once, and a server is down
    /// only after `failuresInARow` rounds of new attempts failed.
    mutating func connectFailed(
        _ host: Int, key: @autoclosure () -> String, slot: Int, startedAt: Double, policy: DeadHosts,
        retry: RetryPolicy, now: Double
    ) -> Failure {
        switch state(of: host) {
        case .up(let failures, let since):
            guard startedAt >= since else { return .counted }
            let count = failures + 1
            guard count >= policy.failuresInARow else {
                set(host, .up(failures: count, since: now))
                return .counted
            }
            if keys[host] == nil { keys[host] = key() }
            let probes = retry.maximumAttempts - 1
            guard probes > 0 else {
                // No retry allowed: the window is nothing, and the server is down at once.
                let nextProbe = setDown(
                    host, at: now, round: 0, failures: count, heldAt: now, policy: policy, retry: retry)
                return .down(failures: count, heldFor: 0, round: 0, nextProbe: nextProbe)
            }
            let until = now + retry.backoff.bound(forRetry: 1)
            set(host, .held(until: until, probe: 1, probes: probes, failures: count, heldAt: now))
            return .held(wentDown: true, probeFailed: false, failures: count, until: until)
        case .held(let until, let probe, let probes, let failures, let heldAt):
            set(host, .held(until: until, probe: probe, probes: probes, failures: failures + 1, heldAt: heldAt))
            return .held(wentDown: false, probeFailed: false, failures: failures + 1, until: until)
        case .probing(let probeSlot, let probe, let probes, let failures, let heldAt, let round):
            guard probeSlot == slot else {
                // A request that was connecting when the server went down: it waits with the others.
                set(
                    host,
                    .probing(
                        slot: probeSlot, probe: probe, probes: probes, failures: failures + 1, heldAt: heldAt,
                        round: round))
                return .held(wentDown: false, probeFailed: false, failures: failures + 1, until: .infinity)
            }
            guard probe < probes else {
                // The window's last probe, or a probe of a down server: down (again), its waiting requests end.
                let nextProbe = setDown(
                    host, at: now, round: round, failures: failures + 1, heldAt: heldAt, policy: policy, retry: retry)
                return .down(failures: failures + 1, heldFor: now - heldAt, round: round, nextProbe: nextProbe)
            }
            let until = now + retry.backoff.bound(forRetry: probe + 1)
            set(host, .held(until: until, probe: probe + 1, probes: probes, failures: failures + 1, heldAt: heldAt))
            return .held(wentDown: false, probeFailed: true, failures: failures + 1, until: until)
        case .down(let failedAt, let quietUntil, let nextProbe, let round, let failures, let heldAt):
            set(
                host,
                .down(
                    failedAt: failedAt, quietUntil: quietUntil, nextProbe: nextProbe, round: round,
                    failures: failures + 1, heldAt: heldAt))
            return .down(failures: failures + 1, heldFor: nil, round: round, nextProbe: nextProbe)
        }
    }

    /// Sets `host` down at `now` (its window spent, `round` 0, or its `round`-th probe since failed): its requests end
    /// at once for the policy's first backoff (at least a second), and its next probe is due after that spacing
    /// doubled `round` times, at most ``DeadHosts/coolDown`` (never less than the first spacing). Returns when.
    private mutating func setDown(
        _ host: Int, at now: Double, round: Int, failures: Int, heldAt: Double, policy: DeadHosts, retry: RetryPolicy
    ) -> Double {
        let first = retry.backoff.bound(forRetry: 1)
        let quiet = first.isFinite ? max(1, first) : 1
        let spacing = max(quiet, min(policy.coolDown, quiet * pow(2, Double(min(round, 62)))))
        set(
            host,
            .down(
                failedAt: now, quietUntil: now + quiet, nextProbe: now + spacing, round: round, failures: failures,
                heldAt: heldAt))
        return now + spacing
    }

    /// `host` answered (a response head) at `now`: it is up, its count starts over. Returns since when it was held, when
    /// it was held, probed or down (its hold is to end); nil when it was up.
    mutating func answered(_ host: Int, at now: Double) -> Double? {
        if answeredAt[host] != nil { answeredAt[host] = now }
        guard let state = states.removeValue(forKey: host) else { return nil }
        if Self.isHeld(state) { heldCount -= 1 }
        switch state {
        case .up: return nil
        case .held(_, _, _, _, let heldAt), .probing(_, _, _, _, let heldAt, _), .down(_, _, _, _, _, let heldAt):
            return heldAt
        }
    }

    /// What a request of a server that is not up does when its turn comes.
    enum Start: Equatable {
        /// It goes as any request: the server is held and its probe not due (the scheduler holds its others).
        case go
        /// It goes alone, as the server's probe: its others wait for its verdict.
        case probe
        /// The server is down and no probe is due before `until`: it waits for the next probe, taking no slot.
        case wait(until: Double)
        /// The server is down and a probe failed lately: it ends at once, with the failures counted against it.
        case fail(failures: Int)
    }

    /// The request in `slot` of `host` (not up) is given its turn at `now`: it probes a held server whose next probe
    /// is due, or a down server whose quiet time after its last failed probe is over and whose next probe is due; it
    /// waits for that probe when the quiet time is over and the probe is not due; it ends at once in the quiet time.
    mutating func starting(_ host: Int, slot: Int, now: Double) -> Start {
        switch state(of: host) {
        case .held(let until, let probe, let probes, let failures, let heldAt) where now >= until:
            set(host, .probing(slot: slot, probe: probe, probes: probes, failures: failures, heldAt: heldAt, round: 0))
            return .probe
        case .down(_, let quietUntil, let nextProbe, let round, let failures, let heldAt):
            if now < quietUntil { return .fail(failures: failures) }
            guard now >= nextProbe else { return .wait(until: nextProbe) }
            // Half-open: one probe; its failure makes the server down again, its next probe further off.
            set(
                host,
                .probing(slot: slot, probe: 1, probes: 1, failures: failures, heldAt: heldAt, round: round + 1))
            return .probe
        case .up, .held, .probing: return .go
        }
    }

    /// The probe in `slot` of `host` stopped without a verdict (cancelled, paused, ended otherwise): the next request
    /// to start probes it in its place. Returns true when `slot` was its probe.
    mutating func probeStopped(_ host: Int, slot: Int) -> Bool {
        guard case .probing(let probe, let number, let probes, let failures, let heldAt, let round) = state(of: host),
            probe == slot
        else { return false }
        if round > 0 {
            // A down server's probe: the next request to come probes it at once.
            set(
                host,
                .down(
                    failedAt: -.infinity, quietUntil: -.infinity, nextProbe: -.infinity, round: round - 1,
                    failures: failures, heldAt: heldAt))
        } else {
            set(host, .held(until: -.infinity, probe: number, probes: probes, failures: failures, heldAt: heldAt))
        }
        return true
    }

    /// True when `host` is held, probed or down: a request of it that fails to connect waits or ends with it.
    func isDown(_ host: Int) -> Bool {
        if case .up = state(of: host) { return false }
        return true
    }

    /// Sets the state of `host`, keeping ``heldCount``.
    private mutating func set(_ host: Int, _ state: State) {
        let wasHeld = states.updateValue(state, forKey: host).map(Self.isHeld) ?? false
        heldCount += (Self.isHeld(state) ? 1 : 0) - (wasHeld ? 1 : 0)
    }

    /// True for a held or probed server.
    private static func isHeld(_ state: State) -> Bool {
        switch state {
        case .held, .probing: true
        case .up, .down: false
        }
    }

    /// True when some server is held or probed, or down within ``DeadHosts/coolDown`` (`coolDown`) of its last failed
    /// probe at `now`: its number must keep its books.
    func hasDownServers(at now: Double, coolDown: Double) -> Bool {
        states.values.contains { state in
            switch state {
            case .up: false
            case .down(let failedAt, _, let nextProbe, _, _, _): max(nextProbe, failedAt + coolDown) > now
            case .held, .probing: true
            }
        }
    }

    /// Forgets every server (the host numbers start over).
    mutating func removeAll() {
        states.removeAll()
        answeredAt.removeAll()
        heldCount = 0
        keys.removeAll()
    }
}

/// Which failures are a server's connect failing: its name did not resolve, or nobody answered the connect in time.
enum DeadHostRules {
    /// True when `error` says the attempt never reached its server.
    static func isConnectFailure(_ error: URLError) -> Bool {
        switch error.code {
        case .cannotFindHost, .dnsLookupFailed, .cannotConnectToHost: true
        default: false
        }
    }
}
