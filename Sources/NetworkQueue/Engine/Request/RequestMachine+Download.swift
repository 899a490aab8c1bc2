import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request's split file: the ``SplitMachine`` is a child of the request's machine, held in its running phase's
/// payload (the ``Attempt``), as async-http-client's connection state machine holds its request's. Each event of the
/// file returns one ``DownloadOutput``, with a field per applier: what the request does (its own ``Action``, which the
/// coordinator settles as any event's), what the file's connections do (``ConnectionWork``, the shell's), and what the
/// queue's books record (``DownloadBook``). The child's actions are translated here and only here, in the call that
/// produced them: its head, its counted bytes and its end are this machine's own head, body and transfer end (decided
/// here, with the books' values the event needs in ``DownloadContext``), and what the child asks of the shared books (a
/// loan, a failed connect's verdict) is answered in the call (``DownloadBooks``). Nothing of it comes back into this
/// machine as a later event; nothing outside this file and Engine/Download reaches into the child.
extension RequestMachine {
    /// An event of the running attempt's split file.
    enum SplitEvent {
        /// The download begins, sending `request` (as the queue sends it) over the attempt's first transfer
        /// (`options`: its file's; `part`: what its file holds already; `isCapped`: the queue caps its rate). `shell`
        /// does its work. `running`: the first transfer runs already, started by the shell with the start's carry rule
        /// (``QueueAction/BodyPolicy/checked(_:file:continuesPart:revalidation:shares:carrying:)``), and its head, one
        /// that may share the file, comes next (``firstHead(_:connection:)``, in the same entry).
        case begin(
            OutgoingRequest, NetworkRequest.FileOptions, part: PartSegments?, isCapped: Bool, collectsMetrics: Bool,
            shell: any ConnectionShell, running: Bool = false)
        /// An event of connection `id` (its body comes as ``bytes(_:connection:at:)``; the first connection's final
        /// head as ``firstHead(_:connection:)``).
        case transfer(TransferEvent, connection: Int)
        /// The first connection's final head, read by the shell as a transfer's head is (its file not begun on it yet).
        case firstHead(HeadReading, connection: Int)
        /// `count` body bytes of connection `id` came, the first at `at` of the file (its cursor had no room for them).
        case bytes(Int, connection: Int, at: Int64?)
        /// Connection `connection` wrote its bytes through its cursor for `segment` up to `through` (a batched notice).
        case reached(connection: Int, through: Int64, segment: Int)
        /// The file could not be begun or written.
        case writeFailed(NetworkQueueError)
        /// The writes of the last ``bytes(_:connection:at:)`` are done: `kept` bytes in all (the record saved when
        /// `recorded`), or the part could not be written (`failure`).
        case written(Int, recorded: Bool, failure: NetworkQueueError?)
        /// The look at the end game came (``DownloadBook/recheck(at:)``, a ``QueueTimer`` entry).
        case recheckDue
        /// The shell closed and checked the whole file (its checksum, when one is given, matched): the attempt's
        /// transfers are over and it succeeds, with the file's metrics when collected.
        case finished(TransferMetrics?)
    }

    /// What the queue's books hold that a download's event needs, read once before it: the request's bytes counted,
    /// its existing file and claimed destination, its expected size before this attempt, its metrics, the wall clock.
    struct DownloadContext {
        var received: Int64
        let existingFile: ExistingFileRules.FileState?
        let file: URL?
        let expectedBefore: Int64?
        let metrics: RequestMetrics?
        let wallClock: Date
        /// How a mirror's request is made.
        let policy: RedirectPolicy
        /// The locations the HEAD found dead, left by the first attempt.
        let deadAtHead: Int
        /// True when the queue logs (the file's notes are made only then).
        let logs: Bool
    }

    /// One event of a download, with a field per applier.
    struct DownloadOutput {
        /// The request's own: settled by the coordinator as any event's action (``Action/none`` when nothing moved).
        var request = Action.none
        /// True when the attempt's transfers are over by the file's own doing (its connections stopped by its work, or
        /// the file finished): the coordinator does not stop them again.
        var transferEnded = false
        /// The shell's: work on the file's connections, in order.
        var connections: [ConnectionWork] = []
        /// The queue's books, in order (recorded before the request's action is settled).
        var books: [DownloadBook] = []

