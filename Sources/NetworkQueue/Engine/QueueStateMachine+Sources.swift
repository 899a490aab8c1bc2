import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The sources being read (``NetworkQueue/add(contentsOf:)-(Source)``), by id.
///
/// A source is read in batches, and only while the queue has room: the requests waiting for their turn plus
/// the reads granted stay within ``QueueStateMachine/readAhead``. Its reader asks before each batch
/// (``QueueStateMachine/askToRead(_:)``) and is granted a number of reads; a reader told to wait is granted
/// its batch later by an action.
struct SourceBook {
    struct Source {
        /// Reads granted and not yet given back (by adding what was read).
        var granted = 0
        /// Requests it announced and has not given yet.
        var unread: Int
    }

    var open: [Int: Source] = [:]
    var nextID = 0
    /// Sources whose readers wait for room, first come first served: a source that read does not pass
    /// one that waits.
    var line: [Int] = []
    /// Reads granted to every source and not given back: room the queue keeps for them.
    var reserved = 0
    /// Failures of sources that ended before the drain was started, in order: heard at ``QueueStateMachine/go(now:)``.
    var heldFailures: [NetworkQueueError.UnderlyingError] = []

    var isEmpty: Bool { open.isEmpty && heldFailures.isEmpty }
    func isOpen(_ id: Int) -> Bool { open[id] != nil }
}

extension QueueStateMachine {
    /// What a source's reader does next.
    enum ReadDecision: Equatable {
        /// Read up to this many requests now, then add them.
        case read(Int)
        /// Wait: a `.readSource` action grants the reads when there is room.
        case wait
        /// Stop: the source was stopped (``NetworkQueue/cancelAll()``, ``NetworkQueue/reset()``, a failure
        /// with cancel-all-on-failure). Its `next()` is never called again.
        case stop
    }

    /// The most requests read from sources and not yet ended, running ones and reads granted included: four
    /// times the preflight window (256 at the default limit of 4, at most 16,384), so that a source is read
    /// only as fast as its requests end, whatever the limit.
    var readAhead: Int { 4 * Scheduler.preflightWindow(limit: scheduler.limit) }

    /// The most reads granted at once: half the look-ahead, so that a reader wakes once per batch.
    private var readBatch: Int { max(1, readAhead / 2) }

    /// How many reads may be granted now (0: none).
    private var grantableReads: Int {
        let pending = scheduler.mainPendingCount
        // Every request not ended counts (running, waiting to retry, paused): counting only those waiting for a
        // slot, a queue that starts whatever it reads would read on without end.
        let room = readAhead - table.count - sources.reserved
        // A full batch, or whatever room is left when the queue is about to run dry.
        guard room >= readBatch || (room > 0 && pending < readBatch) else { return 0 }
        return min(room, readBatch)
    }

    /// Opens a source that announced `expected` requests (0: unknown). Returns its id.
    mutating func openSource(announcing expected: Int, now: Double) -> (id: Int, actions: QueueActions) {
        beginDrainIfIdle()
        let id = sources.nextID
        sources.nextID += 1
        // Its reader asks before its first read.
        sources.open[id] = SourceBook.Source(unread: max(0, expected))
        ledger.openSource(announcing: expected)
        flush.markChanged(at: now)
        return (id, finishEvent(now))
    }

    /// The reader of source `id` asks how many requests it may read. It waits behind the sources waiting
    /// already, so that several sources take turns.
    mutating func askToRead(_ id: Int) -> ReadDecision {
        guard var source = sources.open[id] else { return .stop }
        let count = grantableReads
        if let place = sources.line.firstIndex(of: id) {
            // Asked again while in line: its turn only at the head.
            guard place == 0, count > 0 else { return .wait }
            sources.line.removeFirst()
        } else if !sources.line.isEmpty || count == 0 {
            sources.line.append(id)
            return .wait
        }
        grant(count, to: &source)
        sources.open[id] = source
        return .read(count)
    }

    private mutating func grant(_ count: Int, to source: inout SourceBook.Source) {
        source.granted += count
        sources.reserved += count
    }

    /// Source `id` read `count` of its granted requests, which the caller adds now with
    /// ``insert(_:claim:isObserved:existingFile:source:rejection:now:)``: that much of its grant is given back.
    mutating func sourceRead(_ id: Int, count: Int) {
        guard var source = sources.open[id] else { return }
        let given = min(count, source.granted)
        sources.reserved -= given
        source.granted -= given
        sources.open[id] = source
    }

    /// A request of source `id` joins the queue: an announced one is no longer to come.
    mutating func sourceGave(_ id: Int) {
        guard var source = sources.open[id], source.unread > 0 else { return }
        source.unread -= 1
        sources.open[id] = source
        ledger.readAnnounced()
    }

    /// Source `id` ended: its sequence is over (`failure` nil) or it threw. A failure is reported with a
    /// ``NetworkQueueEvent/sourceDidFail(error:)``, and with cancel-all-on-failure ends every request and
    /// stops every other source.
    mutating func sourceEnded(_ id: Int, failure: NetworkQueueError.UnderlyingError?, now: Double) -> QueueActions {
        closeSource(id, failure: failure, now: now)
        return finishEvent(now)
    }

    /// Closes source `id` as ``sourceEnded(_:failure:now:)`` does, without ending the event.
    mutating func closeSource(_ id: Int, failure: NetworkQueueError.UnderlyingError?, now: Double) {
        guard let source = sources.open.removeValue(forKey: id) else { return }
        sources.line.removeAll { $0 == id }
        sources.reserved -= source.granted
        ledger.closeSource(unread: source.unread)
        flush.markChanged(at: now)
        if let failure {
            guard drainHasRun else { return sources.heldFailures.append(failure) }
            reportSourceFailure(failure, now: now)
        }
    }

    /// Reports a source's failure, and with cancel-all-on-failure ends every request and stops every source.
    private mutating func reportSourceFailure(_ failure: NetworkQueueError.UnderlyingError, now: Double) {
        outbox.post(.sourceDidFail(error: .sourceFailed(failure)))
        if cancelsAllOnFailure { endAll(.cancelledBecauseSourceFailed, now: now) }
    }

    /// The drain starts: the failures of sources that ended before are reported, in order.
    mutating func releaseHeldFailures(now: Double) {
        let held = sources.heldFailures
        sources.heldFailures.removeAll()
        for failure in held { reportSourceFailure(failure, now: now) }
    }

    /// Stops every source: waiting readers are told to stop, and a reader under way stops before its next
    /// `next()` (a request a `next()` under way still returns is not added).
    mutating func stopSources() {
        for (id, source) in sources.open {
            ledger.closeSource(unread: source.unread)
            actions.list.append(.stopSource(id))
        }
        sources.open.removeAll()
        sources.line.removeAll()
        sources.reserved = 0
    }

    /// Grants reads to waiting sources while there is room, in the order they began to wait.
    mutating func grantReads() {
        while let id = sources.line.first {
            let count = grantableReads
            guard count > 0 else { return }
            sources.line.removeFirst()
            guard var source = sources.open[id] else { continue }
            grant(count, to: &source)
            sources.open[id] = source
            actions.list.append(.readSource(id, count: count))
        }
    }
}
