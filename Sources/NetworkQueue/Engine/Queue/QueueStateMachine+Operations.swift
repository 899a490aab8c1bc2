import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The queue's operations as machine events, each a ``QueueStateMachine/Command`` through one door,
/// ``QueueStateMachine/perform(_:now:)``: starting, the limits, priorities and pacing, cancelling, pausing and resuming,
/// waiting for the drain, and the sources read into the queue (see ``SourceBook``).
extension QueueStateMachine {
    /// A command of the queue's shell, heard through ``perform(_:now:)``: ``NetworkQueue``'s public calls, and the
    /// answers of the hooks the shell runs for the machine (an adapter's, a retry policy's closure).
    enum Command {
        /// Starts the queue (``NetworkQueue/go()``).
        case go
        /// A run waits for the drain's end (``NetworkQueue/run()``).
        case awaitDrain
        /// The queue's limit (``NetworkQueue/maxConcurrentRequestCount``).
        case setLimit(Int)
        /// The most transfers at once to one server (``NetworkQueue/maxConcurrentRequestsPerHost``).
        case setPerHostLimit(Int)
        /// A request's new priority, if its slot still holds it.
        case setPriority(Int, NetworkRequest, slot: Int)
        /// The pacing of the server a key names, or without one the queue's (``NetworkQueue/setHostPacing(_:for:)``).
        case setHostPacing(HostPacing?, server: String?)
        /// How concurrency adapts (``NetworkQueue/adaptiveConcurrency``).
        case setAdaptiveConcurrency(AdaptiveConcurrency?)
        /// Cancels each request its slot still holds, in one event.
        case cancel([(request: NetworkRequest, slot: Int)])
        /// Pauses each request its slot still holds, in one event.
        case pause([(request: NetworkRequest, slot: Int)])
        /// Resumes each request its slot still holds, in one event.
        case resume([(request: NetworkRequest, slot: Int)])
        /// Cancels every request (``NetworkQueue/cancelAll()``).
        case cancelAll
        /// Suspends the queue and cancels every request (``NetworkQueue/reset()``).
        case reset
        /// A source of requests opens, announcing how many it expects (0: unknown).
        case openSource(announcing: Int)
        /// A source closed: read to its end, or failed.
        case closeSource(Int, failure: NetworkQueueError.UnderlyingError?)
        /// The adapt hooks the shell ran for attempt `token` of the request in `slot` returned the request to send, or
        /// threw.
        case adapted(slot: Int, token: UInt64, Result<URLRequest, NetworkQueueError.UnderlyingError>)
        /// The retry policy's closure the shell ran answered about the attempt `token` that failed in `slot`.
        case retryDecided(slot: Int, token: UInt64, RetryPolicy.Decision)
    }

    /// What a command did: the actions for the shell, and what the command asked about.
    struct CommandOutcome {
        /// The shell's work (empty for ``Command/closeSource(_:failure:)``, which is heard with the next event).
        var actions: QueueActions
        /// The requests a pause paused or a resume resumed; for a new priority, its request while it is in the queue.
        var requests: [NetworkRequest] = []
        /// The new source's id (``Command/openSource(announcing:)``).
        var sourceID: Int?
    }

    /// Performs one of the shell's commands at `now`.
    mutating func perform(_ command: Command, now: Double) -> CommandOutcome {
        switch command {
        case .go: return CommandOutcome(actions: go(now: now))
        case .awaitDrain: return CommandOutcome(actions: awaitDrain(now: now))
        case .setLimit(let limit): return CommandOutcome(actions: setLimit(limit, now: now))
        case .setPerHostLimit(let limit): return CommandOutcome(actions: setPerHostLimit(limit, now: now))
        case .setPriority(let priority, let request, let slot):
            let (changed, actions) = setPriority(priority, for: request, slot: slot, now: now)
            return CommandOutcome(actions: actions, requests: changed ? [request] : [])
        case .setHostPacing(let pacing, let server):
            return CommandOutcome(actions: setHostPacing(pacing, forServer: server, now: now))
        case .setAdaptiveConcurrency(let rules): return CommandOutcome(actions: setAdaptiveConcurrency(rules, now: now))
        case .cancel(let targets): return CommandOutcome(actions: cancel(targets, now: now))
        case .pause(let targets):
            let (paused, actions) = pause(targets, now: now)
            return CommandOutcome(actions: actions, requests: paused)
        case .resume(let targets):
            let (resumed, actions) = resume(targets, now: now)
            return CommandOutcome(actions: actions, requests: resumed)
        case .cancelAll: return CommandOutcome(actions: cancelAll(now: now))
        case .reset: return CommandOutcome(actions: reset(now: now))
        case .openSource(let expected):
            let (id, actions) = openSource(announcing: expected, now: now)
            return CommandOutcome(actions: actions, sourceID: id)
        case .closeSource(let id, let failure):
            closeSource(id, failure: failure, now: now)
            return CommandOutcome(actions: QueueActions())
        case .adapted(let slot, let token, let outcome):
            return CommandOutcome(actions: adapted(slot: slot, token: token, outcome, now: now))
        case .retryDecided(let slot, let token, let decision):
            return CommandOutcome(actions: retryDecided(slot: slot, token: token, decision, now: now))
        }
    }