        /// The request's action is `action` unless an earlier one of the event moved it already.
        mutating func decided(_ action: Action) {
            if case .none = request { request = action }
        }
    }

    /// What the queue's books record of a download event, applied by the coordinator alone.
    enum DownloadBook {
        /// The request's log.
        case log(NetworkQueueLogRecord.Event, NetworkQueueLogRecord.Level, String)
        /// A connection's head (a location's answer, interim or final): the host books hear its server answer, and a
        /// final head's `Retry-After` or spent `RateLimit` holds it.
        case answered(ResponseHead)
        /// A connection to the server of this URL, started at `startedAt`, failed to connect: the dead-server book counts
        /// it (never ending this request).
        case unreachable(URL, startedAt: Double)
        /// A lent connection is given back.
        case returned(QueueStateMachine.ConnectionLoan)
        /// The end game's next look, a ``QueueTimer`` entry of the request.
        case recheck(at: Double)
        /// The attempt's head was read (``HeadAction``): the ledger and the delegate hear it. A problem it names fails
        /// the attempt once the delegate heard the head (the coordinator applies ``RequestMachine/Event/attemptEnded(_:)``).
        case head(HeadAction, ResponseHead)
        /// Bytes of the file counted: the ledger's.
        case counted(Int)
        /// The attempt's request body went out (the first connection's upload): the ledger's.
        case sent(Int64, expected: Int64?)
        /// The first connection followed a redirect: the log's.
        case redirected(TransferRedirect)
        /// The file's figures, for the metrics' listeners.
        case metrics(TransferMetrics)
        /// The attempt's transfer ended as `outcome` (the adaptive concurrency's sample).
        case ended(TransferOutcome)
    }

