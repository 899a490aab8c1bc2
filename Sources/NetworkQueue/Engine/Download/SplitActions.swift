import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a ``SplitMachine`` hears and says: the events its parent, the request's machine, hands it (from the shell, the
/// attempt's `TransferPipeline`, and the queue), and the actions it returns, which the parent turns into its own in the
/// call that produced them (``RequestMachine/split(_:of:context:books:_:now:)``).
extension SplitMachine {
    /// What follows from an event, in order.
    enum Action {
        /// Work for the shell: start or stop a connection, aim it, write a piece, end a segment, begin, carry or finish
        /// the file. ``Event/written(_:recorded:failure:)`` follows a piece's writes.
        case work(ConnectionWork)
        /// The attempt's head, read by the shell (in the form the request hears: a continued part's continuing form):
        /// the file was begun on it, or its connection carries the file as it comes.
        case head(HeadReading)
        /// This many bytes of the file were kept and written: counted once, as the attempt's body.
        case counted(Int)
        /// The file is whole and checked: the attempt's transfer succeeded, with the file's metrics when collected.
        case finished(TransferMetrics?)
        /// An event of the first connection before its head, which is the attempt's own (its upload, a redirect, its
        /// figures, an interim head, its failure when the file has no other location).
        case passOn(TransferEvent)
        /// A connection's final head (a location's answer), for the queue's host books: its server answers, and a
        /// `Retry-After` or a spent `RateLimit` holds it.
        case answered(ResponseHead)
        /// Log this.
        case note(NetworkQueueLogRecord.Event, NetworkQueueLogRecord.Level, String)
        /// Ask the queue for a connection to the server of each of these locations, in order (a per-host limit counts
        /// each toward its server): answered in the same call by one ``Event/lent(_:)`` with the loans made, the first
        /// ones asked for.
        case borrow([URL?])
        /// A lent connection is not needed any more.
        case giveBack(QueueStateMachine.ConnectionLoan)
        /// Look at the end game again at this time (``Event/recheckDue``): a ``QueueTimer`` entry of the request.
        case recheck(at: Double)
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
        /// An event of connection `id` other than its body, and other than the first connection's final head.
        case transfer(TransferEvent, connection: Int)
        /// The final head of the first connection (before the file was begun), read by the shell as a transfer's head is
        /// (``HeadReading``): the file is begun as shared on it, or carried by its connection as it comes.
        case firstHead(HeadReading, connection: Int)
        /// `count` body bytes of connection `id` came, the first at `at` of the file (nil: where the machine last knew
        /// its stream): where the plan keeps them, each a ``ConnectionWork/write(connection:from:count:offset:segment:recordAfter:)``.
        case bytes(Int, connection: Int, at: Int64?)
        /// Connection `connection` wrote its bytes through its cursor for `segment` up to `through` of the file: a
        /// batched notice, applied at the end of an engine pass.
        case reached(connection: Int, through: Int64, segment: Int)
        /// The file could not be begun or written (its part begun, a write through a cursor, the record): the attempt
        /// fails with this error.
        case writeFailed(NetworkQueueError)
        /// The writes of the last ``bytes(_:connection:at:)`` event are done: `kept` bytes in all (the record saved when
        /// `recorded`), or the part could not be written (`failure`).
        case written(Int, recorded: Bool, failure: NetworkQueueError?)
        /// The queue answered a ``Action/borrow(_:)``: the connections it lent (none: it had none to lend).
        case lent([QueueStateMachine.ConnectionLoan])
        /// The look at the end game came (``Action/recheck(at:)``).
        case recheckDue
        /// The shell closed and checked the whole file (``ConnectionWork/finish(_:length:metrics:)``; its checksum, when
        /// one is given, matched): the attempt's transfer completes, with the file's metrics when collected.
        case finished(TransferMetrics?)
    }
}
