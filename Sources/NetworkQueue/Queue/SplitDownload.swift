import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The shell of a split download (issues 36, 62): it hands every event of the file's connections to the request's
/// machine (``QueueStateMachine/splitEvent(_:slot:token:now:)``, or a batched notice for bytes written through a
/// connection's cursor) and does the ``ConnectionWork`` that follows, which reaches it as the event's
/// ``QueueAction/connections(_:)`` like any work: starts and stops connections, gives them their cursors, writes their
/// bytes at the offsets given, begins and finishes the file. It decides nothing and keeps no state of the download but
/// what a connection's bytes need (its position, its cursor, the event in hand): the rest is the request's machine's,
/// under the queue's one lock. The file's writes happen here, outside that lock.
///
/// Each connection's events are serial. Once the first head says the file is not one to split on, the first
/// connection's events go on as a transfer of one connection (``Route``).
final class SplitDownload: ConnectionShell {
    /// Where one connection's events go: to the machine, or (once it passes on) as a transfer of one connection; and
    /// where its bytes go without asking (its cursor).
    final class Route: @unchecked Sendable {
        // Unchecked: touched only by the connection's events, which are serial, and by the work its event leads to,
        // which is done on the same thread before the event returns.
        var passes = false
        /// The offset in the file of the next byte its server sends.
        var position: Int64
        /// True when bytes were written through its cursor since the machine last heard its position.
        var unheard = false
        /// The event being handled and its body piece (valid only while it is handled): what a `passOn` passes on and
        /// a `write` writes from.
        var current: TransferEvent?
        var bytes: UnsafeRawBufferPointer?
        /// Its cursor, and the number of the aim that gave it: set by whichever thread does the machine's work.
        let cursor = Locked<(cursor: ConnectionCursor?, sequence: Int)>((nil, 0))

        init(position: Int64) { self.position = position }
    }

    /// Each connection's route, by connection: an aim, a write or a pass finds its connection here.
    private let routes = Locked<[Int: Route]>([:])

    let transport: any Transport
    /// The transport, when it lends bodies (the file's bytes then skip a copy).
    let lender: (any LendingTransport)?
    let options: TransferOptions
    /// The attempt's first transfer's pipeline: the queue, slot and token the download's events go to, and its file.
    /// The events of a transfer of one connection (the first connection's, when the file is not split) go through it
    /// as they are.
    let pipeline: TransferPipeline
    /// The pipeline's file.
    let sink: FileSink
    var owner: NetworkQueue { pipeline.owner }
    var slot: Int { pipeline.slot }
    var token: UInt64 { pipeline.token }

    /// The split download of the transfer that `pipeline` writes to `sink` (its file).
    init(transport: any Transport, options: TransferOptions, pipeline: TransferPipeline, sink: FileSink) {
        self.transport = transport
        lender = transport as? any LendingTransport
        self.options = options
        self.pipeline = pipeline
        self.sink = sink
    }

    /// Begins the download of `request` over the attempt's first transfer.
    func start(_ request: URLRequest, fileOptions: NetworkRequest.FileOptions) {
        let isCapped = options.rateCap?.maximumBytesPerSecond != nil
        handIn(
            .begin(
                request, fileOptions, part: sink.resumed, isCapped: isCapped,
                collectsMetrics: options.collectsMetrics, shell: self), route: nil)
    }

    // MARK: A connection's events

    private func event(_ event: TransferEvent, connection id: Int, route: Route) {
        if route.passes { return pipeline.receive(event) }
        if case .data(let data) = event {
            return data.withUnsafeBytes { body($0, connection: id, route: route) }
        }
        if case .head(let head) = event, !ResponseRules.isInterim(head) {
            // Where its server's bytes begin: a 206 at its first byte, any other answer at the file's start (a 200 to a
            // range is the whole file).
            let range = RangeRules.contentRange(head.value(forHTTPHeaderField: "Content-Range"))
            route.position = head.statusCode == 206 ? range?.first ?? route.position : 0
        }
        if case .completed = event, route.unheard {
            // What it wrote through its cursor is heard before its end (its notice may be waiting for the pass's end).
            handIn(.bytes(0, connection: id, at: route.position), route: route)
            route.unheard = false
        }
        handIn(.transfer(event, connection: id), route: route, current: event)
    }

    /// A body piece lent by the transport (see ``LendingTransport``).
    private func lent(_ piece: borrowing LentBytes, connection id: Int, route: Route) -> Bool {
        guard route.passes else {
            piece.withUnsafeBytes { body($0, connection: id, route: route) }
            return true
        }
        return pipeline.lend(piece)
    }

