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
    private struct Leg {
        let cell: TransferCell
        let source: Int
        /// The range it fetches, while it runs one.
        var run: Int?
        /// The last byte it asked for plus one (nil: to the end of the file).
        let asked: Int64?
        /// True once its head was accepted.
        var isAccepted = false
    }

    private enum Mode {
        /// The first connection's head has not come.
        case first
        /// The head was not one to split on: the first connection's events pass as they are.
        case plain
        case split
        case ended
    }

    private struct State {
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
        var mostConnections = 1
        var lastError: URLError?
    }

    /// What to do outside the lock.
    private struct Work {
        var starts: [(leg: Int, request: URLRequest, cell: TransferCell)] = []
        var cancels: [TransferCell] = []
        var returns: [QueueStateMachine.ConnectionLoan] = []
        var notes: [(NetworkQueueLogRecord.Event, NetworkQueueLogRecord.Level, String)] = []
        /// The head the engine hears first, before anything below.
        var head: (ResponseHead, HeadReading)?
        /// Bytes kept, to count (one delivery).
        var counted = 0
        var failure: URLError?
        /// The file is whole: the head it began with and its length.
        var finish: (head: ResponseHead, length: Int64, metrics: TransferMetrics?)?
    }

    private let owner: NetworkQueue
    private let slot: Int
    private let token: UInt64
    private let transport: any Transport
    private let options: TransferOptions
    private let pipeline: TransferPipeline
    private let sink: FileSink
    /// The request as the queue would send it, once per source: its own URL first, then the mirrors.
    private let requests: [URLRequest]
    private let connections: Int
    private let minimumSize: Int64
    /// The events of a transfer of one connection, as the queue handles them (the first connection's, when the
    /// file is not split).
    private let forward: @Sendable (TransferEvent) -> Void
    private let state: Locked<State>

    init(
        owner: NetworkQueue, slot: Int, token: UInt64, transport: any Transport, options: TransferOptions,
        pipeline: TransferPipeline, sink: FileSink, request: URLRequest, fileOptions: NetworkRequest.FileOptions,
        forward: @escaping @Sendable (TransferEvent) -> Void
    ) {
        self.owner = owner
        self.slot = slot
        self.token = token
        self.transport = transport
        self.options = options
        self.pipeline = pipeline
        self.sink = sink
        var base = request
        for name in ["Range", "If-Range"] { base.setValue(nil, forHTTPHeaderField: name) }
        requests =
            [base] + fileOptions.mirrors.map { SplitRules.request(base, to: $0, origin: request.url) }
        connections = max(1, fileOptions.maximumConnections)
        minimumSize = max(64 << 10, fileOptions.minimumSegmentSize)
        self.forward = forward
        state = Locked(State(sources: SourceList(count: requests.count)))
    }

    /// Sends the first connection's request; returns the handle the engine holds.
    func start() -> SplitDownload {
        let work = state.withLock { state in
            var work = Work()
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

    private func handle(_ event: TransferEvent, leg id: Int) {
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
        }
        if pass { forward(event) }
        perform(work)
    }

    /// An event of the first connection before its head decided; returns true when it passes to the engine as is.
    private func first(_ event: TransferEvent, leg id: Int, _ state: inout State, _ work: inout Work) -> Bool {
        guard case .head(let head) = event, !ResponseRules.isInterim(head) else {
            if case .completed(let error?) = event, state.sources.sources.count > 1 {
                // No byte reached the file: the next source is asked instead.
                return !retryFirst(id, error: error, reason: error.localizedDescription, &state, &work)
            }
            return true
        }
        if let resumed = sink.resumed, head.statusCode == 206 {
            return !beginResumed(head, resumed, leg: id, &state, &work)
        }
        switch SplitRules.shape(of: head, minimumSize: minimumSize) {
        case .success(let shape):
            return !begin(head, shape: shape, done: [], forwarded: head, leg: id, &state, &work)
        case .failure(.status(let code)) where !(200..<300).contains(code):
            return !retryFirst(id, error: URLError(.badServerResponse), reason: "it answered \(code)", &state, &work)
        case .failure(let refusal):
            state.mode = .plain
            work.notes.append((.splitDecided, .info, "one connection: \(refusal.text)"))
            return true
        }
    }

    /// The first connection's source failed before any byte was written: the next live source is asked, or (none
    /// left) the failure passes to the engine (returns false).
    private func retryFirst(_ id: Int, error: URLError, reason: String, _ state: inout State, _ work: inout Work)
        -> Bool
    {
        guard let leg = state.legs[id] else { return false }
        state.sources.drop(leg.source)
        guard state.sources.hasLive else {
            state.mode = .plain
            return false
        }
        state.legs[id] = nil
        state.sources.ended(leg.source)
        work.cancels.append(leg.cell)
        work.notes.append((.sourceDropped, .notice, "dropped \(describe(leg.source)): \(reason)"))
        startFirst(&state, &work)
        return true
    }

    /// A split part continued: its first connection asked from its first missing byte.
    private func beginResumed(
        _ head: ResponseHead, _ resumed: PartSegments, leg id: Int, _ state: inout State, _ work: inout Work
    ) -> Bool {
        let start = SegmentPlan.complement(of: resumed.done, in: 0..<Int64.max).first?.lowerBound ?? 0
        guard let range = RangeRules.contentRange(head.value(forHTTPHeaderField: "Content-Range")),
            let length = range.total, resumed.length == nil || resumed.length == length,
            resumed.done.last.map({ length >= $0.upperBound }) ?? true,
            SplitRules.problem(with: head, start: start, shape: .init(length: length, validator: resumed.validator))
                == nil
        else { return false }
        let shape = SplitRules.Shape(length: length, validator: resumed.validator)
        let forwarded = SplitRules.continuingHead(head, onDisk: resumed.onDisk, length: length)
        return begin(head, shape: shape, done: resumed.done, forwarded: forwarded, leg: id, &state, &work)
    }

    /// The file is split: the part is sized and recorded, the engine hears `forwarded`, the first connection takes
    /// the first range and the others are asked for. False when the part could not be begun (passed on as is).
    private func begin(
        _ head: ResponseHead, shape: SplitRules.Shape, done: [Range<Int64>], forwarded: ResponseHead, leg id: Int,
        _ state: inout State, _ work: inout Work
    ) -> Bool {
        guard case .head(let reading) = pipeline.splitHead(forwarded) else { return false }
        guard sink.beginSegments(shape, done: done) == nil else { return false }
        var plan = SegmentPlan(length: shape.length, connections: connections, minimumSize: minimumSize, done: done)
        guard let run = plan.assign() else { return false }
        state.plan = plan
        state.shape = shape
        state.head = forwarded
        state.mode = .split
        state.legs[id]?.run = run.id
        state.legs[id]?.isAccepted = true
        let message = "split into \(plan.runs.count + plan.waiting.count) ranges over up to \(connections) connections"
        work.notes.append((.splitDecided, .info, message + " and \(requests.count) sources"))
        // The engine hears the head before any count: from this thread, before any other connection starts.
        work.head = (forwarded, reading)
        askForConnections(&state, &work)
        return true
    }

    /// An event of a connection of a split file.
    private func segment(_ event: TransferEvent, leg: Leg, id: Int, _ state: inout State, _ work: inout Work) {
        switch event {
        case .head(let head) where !ResponseRules.isInterim(head):
            guard !leg.isAccepted, let shape = state.shape, let run = leg.run,
                let start = state.plan?.runs.first(where: { $0.id == run })?.start
            else { return }
            if let problem = SplitRules.problem(with: head, start: start, shape: shape) {
                state.sources.drop(leg.source)
                work.notes.append((.sourceDropped, .notice, "dropped \(describe(leg.source)): \(problem)"))
                state.lastError = URLError(.badServerResponse)
                legEnded(id, &state, &work)
            } else {
                state.legs[id]?.isAccepted = true
            }
        case .data(let data):
            guard leg.isAccepted, let run = leg.run else { return }
            take(data, run: run, leg: leg, id: id, &state, &work)
        case .metrics(let metrics):
            if state.metrics == nil { state.metrics = metrics }
        case .completed(let error):
            if let error { state.lastError = error }
            legEnded(id, &state, &work)
        case .head, .sent, .redirect:
            break
        }
    }

    /// A piece of a connection's range: what the plan keeps goes to the part and is counted.
    private func take(_ data: Data, run: Int, leg: Leg, id: Int, _ state: inout State, _ work: inout Work) {
        guard let offset = state.plan?.runs.first(where: { $0.id == run })?.next,
            let piece = state.plan?.received(Int64(data.count), run: run)
        else { return }
        if piece.kept > 0 {
            let failure = data.withUnsafeBytes {
                sink.writeSegment(.init(rebasing: $0.prefix(Int(piece.kept))), at: offset, run: run)
            }
            if failure != nil {
                state.lastError = URLError(.cannotWriteToFile)
                return end(&state, &work, failing: true)
            }
            state.sources.served(piece.kept, by: leg.source)
            state.deliveries += 1
            work.counted = Int(piece.kept)
            state.sinceLoanAsked += piece.kept
            if state.sinceLoanAsked >= Self.askEvery {
                state.sinceLoanAsked = 0
                askForConnections(&state, &work)
            }
        }
        guard piece.isRunDone else { return }
        _ = sink.endSegment(run: run)
        state.legs[id]?.run = nil
        let ranPast = leg.asked.map { $0 > offset + piece.kept } ?? true
        if ranPast {
            // Its server would send more than is wanted now: stopped, and its slot given new work.
            work.cancels.append(leg.cell)
            legEnded(id, &state, &work)
        }
    }

    // MARK: Connections

    /// Bytes counted between two asks for more connections (a slot may have come free meanwhile).
    static let askEvery: Int64 = 4 << 20

    /// Sends the first connection's request to the next live source (from the part's first missing byte when a
    /// split part is continued).
    private func startFirst(_ state: inout State, _ work: inout Work) {
        guard let source = state.sources.pick() else { return end(&state, &work, failing: true) }
        var request = requests[source]
        var asked: Int64?
        if let resumed = sink.resumed {
            // Its first hole: to the next range on disk, or (a part of one connection) to the end.
            let hole = SegmentPlan.complement(of: resumed.done, in: 0..<(resumed.length ?? Int64.max)).first ?? 0..<0
            let open = hole.upperBound == resumed.length ?? Int64.max
            asked = open ? nil : hole.upperBound
            for (name, value) in SplitRules.headers(for: hole, open: open, validator: resumed.validator) {
                request.setValue(value, forHTTPHeaderField: name)
            }
        }
        addLeg(Leg(cell: TransferCell(), source: source, asked: asked), request, &state, &work)
    }

    private func addLeg(_ leg: Leg, _ request: URLRequest, _ state: inout State, _ work: inout Work) {
        let id = state.nextLeg
        state.nextLeg += 1
        state.legs[id] = leg
        state.mostConnections = max(state.mostConnections, state.legs.count)
        work.starts.append((id, request, leg.cell))
    }

    /// Asks the queue for the connections beyond the first that the file may use and has work for.
    private func askForConnections(_ state: inout State, _ work: inout Work) {
        guard state.mode == .split, let plan = state.plan else { return }
        let shareable = plan.waiting.count + plan.runs.filter { $0.remaining >= 2 * minimumSize }.count
        var wanted = min(connections - 1 - state.loans.count, shareable)
        while wanted > 0 {
            let source = state.sources.sources.indices.filter { state.sources.sources[$0].isLive }
                .min { state.sources.sources[$0].running < state.sources.sources[$1].running }
            guard let source else { break }
            let url = requests[source].url
            let (slot, token) = (slot, token)
            let loan = owner.locked.withLock { core in
                core.machine.lendConnection(slot: slot, token: token, to: url)
            }
            guard let loan else { break }
            state.loans.append(loan)
            wanted -= 1
        }
        fillConnections(&state, &work)
    }

    /// Gives every connection the file may run a range (to the live source with the fewest), gives back lent
    /// connections left without work, and ends the file when it is whole or no source is left.
    private func fillConnections(_ state: inout State, _ work: inout Work) {
        guard state.mode == .split, let shape = state.shape else { return }
        while state.legs.count < 1 + state.loans.count, let run = state.plan?.assign() {
            guard let source = state.sources.pick() else {
                state.plan?.failed(run: run.id)
                break
            }
            var request = requests[source]
            for (name, value) in SplitRules.headers(for: run.start..<run.end, open: false, validator: shape.validator) {
                request.setValue(value, forHTTPHeaderField: name)
            }
            addLeg(Leg(cell: TransferCell(), source: source, run: run.id, asked: run.end), request, &state, &work)
        }
        while !state.loans.isEmpty, state.legs.count < 1 + state.loans.count {
            work.returns.append(state.loans.removeLast())
        }
        finishIfDone(&state, &work)
        if state.mode == .split, state.legs.isEmpty, state.plan?.isComplete == false {
            // Bytes are missing and no connection runs: no source is left to fetch them.
            end(&state, &work, failing: true)
        }
    }

    /// A connection ended (completed, failed, stopped or dropped): a range it had not finished waits again, a
    /// broken source is counted, and its slot is given new work.
    private func legEnded(_ id: Int, _ state: inout State, _ work: inout Work) {
        guard let leg = state.legs.removeValue(forKey: id) else { return }
        state.sources.ended(leg.source)
        work.cancels.append(leg.cell)
        if let run = leg.run {
            _ = sink.endSegment(run: run)
            state.plan?.failed(run: run)
            if state.sources.sources[leg.source].isLive, state.sources.broke(leg.source) {
                work.notes.append((.sourceDropped, .notice, "dropped \(describe(leg.source)): its connection broke"))
            }
        }
        fillConnections(&state, &work)
    }

    /// Ends the file when every byte is counted and delivered.
    private func finishIfDone(_ state: inout State, _ work: inout Work) {
        guard state.mode == .split, let plan = state.plan, plan.isComplete, state.deliveries == 0,
            let head = state.head
        else { return }
        var metrics: TransferMetrics?
        if options.collectsMetrics {
            metrics = state.metrics ?? TransferMetrics(totalDuration: 0)
            metrics?.segments = SegmentMetrics(
                connections: state.mostConnections,
                sources: state.sources.sources.indices.map {
                    SegmentMetrics.Source(
                        url: requests[$0].url ?? URL(fileURLWithPath: "/"), bytes: state.sources.sources[$0].served,
                        wasDropped: !state.sources.sources[$0].isLive)
                })
        }
        end(&state, &work, failing: false)
        work.finish = (head, plan.length, metrics)
    }

    /// Stops every connection and gives back every lent one; `failing` tells the engine the attempt failed.
    private func end(_ state: inout State, _ work: inout Work, failing: Bool) {
        guard state.mode != .ended else { return }
        state.mode = .ended
        work.cancels += state.legs.values.map(\.cell)
        state.legs.removeAll()
        work.returns += state.loans
        state.loans.removeAll()
        if failing { work.failure = state.lastError ?? URLError(.networkConnectionLost) }
    }

    private func describe(_ source: Int) -> String {
        source == 0 ? "the request's URL" : "mirror \(source) (\(Redaction.describe(requests[source].url)))"
    }

    // MARK: Outside the lock

    /// Does what an event decided, in order: the head, the notes, the count, the stops, the starts, the loans
    /// given back, then the ending.
    private func perform(_ work: Work) {
        let (slot, token) = (slot, token)
        if let (head, reading) = work.head {
            owner.send(inline: true) {
                $0.transferEvent(.head(head), reading: reading, slot: slot, token: token, now: $1)
            }
        }
        for (event, level, message) in work.notes {
            owner.send(inline: true) { $0.splitNote(event, message, level: level, slot: slot, token: token, now: $1) }
        }
        var more = Work()
        if work.counted > 0 {
            owner.send(inline: true) { $0.bodyReceived(work.counted, slot: slot, token: token, now: $1) }
            state.withLock { state in
                state.deliveries -= 1
                finishIfDone(&state, &more)
            }
        }
        for cell in work.cancels { cell.cancel()?.cancel() }
        for (id, request, cell) in work.starts {
            let started = transport.startTransfer(request, options: options) { [self] event in handle(event, leg: id) }
            if !cell.attach(started) { started.cancel() }
        }
        for loan in work.returns { owner.send(inline: true) { $0.returnConnection(loan, now: $1) } }
        if let failure = work.failure {
            owner.send(inline: true) { $0.transferEvent(.completed(failure), slot: slot, token: token, now: $1) }
        }
        if let (head, length, metrics) = work.finish { finish(head: head, length: length, metrics: metrics) }
        if more.finish != nil || !more.cancels.isEmpty || !more.returns.isEmpty { perform(more) }
    }

    /// The file is whole: closed, hashed when checks apply, and the engine hears the ending.
    private func finish(head: ResponseHead, length: Int64, metrics: TransferMetrics?) {
        let (slot, token) = (slot, token)
        switch pipeline.finishSplit(head: head, length: length) {
        case .fileFailed(let error):
            owner.send(inline: true) { $0.fileEvent(.failed(error), slot: slot, token: token, now: $1) }
        case .integrityFailed(let expected, let actual):
            owner.send(inline: true) {
                $0.transferEnded(
                    .checksumMismatch(expected: expected, actual: actual), slot: slot, token: token, now: $1)
            }
        case .forward, .head:
            if let metrics {
                owner.send(inline: true) { $0.transferEvent(.metrics(metrics), slot: slot, token: token, now: $1) }
            }
            owner.send(inline: true) { $0.transferEvent(.completed(nil), slot: slot, token: token, now: $1) }
        }
    }
}
