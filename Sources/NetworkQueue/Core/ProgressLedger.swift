/// The aggregate progress of one queue's drain: a pure value type fed with byte counts and outcomes.
///
/// Each request's own counters live in an ``Entry`` that the caller keeps with the rest of the request's
/// state (the one home of its bytes); every event passes the entry in, and the ledger keeps only sums.
///
/// Each request weighs its expected upload bytes plus its expected download bytes, or one unit for a
/// download of unknown size. A request whose size a coming HEAD will learn (``awaitSize(_:)``) weighs the
/// mean of the sizes learned so far instead, so that a batch whose HEADs roll ahead of its transfers is not
/// dominated by the few sizes known early. The fraction advances by integrating completed work over *remaining* work:
/// when every size is known from the start it equals done / total, and when a late size joins the total,
/// a transfer restarts, or a request fails, the fraction holds still instead of falling. Timestamps are
/// passed in (seconds on any monotonic clock); the ledger reads no clock.
struct ProgressLedger {
    enum Outcome: Equatable {
        case succeeded
        case failed
        case cancelled
    }

    /// One request's counters, owned by the caller.
    struct Entry: Equatable {
        fileprivate(set) var expectedDown: Int64?
        fileprivate(set) var received: Int64 = 0
        fileprivate(set) var expectedUp: Int64
        fileprivate(set) var sent: Int64 = 0
        fileprivate(set) var outcome: Outcome?
        /// True while a coming HEAD will learn the size: the download weighs the mean learned size (counted
        /// by the ledger, not in this entry's own weight).
        fileprivate(set) var awaitsSize = false

        /// A request expecting `expectedDownload` bytes (nil: unknown) and sending `expectedUpload`.
        init(expectedDownload: Int64? = nil, expectedUpload: Int64 = 0) {
            expectedDown = expectedDownload.map { max(0, $0) }
            expectedUp = max(0, expectedUpload)
        }

        /// How much this request weighs in the fraction.
        var weight: Double { Double(expectedUp) + (expectedDown.map(Double.init) ?? (awaitsSize ? 0 : 1)) }

        /// How much of its weight is done.
        var done: Double {
            if outcome == .succeeded { return weight }
            let down = expectedDown.map { Double(min(received, $0)) } ?? 0
            return Double(min(sent, expectedUp)) + down
        }

        /// Work that still counts towards completion: none once the request has ended.
        var remaining: Double { outcome == nil ? max(0, weight - done) : 0 }
    }

    // The sums below that are `private(set)` are read by the snapshot (ProgressLedger+Snapshot.swift) and
    // written only by the events in this file.
    private(set) var requestCount = 0
    private(set) var fraction: Double = 0
    /// The remaining work of every entry, those awaiting their size excepted (see ``awaitingSizes``).
    private var remaining: Double = 0
    private(set) var unknownDownloads = 0
    /// Entries whose size a coming HEAD will learn: each weighs ``meanLearnedSize``.
    private var awaitingSizes = 0
    /// Sources still being read (more requests may come): the total is not final.
    private var openSources = 0
    /// Requests that sources said are coming and that were not read yet: each weighs ``meanLearnedSize``.
    private(set) var announced = 0
    private(set) var counts = (finished: 0, failed: 0, cancelled: 0)
    private(set) var bytes = (received: Int64(0), expectedDown: Int64(0), sent: Int64(0), expectedUp: Int64(0))
    private(set) var throughput = ThroughputMeter()
    /// Bytes moved on the wire in this drain: only ever grows (a restart or a continued part does not move it).
    private var wire: Int64 = 0

    /// True when every request of the drain has ended and no source may add more.
    var isComplete: Bool { openSources == 0 && counts.finished + counts.failed + counts.cancelled == requestCount }

    /// True when no source may add more requests to the drain.
    var isTotalFinal: Bool { openSources == 0 }

    /// The mean of the download sizes known so far (1 when none is).
    var meanLearnedSize: Double {
        let known = requestCount - unknownDownloads
        return known > 0 ? max(1, Double(bytes.expectedDown) / Double(known)) : 1
    }

    /// All remaining work: the entries' own, plus the mean size for each that awaits its size and each
    /// announced request not read yet.
    private var totalRemaining: Double { remaining + Double(awaitingSizes + announced) * meanLearnedSize }

    /// An entry's share of ``totalRemaining``.
    private func effectiveRemaining(_ entry: Entry) -> Double {
        entry.remaining + (entry.awaitsSize && entry.outcome == nil ? meanLearnedSize : 0)
    }

