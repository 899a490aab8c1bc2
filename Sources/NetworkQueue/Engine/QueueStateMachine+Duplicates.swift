/// Duplicate requests (same method, URL, destination and checksum) under a ``DuplicatePolicy``: the index of the
/// request each key leads to, coalesced followers, and the hand-over when a leader is cancelled.
extension QueueStateMachine {
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
    mutating func admitDuplicate(_ record: RequestRecord, now: Double) -> Bool {
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
            _ = record.machine.follow(earlier)
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

    /// Cancelling a leader with followers: the oldest follower inherits its place in the index, its file
    /// claim and the other followers, and waits for a slot of its own.
    mutating func handOver(from slot: Int) {
        let leader = table[slot]
        guard !leader.followers.isEmpty else { return }
        let heirSlot = leader.followers.removeFirst()
        let heir = table[heirSlot]
        // Its lanes follow from its phase: from following to pending, it waits for a slot of its own.
        scheduler.setHost(heirSlot, scheduler.perHostLimit > 0 ? servers.number(of: heir.request.url) : nil)
        let before = heir.machine.phase.holdings
        _ = heir.machine.follow(nil)
        move(heirSlot, from: before)
        let others = leader.followers
        leader.followers = []
        for follower in others {
            let record = table[follower]
            let held = record.machine.phase.holdings
            _ = record.machine.follow(heirSlot)
            move(follower, from: held)
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

    /// A leader ended: its key is free, and each follower ends with the same result (after a didStart of
    /// its own when the shared transfer ran and did not end by cancellation).
    mutating func endFollowers(
        of record: RequestRecord, slot: Int, _ result: Result<NetworkResponse, NetworkQueueError>, now: Double
    ) {
        if let key = record.duplicateKey, leaders[key] == slot { leaders[key] = nil }
        guard !record.followers.isEmpty else { return }
        let followers = record.followers
        record.followers = []
        let ran: Bool
        switch result {
        case .success: ran = true
        case .failure(let error): ran = record.machine.hasStarted && !error.isCancellation
        }
        // They show the leader's head as theirs.
        let head = record.machine.phase.shown.head
        for follower in followers {
            let followerRecord = table[follower]
            if ran { outbox.post(.didStart(followerRecord.request)) }
            end(follower, result, endingHead: head, now: now)
        }
    }
}
