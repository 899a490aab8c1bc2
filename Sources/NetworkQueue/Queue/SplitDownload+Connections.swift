import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A split download's connections: which range each runs and to which source, the lent ones asked for and given
/// back, and the ending; then what an event decided, done outside the lock.
extension SplitDownload {
    /// Bytes counted between two asks for more connections (a slot may have come free meanwhile).
    static let askEvery: Int64 = 4 << 20

    /// Sends the first connection's request to the next live source (from the part's first missing byte when a
    /// split part is continued).
    func startFirst(_ state: inout State, _ work: inout Work) {
        guard let source = state.sources.pick(forRange: false) else { return end(&state, &work, failing: true) }
        var request = requests[source]
        var asked: Int64?
        if let resumed = resumed(state) {
            // The first range its plan will give it (`begin` makes the same plan): to the next range on disk or the
            // next connection's range, so that its server sends no byte past it; open only for a part of one
            // connection, whose length is not known yet.
            let first = resumed.length.flatMap {
                SegmentPlan(length: $0, connections: connections, minimumSize: minimumSize, done: resumed.done)
                    .waiting.first
            }
            let hole = first ?? resumed.firstHole
            let open = hole.upperBound == resumed.length ?? Int64.max && first == nil
            asked = open ? nil : hole.upperBound
            for (name, value) in SplitRules.headers(for: hole, open: open, validator: resumed.validator) {
                request.setValue(value, forHTTPHeaderField: name)
            }
        }
        addLeg(Leg(cell: TransferCell(), source: source, asked: asked), request, &state, &work)
    }

    /// The part this download continues: the sink's, unless it was found to be another file's.
    func resumed(_ state: State) -> PartSegments? {
        state.partStartsOver ? nil : sink.resumed
    }

    func addLeg(_ leg: Leg, _ request: URLRequest, _ state: inout State, _ work: inout Work) {
        let id = state.nextLeg
        state.nextLeg += 1
        state.legs[id] = leg
        state.mostConnections = max(state.mostConnections, state.legs.count)
        work.starts.append((id, request, leg.cell))
    }

    /// The file is shared: logged, and the connections beyond the first asked for.
    func share(_ state: inout State, _ work: inout Work) {
        guard let plan = state.plan else { return }
        state.isShared = true
        let ranges = plan.runs.count + plan.waiting.count
        let message = "split into \(ranges) ranges over up to \(connections) connections and \(requests.count) sources"
        work.notes.append((.splitDecided, .info, message))
        askForConnections(&state, &work)
    }

