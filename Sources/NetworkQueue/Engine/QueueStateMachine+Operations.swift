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
        if !inDrain {
            inDrain = true
            ledger.reset()
        }
        nextSequence += 1
        let record = RequestRecord(request: request, sequence: nextSequence, claim: claim, isObserved: isObserved)
        let follows = admitDuplicate(record, now: now)
        ledger.add(record.progress)
        let slot = table.insert(record)
        // Slots are reused: every new request sets its own.
        scheduler.setPriority(slot, request.initialPriority.rawValue)
        if case .following(let leader) = record.state {
            table[leader].followers.append(slot)
        } else {
            if let key = record.duplicateKey { leaders[key] = slot }
            assignHost(slot, request)
            if let existingFile {
                // A HEAD first: the file may be kept as it is.
                record.existingFile = existingFile
                record.state.planPreflight()
                scheduler.enqueue(Job(id: slot, lane: .preflight))
            }
            scheduler.enqueue(Job(id: slot, lane: .main))
        }
        markProgressDirty(at: now)
        log(.info, .added, request, now: now) {
            "\(request.urlRequest.httpMethod ?? "GET") \(Redaction.describe(request.url))"
                + (follows ? ", following an earlier duplicate" : "")
        }
        return (slot, finishEvent(now))
    }

    /// Starts the queue. Only a go() that starts a suspended queue preflights: requests added to a
    /// running queue get no HEAD.
    mutating func go(now: Double) -> QueueActions {
        if showsAccurateProgress, scheduler.isSuspended {
            let candidates = table.records.filter {
                guard case .pending = $0.record.state else { return false }
                return RequestRules.wantsPreflight($0.record.request.urlRequest)
            }
            for (slot, _) in candidates.sorted(by: { $0.record.sequence < $1.record.sequence }) {
                table[slot].state.planPreflight()
                scheduler.enqueue(Job(id: slot, lane: .preflight))
            }
        }
        scheduler.go()
        return finishEvent(now)
    }

    /// Stops new starts; running transfers continue.
    mutating func suspend() { scheduler.suspend() }

    mutating func setLimit(_ limit: Int, now: Double) -> QueueActions {
        scheduler.limit = limit
        return finishEvent(now)
    }

    mutating func setOrder(_ order: SchedulingOrder) { scheduler.order = order }

    /// Gives `request` (if `slot` still holds it) a new priority: pending, it moves behind the other pending
    /// requests of that priority; otherwise the priority applies when it next waits for a slot (a retry, a
    /// resume). Returns false when the request is not in the queue any more.
    mutating func setPriority(_ priority: Int, for request: NetworkRequest, slot: Int, now: Double) -> (changed: Bool, actions: QueueActions) {
        guard let record = table.record(at: slot), record.request === request else { return (false, QueueActions()) }
        scheduler.setPriority(slot, priority)
        return (true, finishEvent(now))
    }

    /// Cancels one request, if `slot` still holds it (a slot is reused once its request ends). A request whose file is
    /// being moved into place is past cancelling: it ends on its own.
    mutating func cancel(_ request: NetworkRequest, slot: Int, now: Double) -> QueueActions {
        cancelOne(request, slot: slot, now: now)
        return finishEvent(now)
    }

    /// Cancels `request` if `slot` still holds it; a leader's followers are handed its work first.
    private mutating func cancelOne(_ request: NetworkRequest, slot: Int, now: Double) {
        guard let record = table.record(at: slot), record.request === request, !record.state.holdings.committing else { return }
        handOver(from: slot)
        end(slot, .failure(.cancelled), now: now)
    }

    /// Cancels each request of `targets` that its slot still holds, in one event.
    mutating func cancel(_ targets: [(request: NetworkRequest, slot: Int)], now: Double) -> QueueActions {
        for (request, slot) in targets { cancelOne(request, slot: slot, now: now) }
        return finishEvent(now)
    }

    /// Cancels every request (see ``endAll(_:now:)``).
    mutating func cancelAll(now: Double) -> QueueActions {
        endAll(.cancelled, now: now)
        return finishEvent(now)
    }

    /// Cancels everything and suspends; the progress returns to zero once no request is left.
    mutating func reset(now: Double) -> QueueActions {
        scheduler.suspend()
        endAll(.cancelled, now: now)
        let actions = finishEvent(now)
        if table.isEmpty { ledger.reset() }
        return actions
    }

    /// A `run()` caller waits for the drain to end; it is woken at once (behind everything already
    /// posted) when the queue holds no request.
    mutating func awaitDrain(now: Double) -> QueueActions {
        if table.isEmpty {
            post(.wakeRuns(1, ledger.snapshot(at: now)))
        } else {
            waitingRuns += 1
        }
        return finishEvent(now)
    }

    /// Everything posted so far, for one delivery pass.
    mutating func takeDeliveries() -> [Delivery] { outbox.take() }
}
