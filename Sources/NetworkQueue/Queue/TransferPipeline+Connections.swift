import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A file attempt that may use several connections (73) runs through its one pipeline too: the pipeline
/// is the shell of all its connections. It hands every event of a connection to the request's machine
/// (a ``TransferNotice/Kind/split(_:)`` notice, or a batched notice for bytes written through a connection's
/// cursor) and does the ``ConnectionWork`` that follows, which reaches it as the event's ``QueueAction/connections(_:)``
/// like any work: starts and stops connections, gives them their cursors, writes their bytes at the offsets given,
/// begins and finishes the file. It decides nothing and keeps no state of the download but what a connection's bytes
/// need (its position, its cursor, the event in hand): the rest is the request's machine's, under the queue's one
/// lock. The file's writes happen here, outside that lock.
///
/// Each connection's events are serial. The first connection's final head is read once, as any transfer's (the
/// pipeline's own step), and the machine decides on it in the same call: it begins the file as shared
/// (``ConnectionWork/beginFile(_:done:)``), or the connection carries the file as it comes (``ConnectionWork/carry(id:)``):
/// a file of one connection is the pipeline's own transfer from its head on, with nothing to pass or read again.
extension TransferPipeline {
    /// What the pipeline of a file that may be shared holds for its connections.
    final class Connections: Sendable {
        let transport: any Transport
        /// The transport, when it lends bodies (the file's bytes then skip a copy).
        let lender: (any LendingTransport)?
        let options: TransferOptions
        /// The file's options (its connections, its mirrors).
        let fileOptions: NetworkRequest.FileOptions
        /// The attempt's request, as the queue sends it: what a connection asked to send it as it is sends.
        let outgoing: OutgoingRequest
        /// Each connection's route, by connection, and whether the file was begun as shared: an aim, a write or a stop
        /// finds its connection here.
        let state = Locked((routes: [Int: Route](), isShared: false))

        /// `lender`: `transport` as a ``LendingTransport`` when it is one (the queue's, cast once: not per file).
        init(
            transport: any Transport, lender: (any LendingTransport)?, options: TransferOptions,
            fileOptions: NetworkRequest.FileOptions, outgoing: OutgoingRequest
        ) {
            self.transport = transport
            self.lender = lender
            self.options = options
            self.fileOptions = fileOptions
            self.outgoing = outgoing
        }

        /// Connection `id`'s route.
        func route(_ id: Int) -> Route? { state.withLock { $0.routes[id] } }
    }

    /// Where one connection's events go: to the machine, or (once its head found the file not shared) through the
    /// pipeline's own steps; and where its bytes go without asking (its cursor).
    final class Route: @unchecked Sendable {
        // Unchecked: touched only by the connection's events, which are serial, and by the work its event leads to,
        // which is done on the same thread before the event returns.
        /// True once its head found the file not shared (and the connection not stopped): it carries the file as it
        /// comes, through the pipeline's own steps.
        var carriesFile = false
        /// The offset in the file of the next byte its server sends.
        var position: Int64
        /// True when bytes were written through its cursor since the machine last heard its position.
        var unheard = false
        /// The body piece of the event being handled (valid only while it is handled): what a `write` writes from.
        var bytes: UnsafeRawBufferPointer?
        /// Its handle, held by its attempt: cancelled once the machine stopped it, gone once the attempt let it go. Weak:
        /// the handle holds the transport's callbacks, which hold this pipeline, which holds its routes.
        weak var cell: TransferCell?
        /// Its cursor, and the number of the aim that gave it: set by whichever thread does the machine's work.
        let cursor = Locked<(cursor: ConnectionCursor?, sequence: Int)>((nil, 0))
        /// The machine's rule for its final head (``SplitRules/CarryRule``): a head it does not share is carried here.
        let carrying: SplitRules.CarryRule?

        init(position: Int64, cell: TransferCell, carrying: SplitRules.CarryRule?) {
            self.position = position
            self.cell = cell
            self.carrying = carrying
        }
    }

    /// The event that begins the download of the attempt's request over its first transfer (nil: the file may not be
    /// shared), handed in with its file's opening, or (`running`) with the first head of a connection the pipeline
    /// started itself.
    func beginning(running: Bool = false) -> RequestMachine.SplitEvent? {
        guard let connections else { return nil }
        let isCapped = connections.options.rateCap?.maximumBytesPerSecond != nil
        return .begin(
            connections.outgoing, connections.fileOptions, part: sink?.resumed, isCapped: isCapped,
            collectsMetrics: connections.options.collectsMetrics, shell: self, running: running)
    }

