import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One file fetched over several connections and sources (issue 36), held by the engine as the attempt's one
/// transfer: one head, the bytes counted once, one ending.
///
/// The first connection sends the request as it is (continuing a split part: from its first missing byte). Its
/// head decides (``SplitRules/shape(of:minimumSize:)``): a file that may not be split, or a response that is not
/// the file, goes on as a transfer of one connection. Otherwise the part is sized and recorded, ``SegmentPlan``
/// shares its missing bytes among connections, each a `Range` request with `If-Range` to a source the
/// ``SourceList`` picks, written at its offset (``FileSink/writeSegment(_:at:run:)``). A connection beyond the
/// first is lent by the queue only from a slot no waiting request could start in, and given back when no work is
/// left for it. A source whose answer is not the file's bytes is dropped; the file fails only when no source is
/// left, and then keeps its part and record for the retry policy.
///
/// Each connection's events are serial; the state is shared under one lock, which is taken before the file's
/// and the queue's and never inside either. The engine hears every count before the ending.
final class SplitDownload: TransferHandle {
    struct Leg {
        let cell: TransferCell
        let source: Int
        /// The range it fetches, while it runs one.
        var run: Int?
        /// The last byte it asked for plus one (nil: to the end of the file, or its server sends the whole file).
        var asked: Int64?
        /// True once its head was accepted.
        var isAccepted = false
        /// Bytes its server sends next that are on disk already, dropped before its range's (see
        /// ``SegmentPlan/follow(from:upTo:maxGap:takingOver:)``).
        var skipping: Int64 = 0
        /// When it last received a byte, or its head was accepted (queue clock); nil before its head.
        var lastByteAt: Double?
        /// Bytes of the file it received (kept).
        var received: Int64 = 0
    }

    enum Mode {
        /// The first connection's head has not come.
        case first
        /// The head was not one to split on: the first connection's events pass as they are.
        case plain
        case split
        case ended
    }

    struct State {
        var mode = Mode.first
        var sources: SourceList
        var legs: [Int: Leg] = [:]
        var nextLeg = 0
        var plan: SegmentPlan?
        var shape: SplitRules.Shape?
        /// The head the engine heard (the first response's, or its continuing form).
        var head: ResponseHead?
        var loans: [QueueStateMachine.ConnectionLoan] = []
        /// Counts handed to the engine and not delivered yet: the ending waits for them.
        var deliveries = 0
        var metrics: TransferMetrics?
        var sinceLoanAsked: Int64 = 0
        /// While the first connection runs alone, the window its pace is measured over: when it began and the bytes
        /// kept since.
        var probe: (start: Double, received: Int64)?
        /// True once the file is shared among connections (they are asked for again as slots come free).
        var isShared = false
        /// True once the log said the first connection runs alone for now.
        var saidAlone = false
        /// When the record beside the part was last saved (queue clock).
        var recordedAt = -Double.infinity
        var mostConnections = 1
        var lastError: URLError?
        /// True once the part from an earlier attempt or run was found not to be this file's any more (its server
        /// answered the continuing request with another validator or length): it is fetched anew.
        var partStartsOver = false
        /// When the next check for stalled connections is due, while one is scheduled (queue clock).
        var stallCheckAt: Double?
        /// When any connection last received a byte (queue clock).
        var movedAt = -Double.infinity
        /// When the download began (queue clock): its metrics' total time runs from here.
        var startedAt = Double.nan
        /// The last source, when its ranges failed and a stream of the whole file is to carry the file on (it starts
        /// as soon as the first missing range is not behind another connection's).
        var streamWanted: Int?
        /// Connections of the last source started again after one broke having received bytes (bounded).
        var restarts = 0
    }

    /// What to do outside the lock.
    struct Work {
        var starts: [(leg: Int, request: URLRequest, cell: TransferCell)] = []
        var cancels: [TransferCell] = []
        var returns: [QueueStateMachine.ConnectionLoan] = []
        var notes: [(NetworkQueueLogRecord.Event, NetworkQueueLogRecord.Level, String)] = []
        /// The head the engine hears first, before anything below.
        var head: (ResponseHead, HeadReading)?
        /// Bytes kept, to count (one delivery).
        var counted = 0
        var failure: URLError?
        /// The part could not be written: the engine hears it as the file's failure.
        var fileFailure: NetworkQueueError?
        /// The file is whole: the head it began with and its length.
        var finish: (head: ResponseHead, length: Int64, metrics: TransferMetrics?)?
        /// A check for stalled connections to schedule at this time (queue clock).
        var stallCheck: Double?
    }

