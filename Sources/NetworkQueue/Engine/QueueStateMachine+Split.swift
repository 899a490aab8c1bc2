import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A split download as a part of its request's running attempt (issue 51): its events go to the attempt's
/// ``SplitMachine`` under the queue's one lock, and what it decides is applied here (the head, the counts, the log,
/// the loans, the attempt's transfers and its ending) or handed to the shell (starts, stops, writes, the file).
extension QueueStateMachine {
    /// An event of a split download.
    enum SplitEvent {
        /// The download begins, sending `request` over its attempt's first transfer (options: its file's; `part`: what
        /// its file holds already; `isCapped`: the queue caps its rate).
        case begin(URLRequest, NetworkRequest.FileOptions, part: PartSegments?, isCapped: Bool, collectsMetrics: Bool)
        /// An event of connection `id` (its body comes as ``bytes(_:connection:)``).
        case transfer(TransferEvent, connection: Int)
        /// `count` body bytes of connection `id` came.
        case bytes(Int, connection: Int)
        /// The writes of the last ``bytes(_:connection:)`` are done (see ``SplitMachine/written(_:recorded:failure:now:_:)``).
        case written(Int, recorded: Bool, failure: NetworkQueueError?)
        /// The shell began the file: its first head read, or the failure.
        case fileBegun(Result<HeadReading, NetworkQueueError>)
        /// A check for stalled connections came.
        case stallCheckDue
    }

    /// Hands `event` of `slot`'s split attempt `token` to its machine and applies what it decides; what is the
    /// shell's (``SplitMachine/Action``s: start, stop, write, end a segment, begin or finish the file, pass on,
    /// check stalls) is appended to `shell`, in order. Dropped when the attempt is not current.
    mutating func split(
        _ event: SplitEvent, slot: Int, token: UInt64, shell: inout [SplitMachine.Action], now: Double
    ) -> QueueActions {
        guard table.isCurrent(slot, token: token), let attempt = table[slot].machine.phase.attempt else {
            return QueueActions()
        }
        var decided: [SplitMachine.Action] = []
        var reading: HeadReading?
        switch event {
        case .begin(let request, let options, let part, let isCapped, let collectsMetrics):
            // The sources the HEAD found dead are left by the first attempt (a retry asks every source again).
            let record = table[slot]
            let dead = record.machine.attempts == 1 ? record.sourcesDeadAtHead : 0
            attempt.split = SplitMachine(
                request: request, options: options, policy: redirectPolicy, part: part, deadAtHead: dead,
                isCapped: isCapped, collectsMetrics: collectsMetrics, cell: attempt.cell, now: now, &decided)
        case .transfer(let transferEvent, let id):
            attempt.split?.transferEvent(transferEvent, connection: id, now: now, &decided)
        case .bytes(let count, let id):
            attempt.split?.bytes(count, connection: id, now: now, &decided)
        case .written(let kept, let recorded, let failure):
            attempt.split?.written(kept, recorded: recorded, failure: failure, now: now, &decided)
        case .fileBegun(.success(let read)):
            reading = read
            attempt.split?.fileBegun(nil, now: now, &decided)
        case .fileBegun(.failure(let failure)):
            attempt.split?.fileBegun(failure, now: now, &decided)
        case .stallCheckDue:
            attempt.split?.stallCheckDue(now: now, &decided)
        }
        apply(&decided, reading: reading, of: attempt, slot: slot, shell: &shell, now: now)
        return finishEvent(now)
    }

    /// Applies a split machine's actions in order; the shell's go to `shell`. Once the attempt is over (one of them
    /// ended it), the rest are dropped: its transfers were stopped with it.
    private mutating func apply(
        _ decided: inout [SplitMachine.Action], reading: HeadReading?, of attempt: Attempt, slot: Int,
        shell: inout [SplitMachine.Action], now: Double
    ) {
        var index = 0
        while index < decided.count, table.isCurrent(slot, token: attempt.token),
            table[slot].machine.phase.attempt === attempt
        {
            let action = decided[index]
            index += 1
            switch action {
            case .start(_, _, let cell):
                attempt.transfers.insert(cell)
                shell.append(action)
            case .stop(let cell):
                attempt.transfers.remove(cell)
                shell.append(action)
            case .write, .endSegment, .beginFile, .passOn, .checkStalls, .finish:
                shell.append(action)
            case .hearHead:
                if let reading { headRead(reading, slot, now) }
            case .forward(let event):
                transferEventApplied(event, reading: nil, slot: slot, token: attempt.token, now: now)
            case .note(let event, let level, let message):
                outbox.log(level, event, table[slot].request, now: now) { message }
            case .count(let count):
                table[slot].machine.lastActivity = now
                receive(count, keeping: nil, slot: slot, now: now)
            case .borrow(let wanted):
                for _ in 0..<wanted {
                    guard let loan = lendConnection(slot: slot, to: attempt.split?.nextSourceURL) else { break }
                    attempt.split?.lent(loan, now: now, &decided)
                }
                attempt.split?.lent(nil, now: now, &decided)
            case .giveBack(let loan):
                scheduler.returnExtra(host: loan.host)
            case .fail(let error):
                transferEndedApplied(.failed(error), slot: slot, now: now)
            case .fileFailed(let error):
                perform(table[slot].machine.file(.failed(error), file: nil, metrics: nil), slot, now: now)
            }
        }
    }
}