    /// Starts the queue. Only a go() that starts a suspended queue preflights: requests added to a
    /// running queue get no HEAD.
    private mutating func go(now: Double) -> QueueActions {
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
            hear(.settingsChanged, now: now)
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
    private mutating func setLimit(_ limit: Int, now: Double) -> QueueActions {
        self.limit = max(0, limit)
        adaptive?.setQueueMaximum(Scheduler.effectiveLimit(limit, ceiling: ceiling), now: now)
        hear(.settingsChanged, now: now)
        scheduler.preflightWindow = Scheduler.preflightWindow(limit: Scheduler.effectiveLimit(limit, ceiling: ceiling))
        return finishEvent(now)
    }

    /// Gives `request` (if `slot` still holds it) a new priority: pending, it moves behind the other pending
    /// requests of that priority; otherwise the priority applies when it next waits for a slot (a retry, a
    /// resume). Returns false when the request is not in the queue any more.
    private mutating func setPriority(_ priority: Int, for request: NetworkRequest, slot: Int, now: Double) -> (
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
    private mutating func setPerHostLimit(_ limit: Int, now: Double) -> QueueActions {
        scheduler.perHostLimit = limit
        hear(.settingsChanged, now: now)
        return finishEvent(now)
    }

    /// Cancels each request of `targets` that its slot still holds, in one event.
    private mutating func cancel(_ targets: [(request: NetworkRequest, slot: Int)], now: Double) -> QueueActions {
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
    private mutating func cancelAll(now: Double) -> QueueActions {
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
    private mutating func reset(now: Double) -> QueueActions {
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
    private mutating func awaitDrain(now: Double) -> QueueActions {
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
    private mutating func openSource(announcing expected: Int, now: Double) -> (id: Int, actions: QueueActions) {
        beginDrainIfIdle()
        let id = sources.open(announcing: expected)
        ledger.openSource(announcing: expected)
        drainReadsSource = true
        // Its requests' HEADs are planned per server, however small the batch was at go().
        if asksEveryPreflight {
            asksEveryPreflight = false
            hear(.settingsChanged, now: now)
        }
        flush.markChanged(at: now)
        return (id, finishEvent(now))
    }

    /// Source `id` ended: its sequence is over (`failure` nil) or it threw. A failure is reported with a
    /// ``NetworkQueueEvent/sourceDidFail(error:)``, and with cancel-all-on-failure ends every request and
    /// stops every other source (once the drain was started; until then it is held). The caller ends the event.
    private mutating func closeSource(_ id: Int, failure: NetworkQueueError.UnderlyingError?, now: Double) {
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

    // MARK: Pausing and resuming

    /// Pauses each request of `targets` that its slot still holds and that can be paused, in one event.
    /// Returns the requests paused.
    ///
    /// A paused request holds no slot and waits in no lane; it stays in the table, so the drain (and
    /// `queueDidFinish`) waits for it. What a pause does depends on where the request is:
    /// - waiting for a slot (`pending`, `awaitingPreflight`, `awaitingMain`): it leaves the lanes;
    /// - running: its transfer is stopped. A file destination's part and validator are kept, and the resumed
    ///   transfer continues them with a `Range` request; a memory body is dropped and starts over. Its bytes stay
    ///   in the progress until the resumed transfer's response says how many still count (the fraction never
    ///   goes backwards);
    /// - preflighting or adapting: the HEAD or the hooks' result is dropped, and they run again on resume;
    /// - deciding or waiting to retry: the wait ends; on resume the next attempt waits only for a slot;
    /// - committing (its file being moved into place) or following a duplicate's leader: it cannot be paused
    ///   (a follower's bytes are its leader's: pause the leader).
    private mutating func pause(_ targets: [(request: NetworkRequest, slot: Int)], now: Double) -> (
        paused: [NetworkRequest], actions: QueueActions
    ) {
        var paused: [NetworkRequest] = []
        for (request, slot) in targets where pauseOne(request, slot: slot, now: now) { paused.append(request) }
        return (paused, finishEvent(now))
    }

    /// Resumes each paused request of `targets` that its slot still holds, in one event. Returns the
    /// requests resumed.
    private mutating func resume(_ targets: [(request: NetworkRequest, slot: Int)], now: Double) -> (
        resumed: [NetworkRequest], actions: QueueActions
    ) {
        var resumed: [NetworkRequest] = []
        for (request, slot) in targets {
            guard table.record(at: slot)?.request === request else { continue }
            let action = apply(slot, .resume, now: now)
            if case .resumed = action { resumed.append(request) }
        }
        return (resumed, finishEvent(now))
    }

    /// Pauses `request` if `slot` still holds it and it can be paused (the machine says; the coordinator keeps or
    /// deletes the part of the attempt it stops, as for a retry).
    private mutating func pauseOne(_ request: NetworkRequest, slot: Int, now: Double) -> Bool {
        guard table.record(at: slot)?.request === request else { return false }
        let action = apply(slot, .pause, now: now)
        if case .paused = action { return true }
        return false
    }

    // MARK: Pacing and adaptive concurrency

    /// Sets the pacing of the server `key` names (see ``NetworkQueue/setHostPacing(_:for:)``; nil: the queue-wide one),
    /// or without a key the queue-wide pacing (see ``NetworkQueue/hostPacing``; nil: none).
    private mutating func setHostPacing(_ pacing: HostPacing?, forServer key: String?, now: Double) -> QueueActions {
        if let key {
            pacingByServer[key] = pacing
        } else {
            hostPacing = pacing ?? .unpaced
            scheduler.pacingInterval = hostPacing.interval
            scheduler.randomizesPacing = hostPacing.isRandomized
        }
        hear(.settingsChanged, now: now)
        if let key, let number = servers.number(ofKey: key) {
            scheduler.setPacing(pacing?.interval, randomized: pacing?.isRandomized ?? false, ofHost: number)
        }
        return finishEvent(now)
    }

    /// Sets how concurrency adapts (nil: it does not; each server's limit of its own is taken away). Turning it on
    /// numbers every request by server; servers start at the rules' initial level.
    private mutating func setAdaptiveConcurrency(_ rules: AdaptiveConcurrency?, now: Double) -> QueueActions {
        adaptive = rules.map {
            AdaptiveLevels($0, queueMaximum: Scheduler.effectiveLimit(limit, ceiling: ceiling), now: now)
        }
        for number in 0..<servers.count { scheduler.setLimit(adaptive?.level(ofHost: number) ?? 0, ofHost: number) }
        hear(.settingsChanged, now: now)
        return finishEvent(now)
    }

    // MARK: The hooks' answers

    /// The adapt hooks of the attempt `token` returned the request to send, or threw.
    private mutating func adapted(
        slot: Int, token: UInt64, _ outcome: Result<URLRequest, NetworkQueueError.UnderlyingError>, now: Double
    ) -> QueueActions {
        // The token is current only while the hooks run: a request ended or paused meanwhile holds another.
        guard table.isCurrent(slot, token: token) else { return finishEvent(now) }
        let record = table[slot]
        let checked = outcome.mapError { NetworkQueueError.adaptationFailed($0) }.flatMap { urlRequest in
            RequestRules.validate(urlRequest, destination: record.request.destination).map {
                .failure(.invalidRequest($0))
            } ?? .success(urlRequest)
        }
        apply(slot, .adapted(checked, expectedBefore: record.progress.expectedDown), now: now)
        return finishEvent(now)
    }

    /// The retry policy's closure answered about the attempt that failed in `slot`.
    private mutating func retryDecided(
        slot: Int, token: UInt64, _ decision: RetryPolicy.Decision, now: Double
    ) -> QueueActions {
        // Cancelled or paused meanwhile: the token is stale.
        guard table.isCurrent(slot, token: token), case .deciding = table[slot].machine.phase else {
            return finishEvent(now)
        }
        apply(slot, .retryDecided(decision), now: now)
        return finishEvent(now)
    }
}