    // MARK: A first connection the pipeline started itself

    /// An event of the first connection, when the pipeline started it itself as its own transfer (``firstRule``): a
    /// plain transfer's event until its final head. A head the rule does not share is carried as any transfer's head
    /// (the engine never hears of a download: a small file over several connections costs what it costs over one);
    /// one it may share begins the download, the machine deciding on that head in the same entry, and the connection's
    /// events go to the machine from then on, as any connection's.
    func firstEvent(_ event: TransferEvent) {
        if let route = firstRoute { return self.event(event, connection: 0, route: route) }
        if !firstHeadCame, case .head(let head) = event, !ResponseRules.isInterim(head) {
            firstHeadCame = true
            if let rule = firstRule, rule.mayShare(head), let connections, let cell = firstCell {
                return beginAtHead(head, cell: cell, connections)
            }
            // Carried: its notices may wait for the engine pass's end, as any transfer's.
            batches = true
        }
        receive(event)
    }

    /// A body piece of the first connection the pipeline started itself (see ``firstEvent(_:)``).
    func firstLent(_ piece: borrowing LentBytes) -> Bool {
        guard let route = firstRoute else { return lend(piece) }
        return lent(piece, connection: 0, route: route)
    }

    /// The first connection's final head may share the file: the connection gets its route (its bytes placed from
    /// where the head says they begin), and the download begins with that head, in one entry into the engine.
    private func beginAtHead(_ head: ResponseHead, cell: TransferCell, _ connections: Connections) {
        let range = RangeRules.contentRange(head.value(forHTTPHeaderField: "Content-Range"))
        let route = Route(position: head.statusCode == 206 ? range?.first ?? 0 : 0, cell: cell, carrying: nil)
        connections.state.withLock { $0.routes[0] = route }
        firstRoute = route
        guard let begin = beginning(running: true) else { return }
        let (slot, token, first) = (slot, token, RequestMachine.SplitEvent.firstHead(reading(of: head), connection: 0))
        owner.send(inline: true) { machine, now in
            var actions = machine.notice(TransferNotice(slot: slot, token: token, kind: .split(begin)), now: now)
            actions.append(machine.notice(TransferNotice(slot: slot, token: token, kind: .split(first)), now: now))
            return actions
        }
    }

    // MARK: A connection's events

    private func event(_ event: TransferEvent, connection id: Int, route: Route) {
        if route.carriesFile { return receive(event) }
        if case .data(let data) = event {
            return data.withUnsafeBytes { body($0, connection: id, route: route) }
        }
        if case .head(let head) = event, !ResponseRules.isInterim(head) {
            if let rule = route.carrying, !rule.mayShare(head) {
                // A head the machine said it would not share (and nothing else of it to decide): carried at once, as
                // any transfer's head is, and heard by the request as a plain transfer's, with the engine pass's others
                // (its position is no one's: a carried file is written as it comes).
                route.carriesFile = true
                batches = true
                return receive(event)
            }
            // Where its server's bytes begin: a 206 at its first byte, any other answer at the file's start (a 200 to a
            // range is the whole file).
            let range = RangeRules.contentRange(head.value(forHTTPHeaderField: "Content-Range"))
            route.position = head.statusCode == 206 ? range?.first ?? route.position : 0
            if let connections, !connections.state.withLock({ $0.isShared }) {
                // The first connection's final head: read once, as any transfer's head is, and decided on in one
                // entry; the file is then begun on it as shared (``ConnectionWork/beginFile(_:done:head:)``) or carried
                // by this connection from it on (``ConnectionWork/carry(id:head:)``), with nothing read or heard again.
                return handIn(.firstHead(reading(of: head), connection: id), route: route)
            }
        }
        if case .completed = event, route.unheard {
            // What it wrote through its cursor is heard before its end (its notice may be waiting for the pass's end).
            handIn(.bytes(0, connection: id, at: route.position), route: route)
            route.unheard = false
        }
        handIn(.transfer(event, connection: id), route: route)
    }

    /// A body piece lent by the transport (see ``LendingTransport``).
    private func lent(_ piece: borrowing LentBytes, connection id: Int, route: Route) -> Bool {
        guard route.carriesFile else {
            piece.withUnsafeBytes { body($0, connection: id, route: route) }
            return true
        }
        return lend(piece)
    }

