import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The queue's operations as machine events: adding, starting and suspending, the limit and the order,
/// cancelling, and waiting for the drain.
extension QueueStateMachine {

    /// Adds a request (already checked not to be added before, its destination already claimed).
    /// Returns its slot, where ``cancel(_:slot:now:)`` looks for it.
    /// `existingFile`: the destination file as found when adding a request that may keep it; its HEAD
    /// decides (see ``NetworkRequest/ExistingFile/skipIfUnchanged``).
    mutating func add(
        _ request: NetworkRequest, claim: DestinationClaim?, isObserved: Bool = false,
        existingFile: ExistingFileRules.FileState? = nil, now: Double
    ) -> (slot: Int, actions: QueueActions) {
        let slot = insert(
            request, claim: claim, isObserved: isObserved, existingFile: existingFile, source: nil, now: now)
        return (slot, finishEvent(now))
    }

    /// Adds a request as ``add(_:claim:isObserved:existingFile:now:)`` does, without ending the event.
    /// `source`: the id of the source it was read from (see ``sourceGave(_:)``); with accurate progress on a
    /// running queue, such a request gets its HEAD too (an added one does not). `rejection`: why a request read
    /// from a source cannot run (its file is another request's): it joins the drain and fails at once.
    mutating func insert(
        _ request: NetworkRequest, claim: DestinationClaim?, isObserved: Bool = false,
        existingFile: ExistingFileRules.FileState? = nil, source: Int?,
        rejection: NetworkQueueError.InvalidRequestReason? = nil, now: Double
    ) -> Int {
        beginDrainIfIdle()
        if let source { sourceGave(source) }
        nextSequence += 1
        let record = RequestRecord(request: request, sequence: nextSequence, claim: claim, isObserved: isObserved)
        let follows = admitDuplicate(record, now: now)
        ledger.add(record.progress)
        // Until its own head (or a HEAD) says, a download weighs the mean size learned so far, not one unit:
        // a batch's first sizes would otherwise outweigh everything still to come and read as near 1.0.
        ledger.awaitSize(&record.progress)
        let slot = table.insert(record)
        // Slots are reused: every new request sets its own.
        scheduler.setPriority(slot, request.initialPriority.rawValue)
        if !follows {
            // A request that will fail at its start leads no duplicate.
            if let key = record.duplicateKey, rejection == nil { leaders[key] = slot }
            scheduler.setHost(slot, scheduler.perHostLimit > 0 ? servers.number(of: request.url) : nil)
            if let existingFile {
                // A HEAD first: the file may be kept as it is.
                record.existingFile = existingFile
                planPreflight(record)
            } else if source != nil, showsAccurateProgress, !scheduler.isSuspended, RequestRules.wantsPreflight(request)
            {
                // Read from a source while the drain runs: its HEAD rolls ahead of its GET as the others' did.
                planPreflight(record)
            }
        }
        // It joins what its phase holds: the lanes (its HEAD's first), or its leader's followers.
        move(slot, from: RequestState.Holdings())
        flush.markChanged(at: now)
        outbox.log(.info, .added, request, now: now) {
            "\(request.method) \(Redaction.describe(request.url))"
                + (follows ? ", following an earlier duplicate" : "")
        }
        if let rejection {
            // Before the drain runs it fails at its start, as an invalid request does: a listener that
            // subscribes before `go()` hears it.
            if drainHasRun {
                fail(slot, .invalidRequest(rejection), now: now)
            } else {
                record.rejection = rejection
            }
        }
        return slot
    }

    /// Starts the queue. Only a go() that starts a suspended queue preflights: requests added to a
    /// running queue get no HEAD.
    mutating func go(now: Double) -> QueueActions {
        if inDrain, !drainHasRun {
            drainHasRun = true
            // What the sources did before: a failure is heard now, and may end the batch before it starts.
            releaseHeldFailures(now: now)
        }
        if showsAccurateProgress, scheduler.isSuspended {
            let candidates = table.records.filter {
                guard case .pending = $0.record.machine.phase else { return false }
                return RequestRules.wantsPreflight($0.record.request)
            }
            for (slot, record) in candidates.sorted(by: { $0.record.sequence < $1.record.sequence }) {
                let before = record.machine.phase.holdings
                planPreflight(record)
                move(slot, from: before)
            }
        }
        scheduler.go()
        return finishEvent(now)
    }