    // MARK: Events

    /// Starts a new drain: forgets every request and resets the fraction to 0.
    mutating func reset() { self = ProgressLedger() }

    /// A source of requests opens, announcing `expected` requests to come (0: it did not say): the drain's
    /// total is not final until it closes.
    mutating func openSource(announcing expected: Int = 0) {
        openSources += 1
        // Clamped, so that announcements of any size add up (and into a Double) without overflowing.
        announced = min(Self.mostAnnounced, announced + min(Self.mostAnnounced, max(0, expected)))
    }

    /// The most requests the announcements count: 2^52, far beyond any batch, and exact as a Double.
    static let mostAnnounced = 1 << 52

    /// An announced request was read (it is added with ``add(_:)``).
    mutating func readAnnounced() { if announced > 0 { announced -= 1 } }

    /// A source closed (ended, failed or stopped); `unread`: the requests it announced and never gave.
    mutating func closeSource(unread: Int = 0) {
        openSources -= 1
        announced = max(0, announced - unread)
        // The last request may have ended while the source was still open (or the drain had none at all).
        if isComplete, counts.failed + counts.cancelled == 0 { fraction = 1 }
    }

    /// A HEAD will learn the entry's size: until it does, the entry weighs the mean of the sizes learned.
    mutating func awaitSize(_ entry: inout Entry) {
        guard entry.outcome == nil, entry.expectedDown == nil, !entry.awaitsSize else { return }
        let before = entry.remaining
        entry.awaitsSize = true
        awaitingSizes += 1
        remaining = max(0, remaining + entry.remaining - before)
    }

    /// The HEAD is over without a size (or will not come): the entry weighs one unit again, as any download
    /// of unknown size. The fraction does not move.
    mutating func stopAwaitingSize(_ entry: inout Entry) {
        guard entry.awaitsSize else { return }
        let before = entry.remaining
        entry.awaitsSize = false
        awaitingSizes -= 1
        remaining = max(0, remaining + entry.remaining - before)
    }

    /// Adds a request with the sizes its entry holds.
    mutating func add(_ entry: Entry) {
        requestCount += 1
        if let down = entry.expectedDown { bytes.expectedDown += down } else { unknownDownloads += 1 }
        bytes.expectedUp += entry.expectedUp
        remaining += entry.remaining
    }

    /// Records the download size learned from a HEAD or a response; nil or negative means unknown.
    mutating func setExpectedDownload(_ entry: inout Entry, _ size: Int64?) {
        guard !entry.awaitsSize else {
            // A HEAD's answer: its mean-sized estimate becomes its own size. Nothing was done, so nothing moves.
            let before = entry.remaining
            resize(&entry, size)
            remaining = max(0, remaining + entry.remaining - before)
            return
        }
        update(&entry) { entry, ledger in ledger.resize(&entry, size) }
    }

    /// Replaces a request's expected download size without moving the fraction, for a size that turned out
    /// not to describe the coming transfer (a retry forgets what its failed attempt's response said).
    /// Later progress is measured against the remaining work as it now stands.
    mutating func replaceExpectedDownload(_ entry: inout Entry, _ size: Int64?) {
        guard entry.outcome == nil else { return }
        let before = entry.remaining
        resize(&entry, size)
        remaining = max(0, remaining + entry.remaining - before)
    }

    /// Sets an entry's expected download size (nil or negative: unknown) and the sums, leaving the
    /// fraction to the caller.
    private mutating func resize(_ entry: inout Entry, _ size: Int64?) {
        let size = size.flatMap { $0 >= 0 ? $0 : nil }
        if size != nil, entry.awaitsSize {
            entry.awaitsSize = false
            awaitingSizes -= 1
        }
        guard entry.expectedDown != size else { return }
        if let old = entry.expectedDown { bytes.expectedDown -= old } else { unknownDownloads -= 1 }
        if let new = size { bytes.expectedDown += new } else { unknownDownloads += 1 }
        entry.expectedDown = size
    }

    /// A transfer started over (a retry, or a second response): its bytes so far no longer count.
    mutating func restart(_ entry: inout Entry) {
        update(&entry) { entry, ledger in
            ledger.bytes.received -= entry.received
            ledger.bytes.sent -= entry.sent
            entry.received = 0
            entry.sent = 0
        }
    }