    let owner: NetworkQueue
    let slot: Int
    let token: UInt64
    let transport: any Transport
    /// The transport, when it lends bodies (the file's bytes then skip a copy).
    let lender: (any LendingTransport)?
    let options: TransferOptions
    let pipeline: TransferPipeline
    let sink: FileSink
    /// The request as the queue would send it, once per source: its own URL first, then the mirrors.
    let requests: [URLRequest]
    let connections: Int
    let minimumSize: Int64
    /// The events of a transfer of one connection, as the queue handles them (the first connection's, when the
    /// file is not split).
    let forward: @Sendable (TransferEvent) -> Void
    let state: Locked<State>

    init(
        owner: NetworkQueue, slot: Int, token: UInt64, transport: any Transport, options: TransferOptions,
        pipeline: TransferPipeline, sink: FileSink, request: URLRequest, fileOptions: NetworkRequest.FileOptions,
        forward: @escaping @Sendable (TransferEvent) -> Void
    ) {
        self.owner = owner
        self.slot = slot
        self.token = token
        self.transport = transport
        lender = transport as? any LendingTransport
        self.options = options
        self.pipeline = pipeline
        self.sink = sink
        var base = request
        for name in ["Range", "If-Range"] { base.setValue(nil, forHTTPHeaderField: name) }
        requests =
            [base]
            + fileOptions.mirrors.map {
                SplitRules.request(base, to: $0, origin: request.url, policy: transport.redirectPolicy)
            }
        connections = max(1, fileOptions.maximumConnections)
        minimumSize = max(64 << 10, fileOptions.minimumSegmentSize)
        self.forward = forward
        state = Locked(State(sources: SourceList(count: requests.count)))
    }

    /// Sends the first connection's request; returns the handle the engine holds.
    func start() -> SplitDownload {
        let now = owner.clock.now()
        let work = state.withLock { state in
            var work = Work()
            state.startedAt = now
            startFirst(&state, &work)
            return work
        }
        perform(work)
        return self
    }

    func cancel() {
        let work = state.withLock { state -> Work in
            var work = Work()
            end(&state, &work, failing: false)
            return work
        }
        perform(work)
    }

    // MARK: Events

    /// A body piece lent by the transport (see ``LendingTransport``): written at its offset, or (one connection)
    /// as the queue writes a transfer's body.
    func lent(_ piece: borrowing LentBytes, leg id: Int) {
        var work = Work()
        var plain = false
        piece.withUnsafeBytes { bytes in
            state.withLock { state in
                guard let leg = state.legs[id] else { return }
                switch state.mode {
                case .plain: plain = true
                case .split:
                    guard leg.isAccepted, let run = leg.run else { return }
                    take(bytes, run: run, leg: leg, id: id, &state, &work)
                case .first, .ended: break
                }
            }
        }
        if plain {
            let (slot, token, count) = (slot, token, piece.count)
            switch pipeline.write(piece) {
            case .forward: owner.send(inline: true) { $0.bodyReceived(count, slot: slot, token: token, now: $1) }
            case let failed: owner.pass(failed, slot: slot, token: token)
            }
        }
        perform(work)
    }

    func handle(_ event: TransferEvent, leg id: Int) {
        var work = Work()
        var pass = false
        state.withLock { state in
            guard let leg = state.legs[id] else { return }
            switch state.mode {
            case .ended: return
            case .plain: pass = true
            case .first: pass = first(event, leg: id, &state, &work)
            case .split: segment(event, leg: leg, id: id, &state, &work)
            }
            if pass, case .completed = event {
                // Its connection is over: the leg (whose handle's events hold this download) goes.
                state.legs.removeAll()
                state.mode = .ended
            }
        }
        if pass { forward(event) }
        perform(work)
    }

    /// An event of a connection of a split file.
    func segment(_ event: TransferEvent, leg: Leg, id: Int, _ state: inout State, _ work: inout Work) {
        switch event {
        case .head(let head) where !ResponseRules.isInterim(head):
            guard !leg.isAccepted, let shape = state.shape, let run = leg.run,
                let start = state.plan?.runs.first(where: { $0.id == run })?.start
            else { return }
            let known = state.sources.sources[leg.source].validator
            if leg.asked == nil {
                // A stream of the whole file carrying the file on after its ranges failed.
                if let problem = SplitRules.streamProblem(with: head, shape: shape, validator: known) {
                    drop(leg.source, problem: problem, &state, &work)
                    fillConnections(&state, &work)
                } else {
                    state.legs[id]?.isAccepted = true
                    state.legs[id]?.lastByteAt = owner.clock.now()
                }
                return
            }
            if let problem = SplitRules.problem(with: head, start: start, shape: shape, validator: known) {
                rangeFailed(leg: id, source: leg.source, problem: problem, &state, &work)
                fillConnections(&state, &work)
            } else {
                state.sources.learn(SplitRules.ownValidator(of: head), for: leg.source)
                state.legs[id]?.isAccepted = true
                state.legs[id]?.lastByteAt = owner.clock.now()
            }
        case .data(let data):
            guard leg.isAccepted, let run = leg.run else { return }
            data.withUnsafeBytes { take($0, run: run, leg: leg, id: id, &state, &work) }
        case .metrics(let metrics):
            if state.metrics == nil { state.metrics = metrics }
        case .completed(let error):
            if let error { state.lastError = error }
            legEnded(id, &state, &work)
        case .head, .sent, .redirect:
            break
        }
    }

