import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The coordinator's side of a request's life: each event goes to the request's ``RequestMachine`` through
/// ``apply(_:_:transferEnded:now:)``, its lanes and counts follow its holdings (``move(_:from:leaving:transferEnded:)``),
/// and what the machine asks is done in one place (``perform(_:_:transferEnded:now:)``). With `RequestMachine.swift`:
/// a request's path from its slot to its retry.
extension QueueStateMachine {
    /// Ends an event: starts what may start, grants reads, ends an empty drain, arms the timer; returns the actions.
    mutating func finishEvent(_ now: Double) -> QueueActions {
        startReady(now)
        for (id, count) in sources.line.isEmpty ? [] : sources.grantWaiting(room: readRoom) {
            actions.append(.readSource(id, count: count))
        }
        if inDrain, drainHasRun, table.isEmpty, sources.isEmpty { endDrain(now) }
        if let time = timer.arm(
            flushDue: flush.due, startDue: scheduler.nextTimedStart(now: now), waiting: waitingRetries, table: table)
        {
            actions.armTimer = time
        }
        return actions.take(deliverAfter: outbox.announce(now: now))
    }

    /// The last request of the drain ended: the final progress, queueDidFinish, then the `run()` callers.
    private mutating func endDrain(_ now: Double) {
        inDrain = false
        // No slot holds a request: the numbering of servers starts over (unless a server's pacing or hold runs).
        hear(.drained, now: now)
        let progress = progress(at: now)
        outbox.post(.didUpdateProgress(progress))
        flush.queueChanged = false
        outbox.post(.queueDidFinish)
        if waitingRuns > 0 {
            outbox.post(.wakeRuns(waitingRuns, progress))
            waitingRuns = 0
        }
    }

    /// Gives each job the scheduler allows now its slot; an invalid request fails instead.
    private mutating func startReady(_ now: Double) {
        while let job = scheduler.nextStart(now: now) {
            let record = table[job.id]
            let limits = record.request.timeLimits ?? timeLimits
            if let problem = record.request.invalidReason ?? record.rejection
                ?? (limits.problem == nil ? nil : .invalidTimeLimits(limits))
            {
                scheduler.finish(job)
                apply(job.id, .attemptEnded(.invalidRequest(problem)), now: now)
                continue
            }
            if !hostHealth.isEmpty {
                switch hear(.starting(slot: job.id), now: now).turn {
                case .go: break
                case .wait:
                    // Its server's next probe is not due: it waits for it in its lane, the server held until then.
                    scheduler.putBack(job)
                    continue
                case .end(let down):
                    scheduler.finish(job)
                    end(job.id, .failure(down), failsSiblings: true, now: now)
                    continue
                }
            }
            let hooks = adapter != nil || record.request.adapt != nil
            if job.lane == .preflight { hear(.preflight(slot: job.id, started: true), now: now) }
            let granted = RequestMachine.Event.granted(
                job.lane, hooks: hooks, sending: record.request.outgoing, expectedBefore: record.progress.expectedDown,
                deadline: limits.deadlineSeconds)
            apply(job.id, granted, now: now)
        }
    }

    /// The one place a request joins or leaves a lane or a count: from what `slot` held in `phase` (nil: new) to
    /// what it holds now (nothing when `leaving`). A finished HEAD keeps its place ahead of the window; a transfer
    /// no longer held is stopped, unless the transport reported its end (`transferEnded`).
    mutating func move(
        _ slot: Int, from phase: RequestState?, leaving: Bool = false, transferEnded: Bool = false, now: Double
    ) {
        let before = phase?.holdings ?? RequestState.Holdings()
        let after = leaving ? RequestState.Holdings() : table[slot].machine.phase.holdings
        // A down server's probe that leaves its slot without a verdict hands the probing on.
        if !hostHealth.isEmpty, leaving || (!after.mainLane && !after.preflightLane),
            let host = scheduler.host(of: slot)
        {
            hear(.probeStopped(slot: slot, host: host), now: now)
        }
        if before.preflightLane != after.preflightLane {
            let job = Job(id: slot, lane: .preflight)
            let wasActive = scheduler.isActive(job)
            if after.preflightLane {
                scheduler.enqueue(job)
            } else if after.mainLane, wasActive {
                scheduler.finish(job)
            } else {
                // Never started (skipped, paused, cancelled) or ended with its request.
                _ = scheduler.remove(job)
            }
            if wasActive, !after.preflightLane { hear(.preflight(slot: slot, started: false), now: now) }
        }
        if before.mainLane != after.mainLane {
            let job = Job(id: slot, lane: .main)
            if after.mainLane { scheduler.enqueue(job) } else { _ = scheduler.remove(job) }
        }
        if before.runsTransfers, case .running(let left)? = phase,
            leaving || table[slot].machine.phase.attempt !== left
        {
            let loans = left.endSplit()
            // A split download's lent connections go back with its attempt, however it ended.
            for loan in loans { scheduler.returnExtra(host: loan.host) }
        }
        if !transferEnded, before.runsTransfers, let phase {
            let kept = leaving ? Transfers() : table[slot].machine.phase.transfers
            for cell in phase.transfers where !kept.contains(cell) { actions.append(.cancel(cell)) }
        }
        if before.retryWait != after.retryWait { waitingRetries += after.retryWait ? 1 : -1 }
        if before.committing != after.committing { committingCount += after.committing ? 1 : -1 }
        if before.leader != after.leader {
            // A leader ending its followers has already left the table.
            if let leader = before.leader, let record = table.record(at: leader) {
                record.followers.removeAll { $0 == slot }
            }
            if let leader = after.leader { table[leader].followers.append(slot) }
        }
    }

