import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a ``SplitMachine`` hears and says: the events the coordinator hands it (from the shell, the attempt's
/// `TransferPipeline`, and the queue), and the actions it returns for the two to do, in order.
extension SplitMachine {
    /// What the coordinator and the shell must do, in order.
    enum Action {
        /// Work for the shell: start or stop a connection, aim it, write a piece, end a segment, begin or finish the
        /// file. ``Event/written(_:recorded:failure:)`` follows a piece's writes, and
        /// ``Event/fileBegun(_:)`` a file begun.
        case work(ConnectionWork)
        /// What the attempt's transfer tells the engine, as a transfer of one connection's pipeline would, applied by the
        /// engine's one path for transfer notices: the head the file began with (with its reading), an event of the
        /// first connection before its head, bytes kept and written (counted once, as progress), and the file's end
        /// (its metrics, then its transfer's completion).
        case notice(TransferNotice.Kind)
        /// Log this.
        case note(NetworkQueueLogRecord.Event, NetworkQueueLogRecord.Level, String)
        /// Ask the queue for a connection to the server of each of these locations, in order (a per-host limit counts
        /// each toward its server): answered by one ``Event/lent(_:)`` with the loans made, the first ones asked for.
        case borrow([URL?])
        /// A lent connection is not needed any more.
        case giveBack(QueueStateMachine.ConnectionLoan)
        /// Look at the end game again at this time (``Event/recheckDue``): a ``QueueTimer`` entry of the request.
        case recheck(at: Double)
        /// A connection's final head, for the queue's host books (a `Retry-After` or a spent `RateLimit` holds its
        /// server). Heads the engine hears as the request's (a ``notice(_:)``) are heard there.
        case heed(ResponseHead)
        /// A connection to the server of this URL, started at `startedAt` (queue clock), failed to connect: counted by
        /// the queue's dead-server book (``DeadHosts``), never ending this request, which has other locations.
        case unreachable(URL, startedAt: Double)
        /// The attempt fails with this error.
        case fail(URLError)
        /// The part could not be written: the attempt fails with this error.
        case fileFailed(NetworkQueueError)
    }

    /// What happens to the download.
    enum Event {
        /// An event of connection `id` other than its body.
        case transfer(TransferEvent, connection: Int)
        /// `count` body bytes of connection `id` came, the first at `at` of the file (nil: where the machine last knew
        /// its stream): where the plan keeps them, each a ``ConnectionWork/write(connection:from:count:offset:segment:recordAfter:)``.
        case bytes(Int, connection: Int, at: Int64?)
        /// Connection `connection` wrote its bytes through its cursor for `segment` up to `through` of the file: a
        /// batched notice, applied at the end of an engine pass.
        case reached(connection: Int, through: Int64, segment: Int)
        /// A write through a cursor failed: the attempt fails with this error.
        case writeFailed(NetworkQueueError)
        /// The writes of the last ``bytes(_:connection:)`` event are done: `kept` bytes in all (the record saved when
        /// `recorded`), or the part could not be written (`failure`).
        case written(Int, recorded: Bool, failure: NetworkQueueError?)
        /// The shell began the file (``ConnectionWork/beginFile(_:done:head:)``) and read its head, or could not (the
        /// failure).
        case fileBegun(Result<HeadReading, NetworkQueueError>)
        /// The queue answered a ``Action/borrow(_:)``: the connections it lent (none: it had none to lend).
        case lent([QueueStateMachine.ConnectionLoan])
        /// The look at the end game came (``Action/recheck(at:)``).
        case recheckDue
        /// The shell closed and checked the whole file (``ConnectionWork/finish(_:length:metrics:)``; its checksum, when
        /// one is given, matched): the attempt's transfer completes, with the file's metrics when collected.
        case finished(TransferMetrics?)
    }
}
