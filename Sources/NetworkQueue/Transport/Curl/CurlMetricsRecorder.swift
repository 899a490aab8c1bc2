import Foundation

/// What libcurl measured of one run (one request of a redirect chain), read from the easy handle when the
/// run ends. Times are libcurl's, in microseconds from the run's start.
struct CurlRunInfo: Equatable {
    var lookupEnded: Int64 = 0
    var connectEnded: Int64 = 0
    var handshakeEnded: Int64 = 0
    var firstByte: Int64 = 0
    /// New connections the run opened (0: it reused one).
    var connections = 0
    var headerBytes = 0
    var requestBytes = 0
    var uploadedBytes: Int64 = 0
    var downloadedBytes: Int64 = 0
    /// libcurl's CURL_HTTP_VERSION_* of the response (1: 1.0, 2: 1.1, 3: 2, 30: 3; 0 unknown).
    var httpVersion = 0
    var remoteAddress: String?
    var remotePort = 0
}

/// Adds up a transfer's runs into its ``TransferMetrics``: phases summed over the runs that had them, bytes
/// over every run, the protocol and the connection of the last. Times in nanoseconds of a monotonic clock,
/// passed in.
struct CurlMetricsRecorder {
    let startedAt: UInt64
    private var firstRunAt: UInt64?
    private var lastRunAt: UInt64 = 0
    private var lookup: Int64?
    private var connect: Int64?
    private var handshake: Int64?
    private var sent: Int64 = 0
    private var received: Int64 = 0
    private var last: CurlRunInfo?

    init(startedAt: UInt64) { self.startedAt = startedAt }

    /// A run (the first, or one after a redirect) begins at `time`.
    mutating func runBegan(at time: UInt64) {
        if firstRunAt == nil { firstRunAt = time }
        lastRunAt = time
    }

    /// A run ended with what libcurl measured of it.
    mutating func runEnded(_ run: CurlRunInfo) {
        if run.connections > 0 {
            lookup = (lookup ?? 0) + max(0, run.lookupEnded)
            connect = (connect ?? 0) + max(0, run.connectEnded - run.lookupEnded)
            if run.handshakeEnded > 0 { handshake = (handshake ?? 0) + max(0, run.handshakeEnded - run.connectEnded) }
        }
        // The body goes through the read callback, so the request size counts the head alone.
        sent += Int64(run.requestBytes) + run.uploadedBytes
        received += Int64(run.headerBytes) + run.downloadedBytes
        last = run
    }

    /// The transfer's metrics when it ends at `time` after `redirectCount` redirects.
    func metrics(endedAt time: UInt64, redirectCount: Int) -> TransferMetrics {
        let seconds = { (nanoseconds: UInt64) in Double(nanoseconds) / 1e9 }
        let microseconds = { (value: Int64) in Double(value) / 1e6 }
        let lastBegan = max(lastRunAt, startedAt)
        var firstByte: TimeInterval?
        if let last, last.firstByte > 0 { firstByte = seconds(lastBegan - startedAt) + microseconds(last.firstByte) }
        return TransferMetrics(
            domainLookupDuration: lookup.map(microseconds), connectDuration: connect.map(microseconds),
            secureConnectionDuration: handshake.map(microseconds), timeToFirstByte: firstByte,
            totalDuration: seconds(max(time, startedAt) - startedAt),
            redirectDuration: redirectCount > 0 ? seconds(lastBegan - (firstRunAt ?? lastBegan)) : 0,
            redirectCount: redirectCount, bytesSent: last == nil ? nil : sent,
            bytesReceived: last == nil ? nil : received,
            httpVersion: last.flatMap { Self.versionName($0.httpVersion) },
            isReusedConnection: last.map { $0.connections == 0 },
            remoteAddress: last?.remoteAddress, remotePort: last.flatMap { $0.remotePort > 0 ? $0.remotePort : nil })
    }

    /// The name of libcurl's CURL_HTTP_VERSION_* value; nil for 0 (none) or one it does not know.
    static func versionName(_ version: Int) -> String? {
        switch version {
        case 1: "HTTP/1.0"
        case 2: "HTTP/1.1"
        case 3: "HTTP/2"
        case 30: "HTTP/3"
        default: nil
        }
    }
}