    /// Plans the HEAD of a pending request: it will wait in the preflight lane (its main job waits for it), and
    /// weighs the mean learned size until the HEAD says its own.
    private mutating func planPreflight(_ record: RequestRecord) {
        _ = record.machine.planPreflight()
        ledger.awaitSize(&record.progress)
    }

    /// Sets the limit as ``NetworkQueue/maxConcurrentRequestCount`` takes it (negative: 0, unlimited); the
    /// scheduler runs ``effectiveLimit(_:ceiling:)`` of it.
    mutating func setLimit(_ limit: Int, now: Double) -> QueueActions {
        self.limit = max(0, limit)
        scheduler.limit = Scheduler.effectiveLimit(limit, ceiling: ceiling)
        scheduler.preflightWindow = Scheduler.preflightWindow(limit: scheduler.limit)
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

    /// Cancels one request, if `slot` still holds it (a slot is reused once its request ends). A request whose file is
    /// being moved into place is past cancelling: it ends on its own.
    mutating func cancel(_ request: NetworkRequest, slot: Int, now: Double) -> QueueActions {
        cancelOne(request, slot: slot, now: now)
        endIfEmptiedBeforeGo(now: now)
        return finishEvent(now)
    }

    /// Cancels `request` if `slot` still holds it; a leader's followers are handed its work first.
    private mutating func cancelOne(_ request: NetworkRequest, slot: Int, now: Double) {
        guard let record = table.record(at: slot), record.request === request else { return }
        let action = record.machine.cancel()
        guard case .end = action else { return }
        handOver(from: slot)
        perform(action, slot, now: now)
    }

    /// Cancels each request of `targets` that its slot still holds, in one event.
    mutating func cancel(_ targets: [(request: NetworkRequest, slot: Int)], now: Double) -> QueueActions {
        for (request, slot) in targets { cancelOne(request, slot: slot, now: now) }
        endIfEmptiedBeforeGo(now: now)
        return finishEvent(now)
    }

    /// Cancels every request (see ``endAll(_:now:)``) and stops reading every source.
    mutating func cancelAll(now: Double) -> QueueActions {
        endAll(.cancelled, now: now)
        endIfEmptiedBeforeGo(now: now)
        return finishEvent(now)
    }

    /// The caller emptied a drain that was never started (nothing left, no source open): it ends now, as a
    /// started one would, with what its sources did before heard first. Only the queue's own reading is
    /// held until `go()`; what the caller did to it is reported at once.
    private mutating func endIfEmptiedBeforeGo(now: Double) {
        guard inDrain, !drainHasRun, table.isEmpty, sources.open.isEmpty else { return }
        drainHasRun = true
        releaseHeldFailures(now: now)
    }

    /// Cancels everything and suspends; the progress returns to zero once no request is left.
    mutating func reset(now: Double) -> QueueActions {
        scheduler.suspend()
        // Forgotten with the rest: a source that failed before the drain was started is never heard.
        sources.heldFailures.removeAll()
        endAll(.cancelled, now: now)
        endIfEmptiedBeforeGo(now: now)
        let actions = finishEvent(now)
        if table.isEmpty { ledger.reset() }
        return actions
    }

    /// A `run()` caller waits for the drain to end; it is woken at once (behind everything already
    /// posted) when the queue holds no request.
    mutating func awaitDrain(now: Double) -> QueueActions {
        if table.isEmpty, sources.isEmpty {
            outbox.post(.wakeRuns(1, ledger.snapshot(at: now)))
        } else {
            waitingRuns += 1
        }
        return finishEvent(now)
    }

}
