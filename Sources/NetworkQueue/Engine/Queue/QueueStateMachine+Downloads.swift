import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A split file's events: each is handed to the request's machine, which holds the file's child machine, and its one
/// output is applied here, a field by its applier: the books' entries in order, the connections' work as the event's
/// ``QueueAction/connections(_:)`` for the attempt's shell, and the request's action settled as any event's. The
/// coordinator answers what the machine asks of the shared books in the call (``DownloadBooks``: a loan, a failed
/// connect's verdict), and never hands the machine back what it returned.
extension QueueStateMachine: DownloadBooks {
    /// Hands `event` of `slot`'s split attempt `token` to the request's machine and does what it returns; ends the event.
    /// Dropped when the attempt is not current.
    mutating func splitEvent(_ event: RequestMachine.SplitEvent, slot: Int, token: UInt64, now: Double) -> QueueActions
    {
        // Bytes only placed for the shell to write change nothing the queue shares: no event to finish (their count,
        // with its progress, comes with their writes).
        guard downloadEvent(event, slot: slot, token: token, now: now) else { return actions.take(deliverAfter: nil) }
        return finishEvent(now)
    }

    /// ``splitEvent(_:slot:token:now:)`` without ending the event (the look at a split file's end game, a
    /// ``QueueTimer`` entry; a batched notice of its writes). False when the event changed nothing the queue shares.
    @discardableResult
    mutating func downloadEvent(_ event: RequestMachine.SplitEvent, slot: Int, token: UInt64, now: Double) -> Bool {
        guard table.isCurrent(slot, token: token), case .running = table[slot].machine.phase else { return false }
        let record = table[slot]
        // The shell that does the work: the attempt's, or the one the file begins with.
        var shell = record.machine.splitShell
        if case .begin(_, _, _, _, _, let beginning, _) = event { shell = beginning }
        let (before, clock) = (record.machine.phase, record.machine.deadline)
        let context = RequestMachine.DownloadContext(
            received: record.progress.received, existingFile: record.existingFile, file: record.claim?.url,
            expectedBefore: record.progress.expectedDown, metrics: record.requestMetrics,
            wallClock: outbox.wallClock(at: now), policy: redirectPolicy, deadAtHead: record.locationsDeadAtHead,
            logs: outbox.isLogging)
        // The books' answers in the call (``connectFailed(startedAt:now:)``) are this slot's.
        downloadSlot = slot
        // The machine's shared state goes in apart from the books (both are the coordinator's): copied out and back.
        var shared = self.shared
        let output = record.machine.split(
            event, of: record.request, context: context, books: &self, &shared, now: now)
        self.shared = shared
        var problem: NetworkQueueError?
        for book in output.books {
            if let failure = recordBook(book, of: record, slot: slot, now: now) { problem = failure }
        }
        let moved =
            !(output.request.isNone && record.machine.phase.isSame(as: before) && record.machine.deadline == clock)
        if moved {
            settle(slot, before: before, clock: clock, output.request, transferEnded: output.transferEnded, now: now)
        }
        // A head's problem fails the attempt once its delegate heard the head (the machine stopped deciding there).
        if let problem { apply(slot, .attemptEnded(problem), now: now) }
        if !output.connections.isEmpty, let shell {
            actions.append(.connections(ConnectionBatch(shell: shell, work: output.connections)))
        }
        return moved || problem != nil || !output.books.isEmpty
    }

    /// Records `book`, an entry of `record`'s download event, in the books it names. Returns the problem a head named,
    /// which fails the attempt once the event's books are recorded.
    private mutating func recordBook(
        _ book: RequestMachine.DownloadBook, of record: RequestRecord, slot: Int, now: Double
    ) -> NetworkQueueError? {
        let request = record.request
        switch book {
        case .log(let event, let level, let message):
            outbox.log(level, event, request, now: now) { message }
        case .answered(let head):
            if !hostHealth.isEmpty {
                // A file with mirrors may have its answer from one of them: the server that answered is the one up.
                if request.fileOptions.mirrors.isEmpty {
                    serverAnswered(slot, now: now)
                } else {
                    locationAnswered(head, of: request, now: now)
                }
            }
            if !ResponseRules.isInterim(head) { heedServer(head, of: request, now: now) }
        case .unreachable(let url, let startedAt):
            locationUnreachable(url, startedAt: startedAt, of: request, now: now)
        case .returned(let loan):
            scheduler.returnExtra(host: loan.host)
        case .recheck(let at):
            guard let token = record.machine.phase.token else { break }
            timer.splits.insert(.init(deadline: at, id: slot, stamp: token))
        case .head(let read, let head):
            headHeard(read, head, slot: slot, now: now)
            if case .read(_, _, _, let problem?) = read { return problem }
        case .counted(let count):
            countBytes(count, of: record, now: now)
            shown(record, slot: slot, now: now)
        case .sent(let sent, let expected):
            ledger.send(&record.progress, totalSent: sent, expected: expected, at: now)
            flush.list(slot, isListed: &record.isListedDirty)
        case .redirected(let redirect):
            outbox.log(redirect, of: request, now: now)
        case .metrics(let metrics):
            guard collectsMetrics else { break }
            outbox.post(.didCollectMetrics(request, metrics: record.collect(metrics)))
        case .ended(let outcome):
            sample(outcome, of: record, slot: slot, now: now)
        }
        return nil
    }

    /// One connection lent to a running split download.
    struct ConnectionLoan: Sendable {
        /// The host it counts toward under a per-host limit.
        let host: Int?
    }

    mutating func lend(toServerOf location: URL?, now: Double) -> ConnectionLoan? {
        let host = hostNumber(of: location)
        return scheduler.lendExtra(host: host, now: now) ? ConnectionLoan(host: host) : nil
    }

    mutating func connectFailed(startedAt: Double, now: Double) -> ConnectVerdict {
        deadHosts.isEnabled ? connectVerdict(downloadSlot, startedAt: startedAt, now: now) : .counted
    }
}