    /// A body piece of connection `id`: written at once when its cursor has room for all of it, and counted by a notice
    /// batched with the engine pass's others (``TransferNotice/Kind/reached(connection:through:segment:)``);
    /// otherwise the machine is asked where its bytes go.
    private func body(_ bytes: UnsafeRawBufferPointer, connection id: Int, route: Route) {
        if LockCounter.isCounting.load(ordering: .relaxed) { LockCounter.pieces.add(1, ordering: .relaxed) }
        let position = route.position
        let count = Int64(bytes.count)
        route.position += count
        if let sink, let cursor = route.cursor.withLock({ $0.cursor }), position >= cursor.from,
            position + count <= cursor.end
        {
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

    /// Hands `event` in, the event's body piece being `bytes` (kept in the connection's route while the work it leads
    /// to is done: on this thread, before this returns).
    private func handIn(_ event: RequestMachine.SplitEvent, route: Route?, bytes: UnsafeRawBufferPointer? = nil) {
        if case .bytes = event, LockCounter.isCounting.load(ordering: .relaxed) {
            LockCounter.pieceAsks.add(1, ordering: .relaxed)
        }
        route?.bytes = bytes
        let (slot, token) = (slot, token)
        owner.send(inline: true) { machine, now in
            machine.notice(TransferNotice(slot: slot, token: token, kind: .split(event)), now: now)
        }
        route?.bytes = nil
    }

    /// Does `work`, in order; the writes of a connection's piece are answered once, after them.
    func perform(_ work: [ConnectionWork]) {
        guard let connections, let sink else { return }
        var written: (connection: Int, kept: Int, recorded: Bool, failure: NetworkQueueError?)?
        for item in work {
            switch item {
            case .write(let id, let from, let count, let offset, let segment, let threshold):
                var answer = written ?? (id, 0, false, nil)
                defer { written = answer }
                guard answer.failure == nil, let bytes = connections.route(id)?.bytes else { continue }
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
            case .start(let id, let request, let cell, let position, let carrying):
                start(id, request, cell, at: position, carrying: carrying, connections)
            case .aim(let id, let cursor, let sequence):
                connections.route(id)?.cursor.withLock { aimed in
                    if sequence > aimed.sequence { aimed = (cursor, sequence) }
                }
            case .beginFile(let shape, let done, let head):
                connections.state.withLock { $0.isShared = true }
                var failure = sink.begin(reading(of: head))
                if failure == nil { failure = sink.beginSegments(shape, done: done) }
                if let failure { handIn(.writeFailed(failure), route: nil) }
            case .carry(let id, let head):
                // The file is this connection's: its head begins the file as any transfer's does (the engine heard it
                // already), and its events go through the pipeline's own steps, batched with the engine pass's others
                // as any transfer's.
                connections.route(id)?.carriesFile = true
                batches = true
                if case let failed = step(.head(head)), case .fileFailed = failed { pass(failed) }
            case .finish(let head, let length, let metrics):
                finish(head: head, length: length, metrics: metrics)
            }
        }
        if let written {
            handIn(
                .written(written.kept, recorded: written.recorded, failure: written.failure),
                route: connections.route(written.connection))
        }
    }

    /// Starts connection `id`, whose server's first byte is at `position` of the file, its handle going to `cell`.
    private func start(
        _ id: Int, _ request: ConnectionRequest, _ cell: TransferCell, at position: Int64,
        carrying: SplitRules.CarryRule?, _ connections: Connections
    ) {
        let route = Route(position: position, cell: cell, carrying: carrying)
        connections.state.withLock { $0.routes[id] = route }
        let outgoing: OutgoingRequest =
            switch request {
            case .asSent: connections.outgoing
            case .made(let made): .request(made)
            }
        let started =
            if let lender = connections.lender {
                lender.startTransfer(
                    outgoing, options: connections.options,
                    lendingBodyTo: { [self] piece in lent(piece, connection: id, route: route) },
                    events: { [self] event in self.event(event, connection: id, route: route) })
            } else {
                connections.transport.startTransfer(outgoing.urlRequest, options: connections.options) {
                    [self] event in self.event(event, connection: id, route: route)
                }
            }
        if !cell.attach(started) { started.cancel() }
    }

    /// The file is whole: closed, hashed when checks apply, and the engine hears the ending.
    private func finish(head: ResponseHead, length: Int64, metrics: TransferMetrics?) {
        switch finishSplit(head: head, length: length) {
        case .event: handIn(.finished(metrics), route: nil)
        case let failed: pass(failed)
        }
    }
}