    /// While the first connection runs alone: `kept` more bytes at `now`. Once a window is over it is judged on its
    /// own (a server's first burst, such as nginx's second's worth of its cap at once, does not hide the pace that
    /// follows): the rest is shared when one connection would take too long, else a new window begins.
    func judgePace(keeping kept: Int64, now: Double, _ state: inout State, _ work: inout Work) {
        guard let probe = state.probe, let plan = state.plan else { return }
        let received = probe.received + kept
        let elapsed = now - probe.start
        guard elapsed >= SplitRules.probeSeconds else {
            state.probe = (probe.start, received)
            return
        }
        let remaining = plan.length - plan.receivedBytes
        if SplitRules.isWorthSharing(remaining: remaining, received: received, elapsed: elapsed) {
            state.probe = nil
            state.plan?.divide(into: connections)
            share(&state, &work)
            return
        }
        state.probe = (now, 0)
        if !state.saidAlone {
            state.saidAlone = true
            let seconds = Double(remaining) * elapsed / Double(received)
            let message = String(format: "one connection for now: the rest would take %.2f s on it", seconds)
            work.notes.append((.splitDecided, .info, message))
        }
    }

    /// A piece of a connection's range: what the plan keeps goes to the part and is counted.
    func take(
        _ bytes: UnsafeRawBufferPointer, run: Int, leg: Leg, id: Int, _ state: inout State, _ work: inout Work
    ) {
        let now = owner.clock.now()
        state.legs[id]?.lastByteAt = now
        state.movedAt = now
        var bytes = bytes
        if leg.skipping > 0 {
            // Bytes on disk already, sent before the range's own: dropped.
            let dropped = min(leg.skipping, Int64(bytes.count))
            state.legs[id]?.skipping -= dropped
            bytes = .init(rebasing: bytes[Int(dropped)...])
            guard !bytes.isEmpty else { return }
        }
        guard let offset = state.plan?.runs.first(where: { $0.id == run })?.next,
            let piece = state.plan?.received(Int64(bytes.count), run: run)
        else { return }
        if piece.kept > 0 {
            let threshold = SplitRules.recordThreshold(secondsSinceRecord: now - state.recordedAt)
            let (failure, recorded) = sink.writeSegment(
                .init(rebasing: bytes.prefix(Int(piece.kept))), at: offset, run: run, recordingAfter: threshold)
            if recorded { state.recordedAt = now }
            if let failure {
                end(&state, &work, failing: false)
                work.fileFailure = failure
                return
            }
            state.sources.served(piece.kept, by: leg.source)
            state.legs[id]?.received += piece.kept
            // One delivery per event, whatever the runs its bytes filled.
            if work.counted == 0 { state.deliveries += 1 }
            work.counted += Int(piece.kept)
            state.sinceLoanAsked += piece.kept
            if state.probe != nil {
                judgePace(keeping: piece.kept, now: now, &state, &work)
            } else if state.isShared, state.sinceLoanAsked >= Self.askEvery {
                state.sinceLoanAsked = 0
                askForConnections(&state, &work)
            }
        }
        guard piece.isRunDone else { return }
        _ = sink.endSegment(run: run)
        state.legs[id]?.run = nil
        let end = offset + piece.kept
        guard leg.asked.map({ $0 > end }) ?? true else { return }
        // A source that takes ranges is asked again rather than streamed past more than a range's worth of bytes
        // on disk; one that takes none is streamed to the end.
        let maxGap = state.sources.sources[leg.source].takesRanges ? minimumSize : nil
        // A range whose connection has not answered yet may be taken over: this one is sending its bytes already.
        if state.mode == .split,
            let (next, gap, tookOver) = follow(from: end, upTo: leg.asked, maxGap: maxGap, &state, &work)
        {
            // Its server goes on sending the bytes of the next range: the connection takes that range, and the one
            // it was taken from gets other work.
            if tookOver { fillConnections(&state, &work) }
            state.legs[id]?.run = next.id
            state.legs[id]?.skipping = gap
            if bytes.count > Int(piece.kept), let leg = state.legs[id] {
                take(.init(rebasing: bytes[Int(piece.kept)...]), run: next.id, leg: leg, id: id, &state, &work)
            }
            return
        }
        // Its server would send more than is wanted now: stopped, and its slot given new work.
        work.cancels.append(leg.cell)
        legEnded(id, &state, &work)
    }
}
