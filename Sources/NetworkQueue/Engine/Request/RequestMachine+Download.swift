import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request's split file (issues 36, 51, 62): the ``SplitMachine`` is a child of the request's machine, held in its
/// running phase's payload (the ``Attempt``), as async-http-client's connection state machine holds its request's.
/// Its actions are translated here and only here, in the call that produced them: the shell's work on the file's
/// connections (``ConnectionWork``, applied by the shell alone), the request machine's own ending of the attempt, or
/// the queue's: the attempt's transfer notices, heard as a plain transfer's, and its books' entries. Nothing outside
/// this file reaches into the child.
extension RequestMachine {
    /// An event of the running attempt's split file.
    enum SplitEvent {
        /// The download begins, sending `request` (as the queue sends it) over the attempt's first transfer
        /// (`options`: its file's; `part`: what its file holds already; `isCapped`: the queue caps its rate). `shell`
        /// does its work.
        case begin(
            OutgoingRequest, NetworkRequest.FileOptions, part: PartSegments?, isCapped: Bool, collectsMetrics: Bool,
            shell: any ConnectionShell)
        /// An event of connection `id` (its body comes as ``bytes(_:connection:)``).
        case transfer(TransferEvent, connection: Int)
        /// `count` body bytes of connection `id` came, the first at `at` of the file (its cursor had no room for them).
        case bytes(Int, connection: Int, at: Int64?)
        /// Connection `connection` wrote its bytes through its cursor for `segment` up to `through` (a batched notice).
        case reached(connection: Int, through: Int64, segment: Int)
        /// A write through a cursor failed.
        case writeFailed(NetworkQueueError)
        /// The writes of the last ``bytes(_:connection:)`` are done: `kept` bytes in all (the record saved when
        /// `recorded`), or the part could not be written (`failure`).
        case written(Int, recorded: Bool, failure: NetworkQueueError?)
        /// The shell began the file: its first head read, or the failure.
        case fileBegun(Result<HeadReading, NetworkQueueError>)
        /// The queue answered a ``SplitMachine/Action/borrow(_:)``: the connections it lent (none: it had none to lend).
        case lent([QueueStateMachine.ConnectionLoan])
        /// The look at the end game came (``SplitMachine/Action/recheck(at:)``, a ``QueueTimer`` entry).
        case recheckDue
        /// The shell closed and checked the whole file (its checksum, when one is given, matched): the attempt's
        /// transfers are over and it succeeds, with the file's metrics when collected.
        case finished(TransferMetrics?)
    }

    /// Applies `event` of the running attempt's split file of `request` at `now` (`policy`: how a mirror's request is
    /// made; `deadAtHead`: the locations the HEAD found dead, left by the first attempt). The file's child machine
    /// decides; its actions are translated here, in this call: the shell's work on the file's connections is appended
    /// to `work` (the attempt's transfers follow its starts and stops), a failure of the file ends the attempt (the
    /// returned action, the request machine's own), and what is the queue's is appended to `queue`, in order: the
    /// attempt's transfer notices (its head, its counts, its end, heard by the engine's one path for a transfer's
    /// notices) and the host books', the log's and the loans' entries. Once the attempt is over, the child's later
    /// actions are dropped: its transfers were stopped with it. Nothing when no split attempt runs.
    mutating func split(
        _ event: SplitEvent, of request: NetworkRequest, policy: RedirectPolicy, deadAtHead: Int,
        _ shared: inout Shared, now: Double, work: inout [ConnectionWork], queue: inout [SplitMachine.Action]
    ) -> Action {
        guard case .running(let attempt) = phase else { return .none }
        var decided: [SplitMachine.Action] = []
        swap(&decided, &attempt.splitScratch)
        switch event {
        case .begin(let sent, let options, let part, let isCapped, let collectsMetrics, let shell):
            // A retry asks every location again; a file that failed its checksum over several asks one.
            let machine = SplitMachine(
                request: sent, options: options, policy: policy, part: part, deadAtHead: attempts == 1 ? deadAtHead : 0,
                breakLimit: (request.retryPolicy ?? shared.retryPolicy).maximumAttempts, onlySource: attempt.onlySource,
                untrusted: attempt.untrusted, isCapped: isCapped,
                collectsMetrics: collectsMetrics, cell: attempt.cell, now: now, &decided)
            attempt.split = Attempt.Split(machine, shell: shell)
        case .transfer(let transferEvent, let id):
            attempt.split?.machine.handle(.transfer(transferEvent, connection: id), now: now, &decided)
        case .bytes(let count, let id, let position):
            attempt.split?.machine.handle(.bytes(count, connection: id, at: position), now: now, &decided)
        case .reached(let id, let through, let segment):
            attempt.split?.machine.handle(
                .reached(connection: id, through: through, segment: segment), now: now, &decided)
        case .writeFailed(let failure):
            attempt.split?.machine.handle(.writeFailed(failure), now: now, &decided)
        case .written(let kept, let recorded, let failure):
            attempt.split?.machine.handle(.written(kept, recorded: recorded, failure: failure), now: now, &decided)
        case .fileBegun(let begun):
            attempt.split?.machine.handle(.fileBegun(begun), now: now, &decided)
        case .lent(let loans):
            attempt.split?.machine.handle(.lent(loans), now: now, &decided)
        case .recheckDue:
            attempt.split?.machine.handle(.recheckDue, now: now, &decided)
        case .finished(let metrics):
            attempt.split?.machine.handle(.finished(metrics), now: now, &decided)
        }
        var action = Action.none
        for child in decided {
            switch child {
            case .work(let item):
                // The attempt's transfers follow the file's connections, so that a cancel, a pause or a timeout stops
                // them all with the attempt.
                if case .start(_, _, let cell, _) = item { attempt.transfers.insert(cell) }
                if case .stop(let cell) = item { attempt.transfers.remove(cell) }
                work.append(item)
            case .fail(let error):
                action = attemptEnded(.transport(Redaction.redacted(error)), of: request, &shared, now: now)
            case .fileFailed(let error):
                action = attemptEnded(error, of: request, &shared, now: now)
            case .notice, .note, .heed, .unreachable, .borrow, .giveBack, .recheck:
                queue.append(child)
            }
            if case .none = action {} else { break }
        }
        decided.removeAll(keepingCapacity: true)
        swap(&decided, &attempt.splitScratch)
        return action
    }