    /// Applies `event` of the running attempt's split file of `request` at `now`, reading the books' values in `context`
    /// and asking `books` what only they can answer. The file's child machine decides; each of its actions is turned
    /// here into this machine's own or into the output's other fields: its head is this request's head, its counted
    /// bytes its body, its end its transfer's end; a loan it asks for is asked of the books and answered to it at once.
    /// Once the attempt is over, the child's later actions are dropped: its transfers were stopped with it. Only a
    /// running attempt's events come in (the coordinator drops a stale one by its token): any other phase stops the
    /// process, naming it.
    mutating func split<Books: DownloadBooks>(
        _ event: SplitEvent, of request: NetworkRequest, context: DownloadContext, books: inout Books,
        _ shared: inout Shared, now: Double
    ) -> DownloadOutput {
        var output = DownloadOutput()
        // The coordinator hands in only a current attempt's events (a stale one is dropped by its token).
        guard case .running(let attempt) = phase else {
            preconditionFailure("an event of a split file in phase \(phase.name)")
        }
        var decided: [SplitMachine.Action] = []
        swap(&decided, &attempt.splitScratch)
        defer {
            decided.removeAll(keepingCapacity: true)
            swap(&decided, &attempt.splitScratch)
        }
        switch event {
        case .begin(let sent, let options, let part, let isCapped, let collectsMetrics, let shell, let running):
            // A retry asks every location again; a file that failed its checksum over several asks one.
            let start = SplitMachine.Start(
                request: sent, options: options, policy: context.policy, part: part,
                deadAtHead: attempts == 1 ? context.deadAtHead : 0,
                breakLimit: (request.retryPolicy ?? shared.retryPolicy).maximumAttempts, onlySource: attempt.onlySource,
                untrusted: attempt.untrusted, isCapped: isCapped, collectsMetrics: collectsMetrics, logs: context.logs,
                cell: attempt.cell, now: now)
            if running {
                // Its first connection is the attempt's first transfer (already among its transfers), started by the
                // shell: its machine is made at the head that follows, its own start of it dropped.
                attempt.split = Attempt.Split(deferred: start, shell: shell)
            } else {
                attempt.split = Attempt.Split(SplitMachine(start, &decided), shell: shell)
            }
        case .transfer(let transferEvent, let id):
            attempt.split?.handle(.transfer(transferEvent, connection: id), now: now, &decided)
        case .firstHead(let reading, let id):
            attempt.split?.handle(.firstHead(reading, connection: id), now: now, &decided)
        case .bytes(let count, let id, let position):
            attempt.split?.handle(.bytes(count, connection: id, at: position), now: now, &decided)
        case .reached(let id, let through, let segment):
            attempt.split?.handle(.reached(connection: id, through: through, segment: segment), now: now, &decided)
        case .writeFailed(let failure):
            attempt.split?.handle(.writeFailed(failure), now: now, &decided)
        case .written(let kept, let recorded, let failure):
            attempt.split?.handle(.written(kept, recorded: recorded, failure: failure), now: now, &decided)
        case .recheckDue:
            attempt.split?.handle(.recheckDue, now: now, &decided)
        case .finished(let metrics):
            attempt.split?.handle(.finished(metrics), now: now, &decided)
        }
        var context = context
        var index = 0
        // The child's actions in order; a loan's answer appends the child's next ones to the same list.
        while index < decided.count, phase.attempt === attempt {
            let child = decided[index]
            index += 1
            switch child {
            case .work(let item):
                // The attempt's transfers follow the file's connections, so that a cancel, a pause or a timeout stops
                // them all with the attempt.
                if case .start(_, _, let cell, _, _) = item { attempt.transfers.insert(cell) }
                if case .stop(let cell) = item { attempt.transfers.remove(cell) }
                output.connections.append(item)
            case .head(let reading):
                touched(at: now)
                let read = headRead(
                    reading, of: request, received: context.received, existingFile: context.existingFile,
                    file: context.file, expectedBefore: context.expectedBefore, wallClock: context.wallClock, &shared,
                    now: now)
                if case .refusedRange(_, let restart) = read { output.decided(restart) }
                output.books.append(.head(read, reading.head))
                // A problem fails the attempt once the delegate heard the head (the coordinator's, by design): what the
                // file would do next is not done.
                if case .read(_, _, _, .some) = read { return output }
            case .counted(let count):
                context.received += Int64(count)
                output.books.append(.counted(count))
                output.decided(
                    handle(.bodyPiece(keeping: nil, received: context.received), of: request, &shared, now: now))
            case .finished(let metrics):
                if let metrics { output.books.append(.metrics(metrics)) }
                output.books.append(.ended(.succeeded))
                output.decided(transferEnded(.succeeded, of: request, context: context, &shared, now: now))
                output.transferEnded = true
            case .passOn(let event):
                passOn(event, of: request, context: context, books: &books, &shared, now: now, &output)
            case .answered(let head):
                output.books.append(.answered(head))
            case .note(let event, let level, let message):
                output.books.append(.log(event, level, message))
            case .borrow(let locations):
                // Asked of the books at once: a connection to each location's server in order, while a slot would
                // idle (the loans made, the first ones asked for); the child hears them in the same call.
                var loans: [QueueStateMachine.ConnectionLoan] = []
                for location in locations {
                    guard let loan = books.lend(toServerOf: location, now: now) else { break }
                    loans.append(loan)
                }
                attempt.split?.handle(.lent(loans), now: now, &decided)
            case .giveBack(let loan):
                output.books.append(.returned(loan))
            case .recheck(let at):
                output.books.append(.recheck(at: at))
            case .unreachable(let url, let startedAt):
                output.books.append(.unreachable(url, startedAt: startedAt))
            case .fail(let error):
                if let next = attempt.nextAloneAfterSilence {
                    output.decided(
                        sendAgain(
                            attempt, from: next.source, untrusted: attempt.untrusted, then: next.then,
                            expectedBefore: attempt.expectedBefore, &shared, now: now))
                } else {
                    output.decided(
                        handle(.attemptEnded(.transport(Redaction.redacted(error))), of: request, &shared, now: now))
                }
                output.transferEnded = true
            case .fileFailed(let error):
                output.decided(handle(.attemptEnded(error), of: request, &shared, now: now))
                output.transferEnded = true
            }
        }
        return output
    }

