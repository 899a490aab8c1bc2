import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The queue's operations as machine events: starting, the limits and priorities, cancelling, waiting for the
/// drain, and the sources read into the queue (see ``SourceBook``).
extension QueueStateMachine {
    /// Starts the queue. Only a go() that starts a suspended queue preflights: requests added to a
    /// running queue get no HEAD.
    mutating func go(now: Double) -> QueueActions {
        if inDrain, !drainHasRun {
            drainHasRun = true
            // What the sources did before: a failure is heard now, and may end the batch before it starts.
            releaseHeldFailures(now)
        }
        if showsAccurateProgress, scheduler.isSuspended {
            // A batch within the first window gets a HEAD each: its whole total is known before its first GET, at a
            // bounded cost. A bigger one, or one read from a source, plans them per server (see ``PreflightPolicy``):
            // the requests are numbered by server first.
            let wanted = table.records.filter {
                guard case .pending = $0.record.machine.phase, $0.record.existingFile?.conditional == nil else {
                    // A revalidated file asks in its GET: a HEAD would double its requests.
                    return false
                }
                return RequestRules.wantsPreflight($0.record.request)
            }
            asksEveryPreflight = wanted.count <= scheduler.preflightWindow && !drainReadsSource
            numberHostsIfNeeded()
            let candidates = wanted.filter { preflightPays($0.slot) }
            for (slot, record) in candidates.sorted(by: { $0.record.sequence < $1.record.sequence }) {
                apply(slot, .planPreflight, now: now)
                ledger.awaitSize(&record.progress)
            }
        }
        scheduler.go()
        return finishEvent(now)
    }

    /// Sets the limit as ``NetworkQueue/maxConcurrentRequestCount`` takes it (negative: 0, unlimited); the
    /// scheduler runs ``Scheduler/effectiveLimit(_:ceiling:)`` of it.
    mutating func setLimit(_ limit: Int, now: Double) -> QueueActions {
        self.limit = max(0, limit)
        adaptive?.setQueueMaximum(Scheduler.effectiveLimit(limit, ceiling: ceiling), now: now)
        applyQueueLevel()
        scheduler.preflightWindow = Scheduler.preflightWindow(limit: Scheduler.effectiveLimit(limit, ceiling: ceiling))
        return finishEvent(now)
    }

    /// Gives `request` (if `slot` still holds it) a new priority: pending, it moves behind the other pending
    /// requests of that priority; otherwise the priority applies when it next waits for a slot (a retry, a
    /// resume). Returns false when the request is not in the queue any more.
    mutating func setPriority(_ priority: Int, for request: NetworkRequest, slot: Int, now: Double) -> (
        changed: Bool, actions: QueueActions
    ) {
        guard let record = table.record(at: slot), record.request === request else { return (false, QueueActions()) }
        scheduler.setPriority(slot, priority)
        return (true, finishEvent(now))
    }

    /// The most transfers at once to one server (0: only the queue's limit applies).
    var perHostLimit: Int { scheduler.perHostLimit }

    /// Sets the per-host limit. Turning it on numbers the server of every request already in the queue,
    /// running ones included, so that they count against it at once. While it is on, each request is numbered
    /// as it joins the queue (otherwise nothing is hashed: the limit is off for almost every queue).
    mutating func setPerHostLimit(_ limit: Int, now: Double) -> QueueActions {
        scheduler.perHostLimit = limit
        numberHostsIfNeeded()
        return finishEvent(now)
    }

    /// Cancels each request of `targets` that its slot still holds, in one event.
    mutating func cancel(_ targets: [(request: NetworkRequest, slot: Int)], now: Double) -> QueueActions {
        for (request, slot) in targets { cancelOne(request, slot: slot, now: now) }
        endIfEmptiedBeforeGo(now)
        return finishEvent(now)
    }

    /// Cancels `request` if `slot` still holds it; a leader's followers are handed its work first.
    private mutating func cancelOne(_ request: NetworkRequest, slot: Int, now: Double) {
        guard let record = table.record(at: slot), record.request === request else { return }
        guard record.machine.phase.endsWhenCancelled else { return }
        handOver(from: slot, now: now)
        apply(slot, .cancel, now: now)
    }

