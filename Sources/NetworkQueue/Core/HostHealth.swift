import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What the queue does about a server that stops answering connects (see ``NetworkQueue/deadHosts``): after
/// ``failuresInARow`` failed connects or name lookups with no answer between, the server is down. Its waiting requests
/// end with ``NetworkQueueError/hostDown(host:failures:)`` at their turn, taking no slot and sending nothing (a whole
/// line of them at once), and so does each of its requests whose turn comes during the ``coolDown``. The first whose turn comes after it goes alone, as a probe, the server's others waiting for
/// its verdict: an answer (any response) brings the server back, another failed connect ends the waiting ones again
/// and starts a new cool-down. A request with mirrors is never ended so: its machine tries them. Other servers go on
/// throughout.
public struct DeadHosts: Sendable, Hashable {
    /// Whether servers are ever judged down. Default true.
    public var isEnabled: Bool
    /// The failed connects (or name lookups) in a row, with no response between, that make a server down; at
    /// least 1. A failure counts only when its attempt began at or after the last counted one, so that transfers
    /// that fail together (a broken connection, a loaded server's moment) count once: a server is down after this many
    /// rounds of new attempts failed. Default 3: one failure is a blip, and a retry policy's attempts alone would take
    /// minutes.
    public var failuresInARow: Int
    /// How long a down server stays down before the next of its requests probes it, in seconds; values that are not
    /// finite and non-negative mean 60. Default 60.
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
/// is down (until when), or probed (by which slot). Pure: time is a parameter.
struct HostHealth {
    enum State: Equatable {
        /// Answering, or not failed often enough yet; `since`: when the last failure was counted.
        case up(failures: Int, since: Double)
        /// Down: its requests end at their turn until the cool-down ends (`until`); the first after it probes.
        case down(until: Double, failures: Int)
        /// The request in `slot` probes it; the others wait for its verdict.
        case probing(slot: Int, failures: Int)
    }

    private var states: [Int: State] = [:]
    /// The key (`scheme://host:port`) of each server that went down, said by the error its requests end with: kept
    /// here, so that each of them costs no search of the servers' numbers.
    private var keys: [Int: String] = [:]

    /// True when no server ever failed a connect: nothing is looked up.
    var isEmpty: Bool { states.isEmpty }

    /// The state of `host`.
    func state(of host: Int) -> State { states[host] ?? .up(failures: 0, since: -.infinity) }

    /// What a failed connect means.
    enum Failure: Equatable {
        /// Not down (yet): the request fails, or is retried, on its own.
        case counted
        /// The server is down now, after this many failures, until its cool-down ends at `until`: its waiting requests
        /// end.
        case wentDown(failures: Int, until: Double)
        /// The server was down already (a request that was connecting when it went down, or the probe): the request
        /// ends with it; a failed probe starts a new cool-down, to `until`.
        case isDown(failures: Int, until: Double?)
    }

    /// The key of `host` as given when it went down (see ``connectFailed(_:key:slot:startedAt:policy:now:)``).
    func key(of host: Int) -> String? { keys[host] }

    /// A connect of `host`'s request in `slot`, begun at `startedAt`, failed at `now`; `key` names the server (read only
    /// when it goes down). While the server is up, a
    /// failure counts only when its attempt began at or after the last counted one: the transfers in flight when a
    /// connection breaks (a burst of one cause: a GOAWAY, a loaded server's moment) count once, and a server is down
    /// only after `failuresInARow` rounds of new attempts failed.
    mutating func connectFailed(
        _ host: Int, key: @autoclosure () -> String, slot: Int, startedAt: Double, policy: DeadHosts, now: Double
    ) -> Failure {
        switch state(of: host) {
        case .up(let failures, let since):
            guard startedAt >= since else { return .counted }
            let count = failures + 1
            guard count >= policy.failuresInARow else {
                states[host] = .up(failures: count, since: now)
                return .counted
            }
            states[host] = .down(until: now + policy.coolDown, failures: count)
            if keys[host] == nil { keys[host] = key() }
            return .wentDown(failures: count, until: now + policy.coolDown)
        case .down(let until, let failures):
            states[host] = .down(until: until, failures: failures + 1)
            return .isDown(failures: failures + 1, until: nil)
        case .probing(let probe, let failures):
            guard probe == slot else {
                states[host] = .probing(slot: probe, failures: failures + 1)
                return .isDown(failures: failures + 1, until: nil)
            }
            states[host] = .down(until: now + policy.coolDown, failures: failures + 1)
            return .isDown(failures: failures + 1, until: now + policy.coolDown)
        }
    }

    /// `host` answered (a response head): it is up, its count starts over. Returns true when it was down or probed
    /// (its hold is to end).
    mutating func answered(_ host: Int) -> Bool {
        guard let state = states.removeValue(forKey: host) else { return false }
        if case .up = state { return false }
        return true
    }

    /// The request in `slot` of `host` may start at `now`: true when it is to be the probe of a server whose cool-down
    /// ended (the server's other requests then wait for its verdict).
    mutating func starting(_ host: Int, slot: Int, now: Double) -> Bool {
        guard case .down(let until, let failures) = state(of: host), now >= until else { return false }
        states[host] = .probing(slot: slot, failures: failures)
        return true
    }

    /// The probe in `slot` of `host` stopped without a verdict (cancelled, paused, ended otherwise): the server is down
    /// with its cool-down over, and the next request to start probes it. Returns true when `slot` was its probe.
    mutating func probeStopped(_ host: Int, slot: Int) -> Bool {
        guard case .probing(let probe, let failures) = state(of: host), probe == slot else { return false }
        states[host] = .down(until: -.infinity, failures: failures)
        return true
    }

    /// True when `host` is down or probed: a request of it that fails to connect ends with it.
    func isDown(_ host: Int) -> Bool {
        if case .up = state(of: host) { return false }
        return true
    }

    /// True when some server is down with its cool-down running past `now`, or probed: its number must keep its books.
    func hasDownServers(at now: Double) -> Bool {
        states.values.contains { state in
            switch state {
            case .up: false
            case .down(let until, _): until > now
            case .probing: true
            }
        }
    }

    /// Forgets every server (the host numbers start over).
    mutating func removeAll() {
        states.removeAll()
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
