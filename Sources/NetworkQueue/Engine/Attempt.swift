import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Everything that lives for one main transfer of a request: made new when the transfer starts, dropped
/// when it ends. Nothing here is ever reset by hand: the next transfer is a new object.
///
/// A class, measured: the request's state is read on every event (its token, its head, its announced
/// length), and copying a struct payload of six references out of the enum cost ~5k instructions per small
/// request; a reference costs one retain. Only the engine touches it, under the queue's lock.
final class Attempt {
    /// Identifies the transfer: events carrying another token are stale.
    let token: UInt64
    /// The attempt's transfers: one, or a split download's connections.
    var transfers: Transfers
    /// Where the attempt's first transfer's handle goes (filled in by the shell).
    let cell: TransferCell
    /// What the transfer sends (adapted, or the request's own): sent again as it is without a range.
    let sent: URLRequest
    /// When the transfer started (queue clock): where its rate and metrics are measured from.
    let startedAt: Double
    /// The expected download size before this attempt's response changed it (a HEAD's, or nil).
    let expectedBefore: Int64?
    /// The file the transfer writes to, once the shell opened it (file destination).
    var sink: FileSink?
    /// The bytes of the part file the transfer continues after (0: it starts from byte 0).
    var continuedFrom: Int64 = 0
    /// The final head, once it arrived.
    var head: ResponseHead?
    /// When the final head arrived (queue clock).
    var headAt: Double?
    /// The body size the final head announces in decoded bytes, when it announces one.
    var announcedLength: Int64?
    /// The body, for the memory destination.
    var body = Data()
    /// The delay the response asked for (`Retry-After`), in seconds, read only for a failing status.
    var retryAfter: Double?
    /// The body bytes sent so far, as the transport reported them.
    var sentBytes: Int64 = 0
    /// The split download the attempt is, when its file is fetched over several connections or sources.
    var split: SplitMachine?
    /// The current lowest-speed window, while the request has a lowest speed (see ``TimeLimits/lowestSpeed``).
    var speedWindow: SpeedWindow?

    init(token: UInt64, cell: TransferCell, sent: URLRequest, startedAt: Double, expectedBefore: Int64?) {
        self.token = token
        self.cell = cell
        transfers = Transfers(cell)
        self.sent = sent
        self.startedAt = startedAt
        self.expectedBefore = expectedBefore
    }

    /// What this attempt's transfer ending as `outcome` means (`received` body bytes): success, a file to move
    /// into place first (`file`: the claimed destination), a failure, or (a continued part that did not verify)
    /// the attempt sent again without a range.
    func ended(_ outcome: RequestMachine.TransferOutcome, received: Int64, file: URL?, metrics: RequestMetrics?)
        -> RequestMachine.Action
    {
        switch outcome {
        case .failed(let error): return .attemptFailed(.transport(Redaction.redacted(error)))
        // The part may be what was wrong: once more from byte 0.
        case .checksumMismatch where continuedFrom > 0: return .sendAgainWithoutRange
        case .checksumMismatch(let expected, let actual):
            return .attemptFailed(.integrityCheckFailed(expected: expected, actual: actual))
        case .succeeded: break
        }
        guard let head else { return .attemptFailed(.transport(URLError(.badServerResponse))) }
        if ResponseRules.isShort(head, method: sent.httpMethod, received: received, knownLength: announcedLength) {
            return .attemptFailed(.transport(URLError(.networkConnectionLost)))
        }
        guard let file else { return .end(.success(NetworkResponse(head: head, body: body, metrics: metrics))) }
        guard let sink else { return .attemptFailed(.fileError(path: file.path, reason: "no file open")) }
        return .commit(self, sink)
    }
}