    /// Cancelling a leader with followers: the oldest follower inherits its place in the index, its file
    /// claim and the other followers, and waits for a slot of its own.
    private mutating func handOver(from slot: Int, now: Double) {
        let leader = table[slot]
        guard !leader.followers.isEmpty else { return }
        let heirSlot = leader.followers.removeFirst()
        let heir = table[heirSlot]
        // Its lanes follow from its phase: from following to pending, it waits for a slot of its own.
        scheduler.setHost(heirSlot, hostNumber(of: heir.request.url))
        apply(heirSlot, .follow(leader: nil), now: now)
        let others = leader.followers
        leader.followers = []
        for follower in others {
            apply(follower, .follow(leader: heirSlot), now: now)
        }
        heir.claim = leader.claim
        leader.claim = nil
        if let key = leader.duplicateKey {
            leaders[key] = heirSlot
            heir.duplicateKey = key
            leader.duplicateKey = nil
        }
        // It now carries the transfer: it weighs what the leader was expected to download.
        ledger.replaceExpectedDownload(&heir.progress, leader.progress.expectedDown)
    }

    /// Cancels every request (see ``endAll(_:now:)``) and stops reading every source.
    mutating func cancelAll(now: Double) -> QueueActions {
        endAll(.cancelled, now: now)
        endIfEmptiedBeforeGo(now)
        return finishEvent(now)
    }

    /// The caller emptied a drain that was never started (nothing left, no source open): it ends now, as a
    /// started one would, with what its sources did before heard first. Only the queue's own reading is
    /// held until `go()`; what the caller did to it is reported at once.
    private mutating func endIfEmptiedBeforeGo(_ now: Double) {
        guard inDrain, !drainHasRun, table.isEmpty, sources.open.isEmpty else { return }
        drainHasRun = true
        releaseHeldFailures(now)
    }

    /// Cancels everything and suspends; the progress returns to zero once no request is left.
    mutating func reset(now: Double) -> QueueActions {
        scheduler.suspend()
        // Forgotten with the rest: a source that failed before the drain was started is never heard.
        sources.heldFailures.removeAll()
        endAll(.cancelled, now: now)
        endIfEmptiedBeforeGo(now)
        let actions = finishEvent(now)
        if table.isEmpty { ledger.reset() }
        return actions
    }

    /// A `run()` caller waits for the drain to end; it is woken at once (behind everything already
    /// posted) when the queue holds no request.
    mutating func awaitDrain(now: Double) -> QueueActions {
        if table.isEmpty, sources.isEmpty {
            outbox.post(.wakeRuns(1, progress(at: now)))
        } else {
            waitingRuns += 1
        }
        return finishEvent(now)
    }

    // MARK: Sources

    /// What the queue holds now, which a source's reads must fit beside.
    var readRoom: SourceBook.Room {
        SourceBook.Room(readAhead: readAhead, requests: table.count, pending: scheduler.mainPendingCount)
    }

    /// The most requests read from sources and not yet ended, running ones and reads granted included: four
    /// times the preflight window (256 at the default limit of 4, at most 16,384), so that a source is read
    /// only as fast as its requests end, whatever the limit.
    var readAhead: Int { 4 * Scheduler.preflightWindow(limit: scheduler.limit) }

    /// Opens a source that announced `expected` requests (0: unknown). Returns its id.
    mutating func openSource(announcing expected: Int, now: Double) -> (id: Int, actions: QueueActions) {
        beginDrainIfIdle()
        let id = sources.open(announcing: expected)
        ledger.openSource(announcing: expected)
        drainReadsSource = true
        // Its requests' HEADs are planned per server, however small the batch was at go().
        if asksEveryPreflight {
            asksEveryPreflight = false
            numberHostsIfNeeded()
        }
        flush.markChanged(at: now)
        return (id, finishEvent(now))
    }

    /// Source `id` ended: its sequence is over (`failure` nil) or it threw. A failure is reported with a
    /// ``NetworkQueueEvent/sourceDidFail(error:)``, and with cancel-all-on-failure ends every request and
    /// stops every other source (once the drain was started; until then it is held). The caller ends the event.
    mutating func closeSource(_ id: Int, failure: NetworkQueueError.UnderlyingError?, now: Double) {
        guard let source = sources.close(id) else { return }
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
    private mutating func releaseHeldFailures(_ now: Double) {
        let held = sources.heldFailures
        sources.heldFailures.removeAll()
        for failure in held { reportSourceFailure(failure, now: now) }
    }
}
