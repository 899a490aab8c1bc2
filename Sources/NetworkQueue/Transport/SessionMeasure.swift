import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a ``URLSessionTransport`` transfer measures for its ``TransferMetrics``: its own clock and byte counts,
/// and the platform's `URLSessionTaskMetrics` when they are delivered (Apple platforms; FoundationNetworking
/// on Linux never delivers them). Times in nanoseconds of a monotonic clock, passed in.
struct SessionMeasure {
    let startedAt: UInt64
    var firstByteAt: UInt64?
    var bodyReceived: Int64 = 0
    /// Body bytes sent by the transfer's earlier tasks (a replayed redirect), and by its current one.
    var bodySentBefore: Int64 = 0
    var bodySent: Int64 = 0
    /// Redirects followed, by URLSession or by a replay.
    var redirects = 0
    var platform: URLSessionTaskMetrics?

    init(startedAt: UInt64) { self.startedAt = startedAt }

    /// A task of the transfer ended (another may follow, for a replayed redirect).
    mutating func taskEnded() {
        bodySentBefore += bodySent
        bodySent = 0
    }

    /// The transfer's metrics when it ends at `time`.
    func metrics(endedAt time: UInt64) -> TransferMetrics {
        let seconds = { (from: UInt64, to: UInt64) in Double(to >= from ? to - from : 0) / 1e9 }
        var metrics = TransferMetrics(
            timeToFirstByte: firstByteAt.map { seconds(startedAt, $0) }, totalDuration: seconds(startedAt, time),
            redirectCount: redirects, bytesSent: bodySentBefore + bodySent, bytesReceived: bodyReceived)
        if let platform { Self.fill(&metrics, from: platform) }
        return metrics
    }

    /// Fills what the platform measured: the phases (summed over the transactions), the bytes with their
    /// heads, and the final transaction's protocol and connection.
    static func fill(_ metrics: inout TransferMetrics, from platform: URLSessionTaskMetrics) {
        let transactions = platform.transactionMetrics
        guard let final = transactions.last else { return }
        func sum(_ interval: (URLSessionTaskTransactionMetrics) -> TimeInterval?) -> TimeInterval? {
            transactions.compactMap(interval).reduce(nil) { ($0 ?? 0) + $1 }
        }
        func span(_ start: Date?, _ end: Date?) -> TimeInterval? {
            guard let start, let end else { return nil }
            return max(0, end.timeIntervalSince(start))
        }
        metrics.domainLookupDuration = sum { span($0.domainLookupStartDate, $0.domainLookupEndDate) }
        metrics.connectDuration = sum { span($0.connectStartDate, $0.secureConnectionStartDate ?? $0.connectEndDate) }
        metrics.secureConnectionDuration = sum { span($0.secureConnectionStartDate, $0.secureConnectionEndDate) }
        let start = transactions.first?.fetchStartDate ?? platform.taskInterval.start
        if let firstByte = span(start, final.responseStartDate) { metrics.timeToFirstByte = firstByte }
        metrics.redirectCount = max(metrics.redirectCount, platform.redirectCount)
        if transactions.count > 1, let redirects = span(start, final.fetchStartDate) {
            metrics.redirectDuration = redirects
        }
        let sent = transactions.reduce(Int64(0)) {
            $0 + $1.countOfRequestHeaderBytesSent + $1.countOfRequestBodyBytesSent
        }
        let received = transactions.reduce(Int64(0)) {
            $0 + $1.countOfResponseHeaderBytesReceived + $1.countOfResponseBodyBytesReceived
        }
        if sent > 0 { metrics.bytesSent = sent }
        if received > 0 { metrics.bytesReceived = received }
        metrics.httpVersion = final.networkProtocolName.flatMap(versionName)
        metrics.isReusedConnection = final.isReusedConnection
        metrics.remoteAddress = final.remoteAddress
        metrics.remotePort = port(final.remotePort)
    }

    /// The remote port as Apple's Foundation gives it.
    private static func port(_ value: Int?) -> Int? { value }
    /// The remote port as swift-corelibs-foundation declares it (a string; never delivered there).
    private static func port(_ value: String?) -> Int? { value.flatMap { Int($0) } }

    /// `HTTP/1.1`, `HTTP/2` or `HTTP/3` for an ALPN protocol name (`http/1.1`, `h2`, `h3`); nil for others.
    static func versionName(_ alpn: String) -> String? {
        switch alpn.lowercased() {
        case "http/1.0": "HTTP/1.0"
        case "http/1.1": "HTTP/1.1"
        case "h2", "h2c": "HTTP/2"
        case "h3": "HTTP/3"
        default: nil
        }
    }
}
