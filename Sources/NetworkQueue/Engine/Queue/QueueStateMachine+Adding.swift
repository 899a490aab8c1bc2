import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Duplicate requests (same method, URL, destination and checksum) under a ``DuplicatePolicy``: the index of the
/// request each key leads to, coalesced followers, and the hand-over when a leader is cancelled.
extension QueueStateMachine {
    /// Adds a request (already checked not to be added before, its destination already claimed); the caller
    /// ends the event. Returns its slot, where ``Command/cancel(_:)`` looks for it. `existingFile`: the destination
    /// file as found when adding a request that may keep it; its HEAD decides. `source`: the id of the source
    /// it was read from; with accurate progress on a
    /// running queue, such a request gets its HEAD too (an added one does not). `rejection`: why a request read
    /// from a source cannot run (its file is another request's): it joins the drain and fails at once.
    mutating func insert(
        _ request: NetworkRequest, claim: DestinationClaim?, isObserved: Bool = false,
        existingFile: ExistingFileRules.FileState? = nil, source: Int?,
        rejection: NetworkQueueError.InvalidRequestReason? = nil, now: Double
    ) -> Int {
        beginDrainIfIdle()
        if let source, sources.gave(source) { ledger.readAnnounced() }
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
            scheduler.setHost(slot, hostNumber(of: request.url))
            if let existingFile {
                record.existingFile = existingFile
                // A HEAD first, the file may be kept as it is; a revalidated one asks in its GET, with no HEAD.
                if existingFile.conditional == nil { planPreflight(record, now: now) }
            } else if source != nil, showsAccurateProgress, !scheduler.isSuspended,
                RequestRules.wantsPreflight(request),
                preflightPays(slot)
            {
                // Read from a source while the drain runs: its HEAD rolls ahead of its GET as the others' did.
                planPreflight(record, now: now)
            }
        }
        // It joins what its phase holds: the lanes (its HEAD's first), or its leader's followers.
        move(slot, from: nil, now: now)
        flush.markChanged(at: now)
        outbox.log(.info, .added, request, now: now) {
            "\(request.method) \(Redaction.describe(request.url))"
                + (follows ? ", following an earlier duplicate" : "")
        }
        if let rejection {
            // Before the drain runs it fails at its start, as an invalid request does: a listener that
            // subscribes before `go()` hears it.
            if drainHasRun {
                end(slot, .failure(.invalidRequest(rejection)), failsSiblings: true, now: now)
            } else {
                record.rejection = rejection
            }
        }
        return slot
    }

    /// Plans the HEAD of a pending request: it will wait in the preflight lane (its main job waits for it), and
    /// weighs the mean learned size until the HEAD says its own.
    private mutating func planPreflight(_ record: RequestRecord, now: Double) {
        _ = record.machine.handle(.planPreflight, of: record.request, &shared, now: now)
        ledger.awaitSize(&record.progress)
    }

    /// The slot of the request a new `request` duplicates under the current policy, if any.
    private func duplicateLeader(of request: NetworkRequest) -> Int? {
        guard duplicatePolicy != .allow else { return nil }
        return leaders[DuplicatePolicy.key(of: request)]
    }

    /// True when adding `request` needs a claim of its own on its file destination: it neither joins an
    /// earlier request nor takes over the file of one it cancels.
    func needsOwnClaim(_ request: NetworkRequest) -> Bool {
        guard let leader = duplicateLeader(of: request) else { return true }
        return duplicatePolicy == .cancelEarlier && table[leader].machine.phase.holdings.committing
    }

    /// Applies the duplicate policy to a record about to be added. Returns true when the record was added
    /// as a follower (nothing more to do); otherwise the record is to be added normally, and it leads its
    /// key from now on.
    private mutating func admitDuplicate(_ record: RequestRecord, now: Double) -> Bool {
        guard duplicatePolicy != .allow else { return false }
        let key = DuplicatePolicy.key(of: record.request)
        guard let earlier = leaders[key] else {
            record.duplicateKey = key
            return false
        }
        switch duplicatePolicy {
        case .allow:
            return false
        case .coalesce:
            // Listed among the leader's followers once it has a slot (see insert).
            _ = record.machine.handle(.follow(leader: earlier), of: record.request, &shared, now: now)
            // The leader's transfer carries the bytes: counted once.
            record.progress = ProgressLedger.Entry(expectedDownload: 0)
            return true
        case .cancelEarlier:
            record.duplicateKey = key
            let replaced = table[earlier]
            guard !replaced.machine.phase.holdings.committing else { return false }
            if record.claim == nil {
                // The file passes to the new request; the earlier one's partial file is deleted first.
                record.claim = replaced.claim
                replaced.claim = nil
            }
            end(earlier, .failure(.cancelled), now: now)
            return false
        }
    }
}