    /// An event of the first connection before its head, the attempt's own: its upload and redirects are the books',
    /// its end this machine's transfer end (a failed connect of the request's own server first asks the books whether
    /// the server is held or down, as a plain transfer's does).
    private mutating func passOn<Books: DownloadBooks>(
        _ event: TransferEvent, of request: NetworkRequest, context: DownloadContext, books: inout Books,
        _ shared: inout Shared, now: Double, _ output: inout DownloadOutput
    ) {
        touched(at: now)
        switch event {
        case .head(let head): output.books.append(.answered(head))
        case .sent(let sent, let expected):
            touched(at: now, sent: sent)
            output.books.append(.sent(sent, expected: expected))
        case .redirect(let redirect): output.books.append(.redirected(redirect))
        case .metrics(let metrics): output.books.append(.metrics(metrics))
        case .data: break
        case .completed(let error):
            let outcome = error.map { TransferOutcome.failed($0) } ?? .succeeded
            output.transferEnded = true
            if let error, DeadHostRules.isConnectFailure(error), let started = phase.attempt?.startedAt {
                switch books.connectFailed(startedAt: started, now: now) {
                case .counted: break
                case .held:
                    output.decided(handle(.heldByServer, of: request, &shared, now: now))
                    return
                case .down(let failure):
                    output.decided(.end(.failure(failure)))
                    return
                }
            }
            output.books.append(.ended(outcome))
            output.decided(transferEnded(outcome, of: request, context: context, &shared, now: now))
        }
    }

    /// ``Event/transferEnded(_:received:file:checksExistingFile:metrics:expectedBefore:)`` with a download's context.
    private mutating func transferEnded(
        _ outcome: TransferOutcome, of request: NetworkRequest, context: DownloadContext, _ shared: inout Shared,
        now: Double
    ) -> Action {
        let ended = Event.transferEnded(
            outcome, received: context.received, file: context.file, checksExistingFile: context.existingFile != nil,
            metrics: context.metrics, expectedBefore: context.expectedBefore)
        return handle(ended, of: request, &shared, now: now)
    }

    /// The shell of the running split file, which does the work that follows an event other than its own.
    var splitShell: (any ConnectionShell)? { phase.attempt?.split?.shell }
}

/// What a request's machine asks of the queue's shared books while it decides an event of its download, answered in
/// the call (the coordinator is the one conformer): so that nothing the machine decides comes back into it later.
protocol DownloadBooks {
    /// Lends the running download one more connection to the server of `location` (a per-host limit counts it there),
    /// from a slot no waiting request could start in; nil when none would idle, or that server is paced or held.
    mutating func lend(toServerOf location: URL?, now: Double) -> QueueStateMachine.ConnectionLoan?
    /// The attempt (begun at `startedAt`) failed to connect to the request's own server: counted by its server's
    /// book, whose verdict for the request is returned.
    mutating func connectFailed(startedAt: Double, now: Double) -> ConnectVerdict
}

/// The dead-server book's verdict on a request whose attempt failed to connect.
enum ConnectVerdict {
    /// Counted; the request's retry policy decides.
    case counted
    /// The server is held: the request waits with its others, its try not counted.
    case held
    /// The server is down: the request ends with this error.
    case down(NetworkQueueError)
}

/// What the shell of a split file does on its connections and its file, applied by the shell alone
/// (``ConnectionShell/perform(_:)``), outside the queue's lock.
enum ConnectionWork {
    /// Start connection `id` sending `request`, its server's first byte being at `at` of the file; its handle goes to
    /// `cell` (one of the attempt's transfers). With a rule (`carrying`), a final head the rule does not share is
    /// carried by the connection at once, as a plain transfer's head, and the machine hears no more of the connection
    /// (``SplitRules/CarryRule``); nil: its final head is the machine's.
    case start(id: Int, ConnectionRequest, TransferCell, at: Int64, carrying: SplitRules.CarryRule?)
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
    /// Begin the part on `head` (the first head, in the form the request heard it: a continued part's continuing form),
    /// and size and record it for `shape` (`done`: on disk already). A failure comes back as
    /// ``RequestMachine/SplitEvent/writeFailed(_:)``.
    case beginFile(SplitRules.Shape, done: [Range<Int64>], head: ResponseHead)
    /// Connection `id` carries the file as it comes, through the shell's own steps from its final head `head` on (begun
    /// on the file now; the request heard it already): the file is one connection's, and the request hears its events
    /// as a plain transfer's.
    case carry(id: Int, head: ResponseHead)
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
        split?.release() ?? []
    }
}