    /// Asks the queue for the connections beyond the first that the file may use and has work for.
    func askForConnections(_ state: inout State, _ work: inout Work) {
        guard state.mode == .split, let plan = state.plan else { return }
        let shareable = plan.waiting.count + plan.runs.filter { $0.remaining >= 2 * minimumSize }.count
        var wanted = min(connections - 1 - state.loans.count, shareable)
        while wanted > 0 {
            guard let source = state.sources.leastBusy else { break }
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

    /// Connections of the last source started again in one attempt after one broke having received bytes.
    static let restartLimit = 16

    /// Starts the stream of the whole file `streamWanted` names, once the first missing range is not behind another
    /// connection's and a connection is free: its server's bytes up to that range (on disk already) are skipped,
    /// and it takes each waiting range it reaches.
    func startStream(_ state: inout State, _ work: inout Work) {
        guard let source = state.streamWanted, state.legs.count < 1 + state.loans.count else { return }
        // One stream of a source at a time, answered or not.
        guard state.sources.sources[source].isLive,
            !state.legs.values.contains(where: { $0.source == source && $0.asked == nil })
        else {
            state.streamWanted = nil
            return
        }
        guard let (run, gap, _) = follow(from: 0, upTo: nil, maxGap: nil, &state, &work) else { return }
        state.streamWanted = nil
        state.sources.started(source)
        var leg = Leg(cell: TransferCell(), source: source, run: run.id, asked: nil)
        leg.skipping = gap
        addLeg(leg, requests[source], &state, &work)
    }

    /// The next range a connection whose server sends the bytes from `offset` on (up to `limit`) can take, across
    /// at most `maxGap` bytes on disk (``SegmentPlan/follow(from:upTo:maxGap:takingOver:)``): a waiting one, or one
    /// whose connection has not answered yet, which is then stopped. Returns the range, the gap, and whether a
    /// connection was stopped for it.
    func follow(
        from offset: Int64, upTo limit: Int64?, maxGap: Int64?, _ state: inout State, _ work: inout Work
    ) -> (run: SegmentPlan.Run, gap: Int64, tookOver: Bool)? {
        let idle = Set(state.legs.values.filter { !$0.isAccepted }.compactMap(\.run))
        guard
            let (run, gap, takenOver) = state.plan?.follow(from: offset, upTo: limit, maxGap: maxGap, takingOver: idle)
        else { return nil }
        guard let takenOver, let other = state.legs.first(where: { $0.value.run == takenOver })?.key else {
            return (run, gap, false)
        }
        state.legs[other]?.run = nil
        stop(leg: other, &state, &work)
        return (run, gap, true)
    }

    /// `source` answered what is not the file (`problem`): dropped, its connections stop, and the rest of their
    /// ranges waits for the live sources.
    func drop(_ source: Int, problem: String, _ state: inout State, _ work: inout Work) {
        state.sources.drop(source)
        work.notes.append((.sourceDropped, .notice, "dropped \(describe(source)): \(problem)"))
        state.lastError = URLError(.badServerResponse)
        stopLegs(of: source, &state, &work)
    }

    /// Gives every connection the file may run a range (to the live source with the fewest), gives back lent
    /// connections left without work, and ends the file when it is whole or no source is left.
    func fillConnections(_ state: inout State, _ work: inout Work) {
        guard state.mode == .split, state.shape != nil else { return }
        startStream(&state, &work)
        while state.legs.count < 1 + state.loans.count, state.sources.leastBusy != nil, let run = state.plan?.assign() {
            guard let source = state.sources.pick() else {
                state.plan?.failed(run: run.id)
                break
            }
            var request = requests[source]
            let validator = state.sources.sources[source].validator
            for (name, value) in SplitRules.headers(for: run.start..<run.end, open: false, validator: validator) {
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
        if state.mode == .split, state.isShared, state.plan?.waiting.isEmpty == true, !state.legs.isEmpty,
            state.stallCheckAt == nil, options.rateCap?.maximumBytesPerSecond == nil
        {
            // The end of the file: a connection that stalls now would hold it alone.
            let at = owner.clock.now() + SplitRules.stallSeconds
            state.stallCheckAt = at
            work.stallCheck = at
        }
    }

    /// The stall check came: each connection that received nothing for ``SplitRules/stallSeconds`` at the end of
    /// the file, to a source another live source can stand in for, stops with that source (what they received
    /// stays), and its range goes to a connection that is free.
    func stallCheckCame() {
        let work = state.withLock { state -> Work in
            var work = Work()
            state.stallCheckAt = nil
            guard state.mode == .split, let plan = state.plan else { return work }
            let now = owner.clock.now()
            let stalled = SplitRules.stalled(
                state.legs.map { ($0.key, $0.value.lastByteAt) }, movedAt: state.movedAt, now: now,
                isEndGame: plan.waiting.isEmpty, isCapped: options.rateCap?.maximumBytesPerSecond != nil)
            // Only a source another live source can stand in for is dropped: the last one is left to the idle
            // timeout, as without splitting (a server slow to its first byte is not one that stalled).
            var dropped = 0
            for id in stalled {
                guard let leg = state.legs[id], state.sources.sources[leg.source].isLive,
                    state.sources.hasOtherForRanges(than: leg.source)
                else { continue }
                let quiet = String(format: "nothing for %.1f s at the end of the file", now - (leg.lastByteAt ?? now))
                stop(leg: id, &state, &work)
                _ = state.sources.broke(leg.source)
                work.notes.append((.sourceDropped, .notice, "dropped \(describe(leg.source)): \(quiet)"))
                stopLegs(of: leg.source, &state, &work)
                dropped += 1
            }
            if dropped == 0 {
                fillConnections(&state, &work)
            } else {
                askForConnections(&state, &work)
            }
            return work
        }
        perform(work)
    }

    /// A connection ended (completed, failed, stopped or dropped): a range it had not finished waits again, a
    /// broken source is counted, and its slot is given new work.
    func legEnded(_ id: Int, _ state: inout State, _ work: inout Work) {
        guard let leg = stop(leg: id, &state, &work) else { return }
        let why = state.lastError.map { "URLError \($0.code.rawValue)" } ?? "it ended early"
        let isLast = state.sources.isLast(leg.source)
        if leg.run != nil, leg.asked != nil, state.sources.sources[leg.source].isLive,
            hasStream(of: leg.source, state) || isLast
        {
            // A range cut short while the same server's stream of the file goes on, or by the last source: no more
            // ranges from it; a stream of the whole file carries the file on.
            rangeFailed(leg: id, source: leg.source, problem: "a range's connection broke (\(why))", &state, &work)
        } else if leg.run != nil, leg.asked == nil, isLast, leg.received > 0, state.restarts < Self.restartLimit {
            // The last source's stream broke after bytes came: what is left is asked for again, as ranges while it
            // takes them, else by a new stream (never more than a bound of times an attempt).
            state.restarts += 1
            work.notes.append(
                (.splitDecided, .notice, "\(describe(leg.source))'s connection broke (\(why)): the rest is asked again")
            )
            if !state.sources.sources[leg.source].takesRanges { state.streamWanted = leg.source }
        } else if leg.run != nil, state.sources.sources[leg.source].isLive {
            guard state.sources.broke(leg.source) else {
                // The last source broke: the attempt fails, and its retry continues every range.
                return end(&state, &work, failing: true)
            }
            let why = state.lastError.map { " (URLError \($0.code.rawValue))" } ?? ""
            work.notes.append((.sourceDropped, .notice, "dropped \(describe(leg.source)): its connection broke\(why)"))
            stopLegs(of: leg.source, &state, &work)
        }
        fillConnections(&state, &work)
    }

    /// True when a connection to `source` streams the file to its end and its head was accepted (the first
    /// connection, asking for the file as it is).
    func hasStream(of source: Int, _ state: State) -> Bool {
        state.legs.values.contains { $0.source == source && $0.isAccepted && $0.asked == nil }
    }

    /// Connection `id` to `source` got a wrong answer to its range (`problem`): with a good stream of the file from
    /// the same source, the source takes no more ranges and that stream goes on; otherwise the source is dropped
    /// and its connections stop. Either way the connection stops, and its range waits again.
    func rangeFailed(leg id: Int, source: Int, problem: String, _ state: inout State, _ work: inout Work) {
        let hasStream = hasStream(of: source, state)
        if !hasStream, state.sources.isLast(source) {
            // The last source's stream had stopped before this answer came: a new one carries the file on.
            state.streamWanted = source
        }
        switch state.sources.rangeFailed(source, hasStream: hasStream || state.streamWanted == source) {
        case .noMoreRanges:
            stop(leg: id, &state, &work)
            let message =
                "no more ranges from \(describe(source)): \(problem); its connection of the whole file goes on"
            work.notes.append((.splitDecided, .notice, message))
        case .dropped:
            drop(source, problem: problem, &state, &work)
        }
    }

    /// Stops connection `id`: its source runs one fewer, and what its range received stays while the rest waits
    /// again. Returns it, or nil when it had ended.
    @discardableResult
    func stop(leg id: Int, _ state: inout State, _ work: inout Work) -> Leg? {
        guard let leg = state.legs.removeValue(forKey: id) else { return nil }
        state.sources.ended(leg.source)
        work.cancels.append(leg.cell)
        if let run = leg.run {
            _ = sink.endSegment(run: run)
            state.plan?.failed(run: run)
        }
        return leg
    }

    /// A source was dropped: its connections stop, what they received stays, and the rest of their ranges waits for
    /// the live sources. A dropped mirror that stalls would otherwise hold its ranges until the attempt's idle
    /// timeout (a range held is one no other connection may take more than half of).
    func stopLegs(of source: Int, _ state: inout State, _ work: inout Work) {
        for (id, leg) in state.legs where leg.source == source { stop(leg: id, &state, &work) }
    }

    /// Ends the file when every byte is counted and delivered.
    func finishIfDone(_ state: inout State, _ work: inout Work) {
        guard state.mode == .split, let plan = state.plan, plan.isComplete, state.deliveries == 0,
            let head = state.head
        else { return }
        var metrics: TransferMetrics?
        if options.collectsMetrics {
            // The first connection's figures (its connect, its first byte), over the whole file's time: a connection
            // stopped before its figures came (a retry's, say) would leave it at 0.
            var figures = state.metrics ?? TransferMetrics(totalDuration: 0)
            let elapsed = owner.clock.now() - state.startedAt
            if elapsed.isFinite { figures.totalDuration = max(figures.totalDuration, elapsed) }
            metrics = figures
            metrics?.segments = SegmentMetrics(
                connections: state.mostConnections,
                sources: state.sources.sources.indices.map {
                    SegmentMetrics.Source(
                        url: requests[$0].url ?? URL(fileURLWithPath: "/"), bytes: state.sources.sources[$0].served,
                        wasDropped: !state.sources.sources[$0].isLive,
                        refusedRanges: !state.sources.sources[$0].takesRanges)
                })
        }
        end(&state, &work, failing: false)
        work.finish = (head, plan.length, metrics)
    }

    /// Stops every connection and gives back every lent one; `failing` tells the engine the attempt failed.
    func end(_ state: inout State, _ work: inout Work, failing: Bool) {
        guard state.mode != .ended else { return }
        state.mode = .ended
        work.cancels += state.legs.values.map(\.cell)
        state.legs.removeAll()
        work.returns += state.loans
        state.loans.removeAll()
        if failing { work.failure = state.lastError ?? URLError(.networkConnectionLost) }
    }

    func describe(_ source: Int) -> String {
        source == 0 ? "the request's URL" : "mirror \(source) (\(Redaction.describe(requests[source].url)))"
    }

    // MARK: Outside the lock

    /// Does what an event decided, in order: the head, the notes, the count, the stops, the starts, the loans
    /// given back, then the ending.
    func perform(_ work: Work) {
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
            let started =
                if let lender {
                    lender.startTransfer(
                        request, options: options, lendingBodyTo: { [self] piece in lent(piece, leg: id) },
                        events: { [self] event in handle(event, leg: id) })
                } else {
                    transport.startTransfer(request, options: options) { [self] event in handle(event, leg: id) }
                }
            if !cell.attach(started) { started.cancel() }
        }
        for loan in work.returns { owner.send(inline: true) { $0.returnConnection(loan, now: $1) } }
        if let at = work.stallCheck { owner.clock.schedule(at: at) { [self] in stallCheckCame() } }
        if let failure = work.fileFailure { owner.pass(.fileFailed(failure), slot: slot, token: token) }
        if let failure = work.failure {
            owner.send(inline: true) { $0.transferEvent(.completed(failure), slot: slot, token: token, now: $1) }
        }
        if let (head, length, metrics) = work.finish { finish(head: head, length: length, metrics: metrics) }
        // What the last count's delivery ended: only `finishIfDone` fills it, and it always ends the file.
        if more.finish != nil { perform(more) }
    }

    /// The file is whole: closed, hashed when checks apply, and the engine hears the ending.
    func finish(head: ResponseHead, length: Int64, metrics: TransferMetrics?) {
        let (slot, token) = (slot, token)
        switch pipeline.finishSplit(head: head, length: length) {
        case .forward:
            if let metrics {
                owner.send(inline: true) { $0.transferEvent(.metrics(metrics), slot: slot, token: token, now: $1) }
            }
            owner.send(inline: true) { $0.transferEvent(.completed(nil), slot: slot, token: token, now: $1) }
        case let failed: owner.pass(failed, slot: slot, token: token)
        }
    }
}