    /// The shell of the running split file, which does the work that follows an event other than its own.
    var splitShell: (any ConnectionShell)? { phase.attempt?.split?.shell }
}

/// What the shell of a split file does on its connections and its file, applied by the shell alone
/// (``ConnectionShell/perform(_:)``), outside the queue's lock.
enum ConnectionWork {
    /// Start connection `id` sending `request`, its server's first byte being at `at` of the file; its handle goes to
    /// `cell` (one of the attempt's transfers).
    case start(id: Int, ConnectionRequest, TransferCell, at: Int64)
    /// Connection `id` may write its bytes within `cursor` without asking (nil: none; each piece is asked about). Aims
    /// are numbered (`sequence`): one performed late, after a later one, is dropped.
    case aim(id: Int, ConnectionCursor?, sequence: Int)
    /// Save the record of the ranges on disk beside the part (the bytes written through cursors reached the machine's
    /// threshold: ``SplitRules/recordThreshold(secondsSinceRecord:)``).
    case saveRecord
    /// Stop a connection's transfer.
    case stop(TransferCell)
    /// Write `count` bytes of connection `connection`'s body piece in hand (the event being handled) from `from` on at
    /// `offset` of the part, for `segment`; the record is saved once `recordAfter` bytes were written since the last.
    /// ``RequestMachine/SplitEvent/written(_:recorded:failure:)`` follows the piece's writes.
    case write(connection: Int, from: Int, count: Int, offset: Int64, segment: Int, recordAfter: Int64)
    /// Write what `segment` gathered: it is done, or its connection stopped, or it was raced.
    case endSegment(Int)
    /// Size and record the part for `shape` (`done`: on disk already), and read `head`;
    /// ``RequestMachine/SplitEvent/fileBegun(_:)`` follows.
    case beginFile(SplitRules.Shape, done: [Range<Int64>], head: ResponseHead)
    /// The file is whole: close it, check it, and end the attempt with this head, length and metrics.
    case finish(ResponseHead, length: Int64, metrics: TransferMetrics?)
}

/// What a connection of a file sends.
enum ConnectionRequest {
    /// The attempt's own request, as the queue sends it (a text GET stays text: a file its first connection carries
    /// builds no `URLRequest`).
    case asSent
    /// This request: a range, a mirror's, a continued part's.
    case made(URLRequest)
}

/// Where a connection of a split file may write its bytes without asking: the bytes of its stream from `from` (or
/// where its stream is, if later) to `end` of the file, for `segment`. Given by ``ConnectionWork/aim(id:_:sequence:)``;
/// the record of what such writes put on disk is saved when the machine says (``ConnectionWork/saveRecord``).
struct ConnectionCursor: Equatable, Sendable {
    let segment: Int
    let from: Int64
    let end: Int64
}

/// The shell of a split file: does its ``ConnectionWork``, which comes as an event's
/// ``QueueAction/connections(_:)`` whatever the event (a connection's own is performed on its thread before the event
/// returns, so that its piece in hand can be written).
protocol ConnectionShell: AnyObject, Sendable {
    /// Does `work`, in order.
    func perform(_ work: [ConnectionWork])
}

extension Attempt {
    /// Ends the attempt's split file, if it is one, however the attempt ended: every connection is forgotten and the
    /// loans it still held are returned.
    func endSplit() -> [QueueStateMachine.ConnectionLoan] {
        split?.machine.release() ?? []
    }
}
