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
    let sent: OutgoingRequest
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
    /// The size of the first body piece kept in memory (-1: none yet): the body's storage is grown once, at the second.
    var firstPieceCount = -1
    /// When the final head arrived (queue clock).
    var headAt: Double?
    /// The body size the final head announces in decoded bytes, when it announces one.
    var announcedLength: Int64?
    /// The existing file a 304 kept (``NetworkRequest/ExistingFile/revalidate``): the attempt ends with it, its part
    /// discarded.
    var keptFile: URL?
    /// The body, for the memory destination.
    var body = Data()
    /// The delay the response asked for (`Retry-After`), in seconds, read only for a failing status.
    var retryAfter: Double?
    /// The body bytes sent so far, as the transport reported them.
    var sentBytes: Int64 = 0
    /// The split download the attempt is, when its file is fetched over several connections or locations: boxed, so
    /// that an attempt of one connection (nearly all of them) stays small.
    var split: Split?

    /// The split download's child machine and its shell, held by reference from its attempt and changed in place by
    /// the request's machine alone (``RequestMachine/split(_:of:context:books:_:now:)``).
    final class Split {
        // Unchecked: changed in place by every event of the file's connections, only by the request's machine, which
        // runs only under the queue's lock (no overlapping access can exist); the dynamic check would cost on each.
        /// The child machine; nil while its making waits for the file's first event after a begin whose first
        /// connection runs already (``RequestMachine/SplitEvent/begin(_:_:part:isCapped:collectsMetrics:shell:running:)``).
        @exclusivity(unchecked) private(set) var machine: SplitMachine?
        /// What the machine is made of, while it is not made.
        private let deferred: SplitMachine.Start?
        /// Does the file's work that follows an event other than the shell's own.
        let shell: any ConnectionShell

        init(_ machine: SplitMachine, shell: any ConnectionShell) {
            self.machine = machine
            deferred = nil
            self.shell = shell
        }

        /// A split download whose machine is made at its first event after its begin, from `start`.
        init(deferred start: SplitMachine.Start, shell: any ConnectionShell) {
            machine = nil
            deferred = start
            self.shell = shell
        }

        /// Applies `event` to the machine, made first if it was not (its first start, done already by the begin's
        /// work, dropped).
        func handle(_ event: SplitMachine.Event, now: Double, _ actions: inout [SplitMachine.Action]) {
            if machine == nil, let deferred {
                var started: [SplitMachine.Action] = []
                machine = SplitMachine(deferred, &started)
            }
            machine?.handle(event, now: now, &actions)
        }

        /// Ends the download however its attempt ended: the loans it still held (none, when its machine was not made).
        func release() -> [QueueStateMachine.ConnectionLoan] {
            machine?.release() ?? []
        }
    }
    /// The split machine's actions of the last event, emptied: their capacity is reused, so that a body piece
    /// allocates nothing.
    var splitScratch: [SplitMachine.Action] = []
    /// The one location the attempt fetches its split file from (an earlier attempt's file failed its checksum after
    /// others served it too, or a mirror served it alone), or nil: all of them.
    var onlySource: Int?
    /// The locations that served bytes of that earlier attempt's file, other than ``onlySource``: named untrusted.
    var untrusted: [Int] = []
    /// The locations to fetch the file from alone next, in turn, should this attempt's file fail its checksum too.
    var thenAlone: [Int] = []
    /// When the location this attempt fetches its file from alone failed without answering (a dead mirror): the next
    /// location to fetch it from alone, and those after it, before any retry goes back to the locations that served it
    /// wrong. Nil otherwise.
    var nextAloneAfterSilence: (source: Int, then: [Int])? {
        guard onlySource != nil, continuedFrom == 0, head == nil, let next = thenAlone.first else { return nil }
        return (next, Array(thenAlone.dropFirst()))
    }
    /// The current lowest-speed window, while the request has a lowest speed (see ``TimeLimits/lowestSpeed``).
    var speedWindow: SpeedWindow?

    init(token: UInt64, cell: TransferCell, sent: OutgoingRequest, startedAt: Double, expectedBefore: Int64?) {
        self.token = token
        self.cell = cell
        transfers = Transfers(cell)
        self.sent = sent
        self.startedAt = startedAt
        self.expectedBefore = expectedBefore
    }
}