    /// Applies `event` of `slot`'s request: the phase before it, the machine's decision (with what every machine
    /// draws on), the lanes and counts that follow its holdings, a deadline clock it started, then what it asks.
    /// `transferEnded`: the transport reported the end of the transfer (a transfer sent again replaces one the queue
    /// stops itself). Returns what the event asked.
    @discardableResult
    mutating func apply(
        _ slot: Int, _ event: RequestMachine.Event, transferEnded: Bool = false, now: Double
    ) -> RequestMachine.Action {
        let record = table[slot]
        let before = record.machine.phase
        let clock = record.machine.deadline
        let action = record.machine.handle(event, of: record.request, &shared, now: now)
        settle(slot, before: before, clock: clock, action, transferEnded: transferEnded, now: now)
        return action
    }

    /// What follows an event of `slot`'s machine that left `action`, the phase having been `before` and the deadline
    /// clock `clock`: the lanes and counts that follow its holdings, a deadline clock it started, then the action.
    mutating func settle(
        _ slot: Int, before: RequestState, clock: DeadlineClock, _ action: RequestMachine.Action, transferEnded: Bool,
        now: Double
    ) {
        let record = table[slot]
        // Most body pieces and heads move nothing: no holdings to compare, nothing to do.
        if case .none = action, record.machine.phase.isSame(as: before), record.machine.deadline == clock {
            return
        }
        if case .running(let until) = record.machine.deadline, record.machine.deadline != clock {
            timer.addDeadline(until, slot: slot, sequence: record.sequence, table: table)
        }
        let replaced = if case .startTransfer = action { true } else { false }
        move(slot, from: before, transferEnded: transferEnded && !replaced, now: now)
        perform(action, slot, transferEnded: transferEnded, now: now)
    }