    /// A body piece of connection `id`: written at once when its cursor has room for all of it, and counted by a notice
    /// batched with the engine pass's others (``TransferNotice/Kind/reached(connection:through:segment:)``);
    /// otherwise the machine is asked where its bytes go.
    private func body(_ bytes: UnsafeRawBufferPointer, connection id: Int, route: Route) {
        if LockCounter.isCounting.load(ordering: .relaxed) { LockCounter.pieces.add(1, ordering: .relaxed) }
        let position = route.position
        let count = Int64(bytes.count)
        route.position += count
        if let cursor = route.cursor.withLock({ $0.cursor }), position >= cursor.from, position + count <= cursor.end {
            // The record is saved when the machine says (ConnectionWork.saveRecord), never by a piece.
            let result = sink.writeSegment(bytes, at: position, segment: cursor.segment, recordingAfter: .max)
            if let failure = result.failure { return handIn(.writeFailed(failure), route: route) }
            route.unheard = true
            let kind = TransferNotice.Kind.reached(connection: id, through: position + count, segment: cursor.segment)
            return owner.tell(TransferNotice(slot: slot, token: token, kind: kind), batching: true)
        }
        route.unheard = false
        handIn(.bytes(bytes.count, connection: id, at: position), route: route, bytes: bytes)
    }

    // MARK: What the request's machine decided

    /// Hands `event` in, the event being handled being `current` and its body piece `bytes` (kept in the connection's
    /// route while the work it leads to is done: on this thread, before this returns).
    private func handIn(
        _ event: RequestMachine.SplitEvent, route: Route?, current: TransferEvent? = nil,
        bytes: UnsafeRawBufferPointer? = nil
    ) {
        if case .bytes = event, LockCounter.isCounting.load(ordering: .relaxed) {
            LockCounter.pieceAsks.add(1, ordering: .relaxed)
        }
        route?.current = current
        route?.bytes = bytes
        let (slot, token) = (slot, token)
        owner.send(inline: true) { machine, now in machine.splitEvent(event, slot: slot, token: token, now: now) }
        route?.current = nil
        route?.bytes = nil
    }

    /// Does `work`, in order; the writes of a connection's piece are answered once, after them.
    func perform(_ work: [ConnectionWork]) {
        var written: (connection: Int, kept: Int, recorded: Bool, failure: NetworkQueueError?)?
        for item in work {
            switch item {
            case .write(let id, let from, let count, let offset, let segment, let threshold):
                var answer = written ?? (id, 0, false, nil)
                defer { written = answer }
                guard answer.failure == nil, let bytes = route(id)?.bytes else { continue }
                let piece = UnsafeRawBufferPointer(rebasing: bytes[from..<(from + count)])
                let result = sink.writeSegment(piece, at: offset, segment: segment, recordingAfter: threshold)
                answer.failure = result.failure
                answer.recorded = answer.recorded || result.recorded
                answer.kept += count
            case .endSegment(let segment):
                _ = sink.endSegment(segment: segment)
            case .saveRecord:
                if let failure = sink.saveRecordNow() { handIn(.writeFailed(failure), route: nil) }
            case .stop(let cell):
                cell.cancel()?.cancel()
            case .start(let id, let request, let cell, let position):
                start(id, request, cell, at: position)
            case .aim(let id, let cursor, let sequence):
                route(id)?.cursor.withLock { aimed in
                    if sequence > aimed.sequence { aimed = (cursor, sequence) }
                }
            case .beginFile(let shape, let done, let head):
                handIn(.fileBegun(begin(shape, done: done, head: head)), route: nil)
            case .passOn(let id):
                guard let route = route(id) else { continue }
                route.passes = true
                if let current = route.current { pipeline.receive(current) }
            case .finish(let head, let length, let metrics):
                finish(head: head, length: length, metrics: metrics)
            }
        }
        if let written {
            handIn(
                .written(written.kept, recorded: written.recorded, failure: written.failure),
                route: route(written.connection))
        }
    }

    /// Connection `id`'s route.
    private func route(_ id: Int) -> Route? { routes.withLock { $0[id] } }

    /// Starts connection `id`, whose server's first byte is at `position` of the file, its handle going to `cell`.
    private func start(_ id: Int, _ request: URLRequest, _ cell: TransferCell, at position: Int64) {
        let route = Route(position: position)
        routes.withLock { $0[id] = route }
        let started =
            if let lender {
                lender.startTransfer(
                    .request(request), options: options,
                    lendingBodyTo: { [self] piece in lent(piece, connection: id, route: route) },
                    events: { [self] event in self.event(event, connection: id, route: route) })
            } else {
                transport.startTransfer(request, options: options) { [self] event in
                    self.event(event, connection: id, route: route)
                }
            }
        if !cell.attach(started) { started.cancel() }
    }

    /// Reads the file's first head and sizes and records its part; the failure, if either failed.
    private func begin(_ shape: SplitRules.Shape, done: [Range<Int64>], head: ResponseHead)
        -> Result<HeadReading, NetworkQueueError>
    {
        let reading: HeadReading
        switch pipeline.splitHead(head) {
        case .head(let read): reading = read
        case .fileFailed(let failure): return .failure(failure)
        case .forward, .integrityFailed: return .failure(.fileError(path: sink.partial.path, reason: "no head"))
        }
        if let failure = sink.beginSegments(shape, done: done) { return .failure(failure) }
        return .success(reading)
    }

    /// The file is whole: closed, hashed when checks apply, and the engine hears the ending.
    private func finish(head: ResponseHead, length: Int64, metrics: TransferMetrics?) {
        switch pipeline.finishSplit(head: head, length: length) {
        case .forward: handIn(.finished(metrics), route: nil)
        case let failed: pipeline.pass(failed)
        }
    }
}