extension Attempt {
    /// What an attempt's transfer ending means.
    enum Ending {
        case failed(NetworkQueueError)
        /// A continued part that did not verify: the attempt is sent again without a range.
        case sendAgainWithoutRange
        /// A split file that did not verify after several locations served it, or a mirror alone: it is fetched again
        /// from `source` alone (never worse than one connection), the `untrusted` others named in its metrics, and from
        /// each of `then` alone in turn should that fail too.
        case sendAgainFrom(Int, untrusted: [Int], then: [Int])
        case succeeded(NetworkResponse)
        /// The file is to be moved into place first.
        case commit(FileSink)
    }

    /// What this attempt's transfer ending as `outcome` means (`received` body bytes in all, `file` the claimed
    /// destination, `metrics` the request's; `endsAtHead`: the transfer read no body by design, so that none is short).
    func ending(
        _ outcome: RequestMachine.TransferOutcome, received: Int64, file: URL?, metrics: RequestMetrics?,
        endsAtHead: Bool
    ) -> Ending {
        if case .checksumMismatch = outcome, continuedFrom == 0, onlySource == nil,
            let refetch = split?.machine?.checksumRefetch
        {
            // Several locations served the file, or a mirror alone: once more from one location alone (the one whose
            // answer began it, or the request's URL).
            return .sendAgainFrom(refetch.source, untrusted: refetch.untrusted, then: refetch.then)
        }
        if case .checksumMismatch = outcome, continuedFrom == 0, onlySource != nil, let next = thenAlone.first {
            // That one alone failed too (it began the file only because the first asked broke): the next that served
            // some of it, alone; once each at most.
            return .sendAgainFrom(next, untrusted: untrusted.filter { $0 != next }, then: Array(thenAlone.dropFirst()))
        }
        if case .failed = outcome, let next = nextAloneAfterSilence {
            return .sendAgainFrom(next.source, untrusted: untrusted, then: next.then)
        }
        switch outcome {
        case .failed(let error): return .failed(.transport(Redaction.redacted(error)))
        // The part may be what was wrong: once more from byte 0.
        case .checksumMismatch where continuedFrom > 0: return .sendAgainWithoutRange
        case .checksumMismatch(let expected, let actual):
            return .failed(.integrityCheckFailed(expected: expected, actual: actual))
        case .succeeded: break
        }
        guard let head else { return .failed(.transport(URLError(.badServerResponse))) }
        if !endsAtHead,
            ResponseRules.isShort(head, method: sent.method, received: received, knownLength: announcedLength)
        {
            return .failed(.transport(URLError(.networkConnectionLost)))
        }
        if let kept = keptFile {
            // A 304 to a revalidated file: the file there is kept, its part discarded.
            return .succeeded(
                NetworkResponse(head: head, body: Data(), fileURL: kept, keptExistingFile: true, metrics: metrics))
        }
        guard let file else { return .succeeded(NetworkResponse(head: head, body: body, metrics: metrics)) }
        guard let sink else { return .failed(.fileError(path: file.path, reason: "no file open")) }
        return .commit(sink)
    }
}

extension TransferMetrics {
    /// What the queue saw on its own clock of an attempt it stopped itself at `now` (an unacceptable response, a
    /// timeout, a cancel, a sibling's failure): its transport reports nothing more. Time to the head, total time,
    /// the head's HTTP version.
    init(stopped attempt: Attempt, at now: Double) {
        let version = attempt.head?.httpVersion ?? ""
        self.init(
            timeToFirstByte: attempt.headAt.map { max(0, $0 - attempt.startedAt) },
            totalDuration: max(0, now - attempt.startedAt), httpVersion: version.isEmpty ? nil : version)
    }
}