    /// Does what the machine of the request in `slot` asked (`transferEnded`: the transport reported the end).
    private mutating func perform(
        _ action: RequestMachine.Action, _ slot: Int, transferEnded: Bool = false, now: Double
    ) {
        let record = table[slot]
        let request = record.request
        switch action {
        case .none:
            break
        case .adapt(let token):
            timer.addTimeout(
                request.timeoutInterval, slot: slot, token: token, now: now, live: scheduler.activeCount, table: table)
            actions.publish(record)
            let hooks = [adapter, request.adapt].compactMap { $0 }
            actions.append(
                .adapt(.init(slot: slot, token: token, urlRequest: request.urlRequest, hooks: hooks)))
        case .startPreflight(let preflight):
            startPreflight(preflight, slot, now: now)
        case .startTransfer(let attempt, let first, let replacing):
            if let replacing {
                // The new transfer's file replaces the refused one's (deleting it first).
                if let sink = replacing.sink { actions.append(.discard(sink)) }
                ledger.rebase(&record.progress, received: 0)
                flush.markChanged(at: now)
            }
            actions.publish(record)
            if first { outbox.post(.didStart(request)) }
            let sent = attempt.sent
            let lowestSpeed = (request.timeLimits ?? timeLimits).lowestSpeed
            if lowestSpeed != nil {
                attempt.speedWindow = SpeedWindow(start: now, moved: record.bytesMoved, queueReceived: receivedTotal)
            }
            timer.addTimeout(
                sent.timeoutInterval, speedWindow: lowestSpeed?.seconds, slot: slot, token: attempt.token, now: now,
                live: scheduler.activeCount, table: table)
            outbox.log(.debug, .attemptStarted, request, now: now) {
                // A file fetched again from one location alone names that location.
                let mirrors = request.fileOptions.mirrors
                let alone: URL? = attempt.onlySource.flatMap {
                    $0 > 0 && $0 <= mirrors.count ? mirrors[$0 - 1] : sent.url
                }
                let isAlone = attempt.onlySource != nil
                return
                    "attempt \(record.machine.attempts): \(sent.method) \(Redaction.describe(isAlone ? alone : sent.url))"
                    + (isAlone ? " (that location alone)" : "")
            }
            let continuesPart =
                record.claim != nil && request.continuesPartialDownloads && replacing == nil
                && RangeRules.mayContinue(sent)
            let shares = record.claim != nil && request.fileOptions.mayShare && RangeRules.mayContinue(sent)
            // The first connection's rule, when nothing but its head is decided on (the part is the shell's to see).
            let carrying =
                shares && attempt.onlySource == nil && attempt.untrusted.isEmpty
                ? SplitMachine.carryRule(
                    locations: 1 + request.fileOptions.mirrors.count, logs: outbox.isLogging,
                    minimumSize: SplitMachine.minimumSize(of: request.fileOptions)) : nil
            let start = QueueAction.Start(
                slot: slot, token: attempt.token, outgoing: sent, cell: attempt.cell,
                body: .checked(
                    request, file: record.claim, continuesPart: continuesPart,
                    revalidation: record.claim == nil ? nil : record.existingFile?.conditional, shares: shares,
                    carrying: carrying),
                collectsMetrics: collectsMetrics, connectTimeout: (request.timeLimits ?? timeLimits).connectSeconds)
            actions.append(.start(start))
        case .askRetry(let decision, let left):
            leave(left, slot, transferEnded: transferEnded, now: now)
            timer.addTimeout(
                request.timeoutInterval, slot: slot, token: decision.token, now: now, live: scheduler.activeCount,
                table: table)
            actions.publish(record)
            let decide = QueueAction.Decide(
                slot: slot, token: decision.token, request: request, error: decision.failure,
                attempts: record.machine.attempts, decide: (request.retryPolicy ?? retryPolicy).decide!)
            actions.append(.decide(decide))
        case .waitToRetry(let wait, let delay, let error, _) where wait.preflight:
            // A HEAD is retried unseen by the delegate (HEADs are invisible to it), heard in the log.
            timer.retries.insert(.init(deadline: now + delay, id: slot, stamp: wait.token))
            actions.publish(record)
            let (retry, retries) = (
                record.machine.failedHeads, (request.retryPolicy ?? retryPolicy).maximumAttempts - 1
            )
            outbox.log(.notice, .retryScheduled, request, now: now) {
                "HEAD retry \(retry)/\(retries) in \(String(format: "%.2f", delay)) s: \(error)"
            }
        case .waitToRetry(let wait, let delay, let error, let left):
            leave(left, slot, transferEnded: transferEnded, now: now)
            timer.retries.insert(.init(deadline: now + delay, id: slot, stamp: wait.token))
            actions.publish(record)
            outbox.post(.willRetry(request, after: delay, error: error))
            // Counted as retries (the first retry of two is "retry 1/2"), as the Demo's rows count them.
            let retry = record.machine.attempts
            let retries = (request.retryPolicy ?? retryPolicy).maximumAttempts - 1
            outbox.log(.notice, .retryScheduled, request, now: now) {
                "retry \(retry)/\(retries) in \(String(format: "%.2f", delay)) s: \(error)"
            }
        case .commit(let attempt, let sink):
            actions.append(.commit(slot: slot, token: attempt.token, sink: sink))
        case .end(.success(let response)):
            end(slot, .success(response), transferEnded: transferEnded, now: now)
        case .end(.failure(let error)):
            end(slot, .failure(error), transferEnded: transferEnded, failsSiblings: true, now: now)
        case .held(let wait, let left):
            // Back among the pending requests at once, where the scheduler holds it with its server's others.
            if !wait.preflight { leave(left, slot, transferEnded: transferEnded, now: now) }
            timer.retries.insert(.init(deadline: now, id: slot, stamp: wait.token))
            actions.publish(record)
        case .rejoin:
            actions.publish(record)
        case .resumed:
            actions.publish(record)
            outbox.post(.didResume(request))
            outbox.log(.info, .resumed, request, now: now) { "resumed" }
        case .paused(let stopped):
            // A late transfer event, hook, decision, timeout or retry deadline of what ran is now stale: the paused
            // phase holds no token. Its bytes stay counted until the resumed transfer's response rebases them.
            if let stopped {
                keepOrDiscardPart(of: stopped, record)
                record.downloadDirty = request.downloadProgressHandler != nil
                flush.markChanged(at: now)
            }
            actions.publish(record)
            outbox.post(.didPause(request))
            outbox.log(.info, .paused, request, now: now) {
                (stopped?.continuedFrom ?? 0) > 0 || record.hasKeptPart
                    ? "paused, keeping the partial file" : "paused"
            }
        case .preflightDone(let failure):
            // A HEAD without a size: the request weighs one unit, as any download of unknown size.
            ledger.stopAwaitingSize(&record.progress)
            actions.publish(record)
            if let failure {
                outbox.log(.notice, .preflightFailed, request, now: now) {
                    "HEAD failed, its retries spent (\(failure)): the GET goes on with its size unknown"
                }
            }
        case .waitUntil(let deadline, let token):
            timer.idle.insert(.init(deadline: deadline, id: slot, stamp: token))
        }
    }