    /// Sets the bytes a request has received to `received`: a continued download's part file counts as done
    /// (the fraction advances), while fewer bytes than before (a part that could not be continued) leave
    /// the sums without moving the fraction, as ``restart(_:)`` does. Bytes moved on the wire (the
    /// throughput) are not touched.
    mutating func rebase(_ entry: inout Entry, received: Int64) {
        let received = max(0, received)
        if received >= entry.received {
            update(&entry) { entry, ledger in
                ledger.bytes.received += received - entry.received
                entry.received = received
            }
        } else {
            let before = entry.remaining
            bytes.received -= entry.received - received
            entry.received = received
            remaining = max(0, remaining + entry.remaining - before)
        }
    }

    /// Adds `count` response bytes received by a request.
    mutating func receive(_ entry: inout Entry, bytes count: Int64, at time: Double) {
        update(&entry) { entry, ledger in
            entry.received += count
            ledger.bytes.received += count
        }
        wire += count
        throughput.record(total: wire, at: time)
    }

    /// Records a request's cumulative body bytes sent, and its body size when the transport knows it.
    mutating func send(_ entry: inout Entry, totalSent: Int64, expected: Int64?, at time: Double) {
        update(&entry) { entry, ledger in
            if let expected, expected >= 0, expected != entry.expectedUp {
                ledger.bytes.expectedUp += expected - entry.expectedUp
                entry.expectedUp = expected
            }
            let sent = max(0, totalSent)
            ledger.bytes.sent += sent - entry.sent
            ledger.wire += max(0, sent - entry.sent)
            entry.sent = sent
        }
        throughput.record(total: wire, at: time)
    }

    /// Ends a request. Its remaining work leaves the total; only success advances the fraction.
    mutating func finish(_ entry: inout Entry, _ outcome: Outcome) {
        update(&entry) { entry, ledger in
            guard entry.outcome == nil else { return }
            if entry.awaitsSize {
                // Its estimate leaves the total: success completes the work it stood for.
                entry.awaitsSize = false
                ledger.awaitingSizes -= 1
            }
            entry.outcome = outcome
            switch outcome {
            case .succeeded:
                ledger.counts.finished += 1
                if entry.expectedDown == nil {
                    // The size is now known: what arrived.
                    ledger.unknownDownloads -= 1
                    ledger.bytes.expectedDown += entry.received
                    entry.expectedDown = entry.received
                }
            case .failed: ledger.counts.failed += 1
            case .cancelled: ledger.counts.cancelled += 1
            }
        }
    }

    /// Cancels every request that has not ended, without visiting their entries: the same sums as
    /// `finish(_:_:)` with `.cancelled` for each. The caller drops those entries.
    mutating func cancelUnfinished() {
        counts.cancelled = requestCount - counts.finished - counts.failed
        // Every unfinished request's remaining work leaves the total; cancellation never moves the fraction.
        remaining = 0
        awaitingSizes = 0
    }

    // MARK: Fraction bookkeeping

    /// Applies `change` to one entry and advances the fraction by the work it completed, measured against
    /// the work that was remaining before it.
    @inline(__always)
    private mutating func update(_ entry: inout Entry, _ change: (inout Entry, inout ProgressLedger) -> Void) {
        let before = entry.remaining
        let fractionBefore = fraction
        let effectiveBefore = effectiveRemaining(entry)
        let remainingBefore = totalRemaining
        change(&entry, &self)
        remaining += entry.remaining - before
        // Completed work is the drop in this request's remaining work: measured that way, a size learned
        // in the same step (an unknown size becoming the bytes received) is not mistaken for progress.
        let completed = effectiveBefore - effectiveRemaining(entry)
        if remaining < 0.5 { remaining = 0 }
        let remainingAfter = totalRemaining
        if completed > 0, remainingBefore > 0, entry.outcome == nil || entry.outcome == .succeeded {
            // Completing all remaining work lands on exactly 1.0, not 1 - ε.
            fraction = remainingAfter < 0.5 ? 1 : fraction + (1 - fraction) * min(1, completed / remainingBefore)
        }
        if remainingAfter < 0.5, isComplete, counts.failed + counts.cancelled == 0, requestCount > 0 {
            fraction = 1
        }
        // While a source may add more, the drain is not done, whatever the requests read so far say (a fraction
        // that reached 1.0 before the source opened stays: it never goes back).
        fraction = min(isTotalFinal ? 1 : max(Self.openFractionCap, fractionBefore), max(0, fraction))
    }

    /// The highest fraction while a source is still being read.
    static let openFractionCap = 0.999
}
