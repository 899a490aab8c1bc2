import Foundation

/// What one attempt of a request measured: where its time went, the bytes on the wire, the protocol and the
/// connection.
///
/// A transport fills what it can know; a field it cannot know is nil. ``CurlTransport`` fills every field
/// from libcurl. ``URLSessionTransport`` fills every field from `URLSessionTaskMetrics` where the platform
/// delivers them (Apple platforms); on Linux, where FoundationNetworking never does, it measures
/// ``totalDuration``, ``timeToFirstByte``, ``redirectCount`` and the body bytes itself, and the phases,
/// ``httpVersion``, ``isReusedConnection`` and the remote address are nil.
///
/// Durations are in seconds. A redirected attempt's phases add up the phases of every request of its chain;
/// ``redirectDuration`` says how long the chain took before its final request began.
public struct TransferMetrics: Sendable, Hashable {
    /// Which attempt of its request this was, from 1 (set by the queue; 0 as a transport reports it).
    public var attempt: Int
    /// Resolving the host name; nil when no lookup was made (a reused connection) or it is not known.
    public var domainLookupDuration: TimeInterval?
    /// Opening the TCP connection, after the lookup; nil when no connection was opened or it is not known.
    public var connectDuration: TimeInterval?
    /// The TLS handshake, after the TCP connection; nil for plain HTTP, a reused connection, or not known.
    public var secureConnectionDuration: TimeInterval?
    /// From the start of the attempt to the first byte of the final response (redirects included); nil
    /// when no response arrived.
    public var timeToFirstByte: TimeInterval?
    /// From the start of the attempt to its end.
    public var totalDuration: TimeInterval
    /// Time spent in redirects before the final request began; 0 when there were none.
    public var redirectDuration: TimeInterval
    /// Redirects followed.
    public var redirectCount: Int
    /// Bytes written to the connection: request heads and bodies of every request of the chain (only the
    /// bodies where heads are not known); nil when not known.
    public var bytesSent: Int64?
    /// Bytes read from the connection: response heads and bodies, before any decoding (only the bodies
    /// where heads are not known); nil when not known.
    public var bytesReceived: Int64?
    /// The HTTP version of the final response, such as `HTTP/1.1` or `HTTP/2`; nil when not known.
    public var httpVersion: String?
    /// Whether the final request went over a connection opened earlier; nil when not known.
    public var isReusedConnection: Bool?
    /// The IP address of the server (or proxy) the final request went to; nil when not known.
    public var remoteAddress: String?
    /// The port of ``remoteAddress``; nil when not known.
    public var remotePort: Int?
    /// For a file fetched over several connections or sources (``NetworkRequest/FileOptions/maximumConnections``,
    /// ``NetworkRequest/FileOptions/mirrors``): how many connections ran at once at most and what each source
    /// served. Nil for an attempt on one connection. Not set by the initializer.
    public var segments: SegmentMetrics?

    /// Creates metrics: each argument sets the property of the same name. Every field not given is unknown
    /// (nil), with no redirect, and `attempt` 0 (the queue numbers it).
    public init(
        attempt: Int = 0, domainLookupDuration: TimeInterval? = nil, connectDuration: TimeInterval? = nil,
        secureConnectionDuration: TimeInterval? = nil, timeToFirstByte: TimeInterval? = nil,
        totalDuration: TimeInterval,
        redirectDuration: TimeInterval = 0, redirectCount: Int = 0, bytesSent: Int64? = nil,
        bytesReceived: Int64? = nil,
        httpVersion: String? = nil, isReusedConnection: Bool? = nil, remoteAddress: String? = nil,
        remotePort: Int? = nil
    ) {
        self.attempt = attempt
        self.domainLookupDuration = domainLookupDuration
        self.connectDuration = connectDuration
        self.secureConnectionDuration = secureConnectionDuration
        self.timeToFirstByte = timeToFirstByte
        self.totalDuration = totalDuration
        self.redirectDuration = redirectDuration
        self.redirectCount = redirectCount
        self.bytesSent = bytesSent
        self.bytesReceived = bytesReceived
        self.httpVersion = httpVersion
        self.isReusedConnection = isReusedConnection
        self.remoteAddress = remoteAddress
        self.remotePort = remotePort
    }
}

/// What a request's attempts measured: one ``TransferMetrics`` per attempt, oldest first.
///
/// An attempt whose transfer ended by itself has what its transport measured. An attempt the queue stopped
/// itself (an unacceptable status or content type, a response too large, a timeout, a cancel, a sibling's
/// failure) has what the queue saw on its own clock: ``TransferMetrics/totalDuration``,
/// ``TransferMetrics/timeToFirstByte`` when the head had arrived, and its ``TransferMetrics/httpVersion``;
/// the rest is nil. A transfer stopped by a pause is not an attempt and has none.
public struct RequestMetrics: Sendable, Hashable {
    /// Each attempt's metrics, oldest first.
    public var attempts: [TransferMetrics]

    /// Creates a request's metrics from its attempts'.
    public init(attempts: [TransferMetrics]) {
        self.attempts = attempts
    }

    /// The last attempt's metrics (the one whose response the request ended with), if any reported.
    public var final: TransferMetrics? { attempts.last }

    /// Seconds spent in transfers, over every attempt (waits between attempts are not counted).
    public var totalDuration: TimeInterval { attempts.reduce(0) { $0 + $1.totalDuration } }
}

/// What a split download's attempt measured: its connections and its locations.
public struct SegmentMetrics: Sendable, Hashable {
    /// One location of the file: the request's URL or a mirror.
    public struct Location: Sendable, Hashable {
        /// The location's URL.
        public var url: URL
        /// The bytes of the file it served (each byte counted once).
        public var bytes: Int64
        /// True when the file left it (it failed, answered a status, or served other bytes; an earlier fetch's untrusted
        /// location is left too): see "Big files: connections and mirrors".
        public var wasDropped: Bool
        /// True when it answered a range wrongly while its stream of the whole file was good: it was asked for no
        /// more ranges, and that stream went on.
        public var refusedRanges: Bool

        /// True when an earlier attempt's file failed its checksum after this location served some of its bytes,
        /// other than the location the file was fetched under: its ranges are not trusted, and this attempt fetched
        /// the file from that one location alone. Default false.
        public var untrusted: Bool

        /// Creates a location's figures (`refusedRanges` and `untrusted` default false).
        public init(url: URL, bytes: Int64, wasDropped: Bool, refusedRanges: Bool = false, untrusted: Bool = false) {
            self.url = url
            self.bytes = bytes
            self.wasDropped = wasDropped
            self.refusedRanges = refusedRanges
            self.untrusted = untrusted
        }
    }

    /// The former name of ``Location``.
    @available(*, deprecated, renamed: "Location")
    public typealias Source = Location

    /// The most connections that ran at once.
    public var connections: Int
    /// The locations, the request's own URL first, then the mirrors in their order.
    public var locations: [Location]

    /// The former name of ``locations``.
    @available(*, deprecated, renamed: "locations")
    public var sources: [Location] {
        get { locations }
        set { locations = newValue }
    }

    /// Creates the figures of a split download.
    public init(connections: Int, locations: [Location]) {
        self.connections = connections
        self.locations = locations
    }

    /// The former form of ``init(connections:locations:)``.
    @available(*, deprecated, renamed: "init(connections:locations:)")
    public init(connections: Int, sources: [Location]) {
        self.init(connections: connections, locations: sources)
    }
}