    /// Starts `preflight`, the HEAD of `record`'s request to the source it names (the sources before it failed: a
    /// mirror is asked as the GET would ask it, the credentials a redirect to another origin loses left behind).
    private mutating func startPreflight(_ preflight: RequestState.Preflight, _ slot: Int, now: Double) {
        let record = table[slot]
        let request = record.request
        var head = preflight.sent.urlRequest
        if preflight.location > 0 {
            record.locationsDeadAtHead = preflight.location
            let mirror = request.fileOptions.mirrors[preflight.location - 1]
            head = SplitRules.request(head, to: mirror, origin: head.url, policy: redirectPolicy)
            outbox.log(.notice, .locationDropped, request, now: now) {
                "the HEAD before failed: asking mirror \(preflight.location) (\(Redaction.describe(mirror)))"
            }
        }
        head.httpMethod = "HEAD"
        head.httpBody = nil
        actions.publish(record)
        timer.addTimeout(
            head.timeoutInterval, slot: slot, token: preflight.token, now: now, live: scheduler.activeCount,
            table: table)
        outbox.log(.debug, .preflightStarted, request, now: now) { "HEAD \(Redaction.describe(head.url))" }
        let start = QueueAction.Start(
            slot: slot, token: preflight.token, outgoing: .request(head), cell: preflight.cell, body: .preflight,
            collectsMetrics: false, connectTimeout: (request.timeLimits ?? timeLimits).connectSeconds)
        actions.append(.start(start))
    }

    /// The request in `slot` left its failed attempt `left` for a retry (nil: none had started): what the queue saw
    /// of it is its metrics unless its transport reported them (`transferEnded`), its part is kept or deleted, and
    /// its bytes and size go back to what the next attempt's response will say.
    private mutating func leave(_ left: Attempt?, _ slot: Int, transferEnded: Bool, now: Double) {
        let record = table[slot]
        if !transferEnded, collectsMetrics, let left {
            outbox.post(.didCollectMetrics(record.request, metrics: record.collect(.init(stopped: left, at: now))))
        }
        // A kept part's bytes stay counted until the next attempt's response says whether they still count.
        let kept = left.map { keepOrDiscardPart(of: $0, record) } ?? false
        if !kept { ledger.restart(&record.progress) }
        if let left, record.progress.expectedDown != left.expectedBefore {
            // The size came from this attempt's response (perhaps an error page's): back to what was known.
            ledger.replaceExpectedDownload(&record.progress, left.expectedBefore)
        }
        record.downloadDirty = record.request.downloadProgressHandler != nil
        record.uploadDirty = record.request.uploadProgressHandler != nil
        flush.markChanged(at: now)
    }

    /// The one rule for the part an attempt leaves (failed, or paused): kept for the next attempt when the request
    /// continues parts (the sink keeps it only with a validator), else deleted. Returns true when kept.
    @discardableResult
    private mutating func keepOrDiscardPart(of attempt: Attempt, _ record: RequestRecord) -> Bool {
        guard let sink = attempt.sink else { return false }
        record.hasKeptPart = record.request.continuesPartialDownloads
        actions.append(record.hasKeptPart ? .keep(sink) : .discard(sink))
        return record.hasKeptPart
    }
}
