import Foundation

/// A change in whether a server's requests are held because it stopped answering connects (see ``DeadHosts``), as
/// ``NetworkQueueDelegate/networkQueue(_:serverHoldChanged:)`` hears it: the server went down and its requests are held,
/// it answered again and they go on, or it stayed down for its whole window and they end.
public struct ServerHold: Sendable, Hashable {
    /// What happened to the server.
    public enum Change: String, Sendable, Hashable {
        /// It failed ``DeadHosts/failuresInARow`` connects in a row: its requests are held, and one at a time probes it.
        case held
        /// It answered (any response): its held requests go on.
        case back
        /// It stayed down for the whole window its retry policy gives: its held requests end with
        /// ``NetworkQueueError/hostDown(host:failures:)``.
        case down
    }

    /// The server, as `scheme://host:port` (no user info, path or query).
    public let server: String
    /// What happened.
    public let change: Change
    /// How long its requests had been held when this happened, in seconds (0 for ``Change/held``).
    public let heldFor: TimeInterval
    /// The failed connects (or name lookups) counted against it in a row.
    public let failures: Int
    /// For ``Change/held``: the seconds until its first probe. Nil otherwise.
    public let firstProbeIn: TimeInterval?

    /// Creates a notice (for tests of code that consumes them; the queue makes its own).
    public init(server: String, change: Change, heldFor: TimeInterval, failures: Int, firstProbeIn: TimeInterval? = nil)
    {
        self.server = server
        self.change = change
        self.heldFor = heldFor
        self.failures = failures
        self.firstProbeIn = firstProbeIn
    }
}
