import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The connections of a shared file: their heads and ends, the bytes each brings (written through its cursor, or
/// placed where the plan keeps them), the first connection's pace, the connections asked for and given back, and the
/// failover from a location that breaks or answers a range wrongly.
extension SplitMachine {
    /// `count` body bytes of connection `id` came, the first at `position` of the file (nil: where the machine last
    /// knew the connection's stream): where the plan keeps them, each a
    /// ``ConnectionWork/write(connection:from:count:offset:segment:recordAfter:)``. The bytes before `position` that the
    /// machine had not heard of were written through the connection's cursor: they are counted first. Nothing when
    /// they are not the file's (before its head was accepted, or after its segment ended).
    private mutating func bytes(
        _ count: Int, connection id: Int, at position: Int64?, now: Double, _ actions: inout [Action]
    ) {
        guard let sharing, let connection = connections[id], connection.isAccepted else { return }
        let position = position ?? connection.position
        // Nothing new: neither a byte in hand nor one written through its cursor.
        if count == 0, position <= connection.position, connection.racingFrom.map({ position <= $0 }) ?? true { return }
        if connection.segment == nil, let from = connection.racingFrom {
            // Raced in the end game: its first bytes keep its range when the other has not answered yet (that one
            // stops); otherwise the other brings them, and this one stops.
            guard let (next, _, _) = follow(from: from, upTo: connection.asked, maxGap: 0, &actions) else {
                stop(id, &actions)
                return fillConnections(now: now, &actions)
            }
            connections[id]?.segment = next.id
            connections[id]?.racingFrom = nil
            // What it brought since the race began was written through its cursor, from the raced offset on.
            connections[id]?.position = from
        }
        if let known = connections[id]?.position, position > known {
            // Written through its cursor already (their notice may still be on its way): counted, never written again.
            countWritten(Int(position - known), at: known, connection: id, now: now, &actions)
        }
        guard count > 0, connections[id]?.segment != nil else { return }
        // Counted in flight before they are placed: a segment they complete must not finish the file before
        // they are written.
        sharing.writesInFlight += 1
        let before = actions.count
        _ = take(from: 0, count: count, at: position, connection: id, written: false, now: now, &actions)
        if !actions[before...].contains(where: { if case .work(.write) = $0 { true } else { false } }) {
            sharing.writesInFlight -= 1
            finishIfDone(now: now, &actions)
        }
    }

    /// Connection `id` wrote its bytes through its cursor for `segment` up to `through`: what the machine had not heard
    /// of is counted, and the record saved when its threshold is reached (``ConnectionWork/saveRecord``). Nothing when
    /// the segment is not the connection's any more (raced, stopped): its bytes were the file's, and are fetched again
    /// by the segment's new connection.
    private mutating func reached(
        _ id: Int, through: Int64, segment: Int, now: Double, _ actions: inout [Action]
    ) {
        guard sharing != nil, let connection = connections[id], connection.isAccepted, connection.segment == segment,
            through > connection.position
        else { return }
        countWritten(Int(through - connection.position), at: connection.position, connection: id, now: now, &actions)
        // The record of what cursors wrote is saved as each piece's write would save it: once its threshold's bytes
        // were counted since the last (a tenth of a second after it: 1 MiB, else 64 MiB).
        guard let sharing = self.sharing,
            sharing.unrecorded >= SplitRules.recordThreshold(secondsSinceRecord: now - sharing.recordedAt)
        else { return }
        sharing.unrecorded = 0
        sharing.recordedAt = now
        actions.append(.work(.saveRecord))
    }

    /// `count` bytes of connection `id`'s stream from `position` on were written through its cursor: placed as the
    /// plan keeps them (never written again), then counted. The file cannot finish before they are counted.
    private mutating func countWritten(
        _ count: Int, at position: Int64, connection id: Int, now: Double, _ actions: inout [Action]
    ) {
        guard let sharing else { return }
        sharing.writesInFlight += 1
        let kept = take(from: 0, count: count, at: position, connection: id, written: true, now: now, &actions)
        sharing.writesInFlight -= 1
        sharing.unrecorded += kept
        if kept > 0 {
            counted(kept, now: now, &actions)
        } else {
            finishIfDone(now: now, &actions)
        }
    }

    /// The writes of one ``Event/bytes(_:connection:at:)`` event are done: `kept` bytes in all (the record saved when
    /// `recorded`), or the part could not be written (`failure`). The bytes are counted, the first connection's pace
    /// judged, more connections asked for, and the file finished when whole.
    private mutating func written(
        _ kept: Int, recorded: Bool, failure: NetworkQueueError?, now: Double, _ actions: inout [Action]
    ) {
        guard let sharing else { return }
        sharing.writesInFlight -= 1
        if recorded {
            sharing.recordedAt = now
            sharing.unrecorded = 0
        }
        if let failure {
            end(failing: false, &actions)
            actions.append(.fileFailed(failure))
            return
        }
        counted(Int64(kept), now: now, &actions)
    }

    /// `kept` bytes are written: counted, the first connection's pace judged, more connections asked for, and the file
    /// finished when whole.
    private mutating func counted(_ kept: Int64, now: Double, _ actions: inout [Action]) {
        guard let sharing else { return }
        actions.append(.counted(Int(kept)))
        sharing.sinceLoanAsked += kept
        if case .judging(let since, let received, let saidAlone) = sharing.pace {
            judgePace(sharing, since: since, received: received + kept, saidAlone: saidAlone, now: now, &actions)
        } else if connectionLimit > 1, sharing.sinceLoanAsked >= Self.askEvery {
            sharing.sinceLoanAsked = 0
            askForConnections(&actions)
        }
        finishIfDone(now: now, &actions)
    }

    /// The queue lent these connections (none: it had none to lend): each is given a segment, and one the file did not
    /// ask for (a file of one connection, or one that holds all it may) is given back.
    private mutating func lent(_ loans: [QueueStateMachine.ConnectionLoan], now: Double, _ actions: inout [Action]) {
        guard let sharing else {
            for loan in loans { actions.append(.giveBack(loan)) }
            return
        }
        for loan in loans {
            if sharing.loans.count < connectionLimit - 1 {
                sharing.loans.append(loan)
            } else {
                actions.append(.giveBack(loan))
            }
        }
        fillConnections(now: now, &actions)
    }

    /// The facet's door: an event of a shared file's connections (a transfer's event, a connection's bytes, their
    /// writes and counts) or of the queue's loans. Other events are not this facet's, and change nothing.
    mutating func segmentEvent(_ event: Event, now: Double, _ actions: inout [Action]) {
        switch event {
        case .transfer(let transferEvent, let id):
            guard let connection = connections[id] else { return }
            connectionEvent(transferEvent, connection, id: id, now: now, &actions)
        case .bytes(let count, let id, let position): bytes(count, connection: id, at: position, now: now, &actions)
        case .written(let kept, let recorded, let failure):
            written(kept, recorded: recorded, failure: failure, now: now, &actions)
        case .reached(let id, let through, let segment):
            reached(id, through: through, segment: segment, now: now, &actions)
        case .lent(let loans): lent(loans, now: now, &actions)
        case .firstHead, .writeFailed, .recheckDue, .finished: break
        }
    }

    /// An event of a connection of a split file.
    private mutating func connectionEvent(
        _ event: TransferEvent, _ connection: Connection, id: Int, now: Double, _ actions: inout [Action]
    ) {
        switch event {
        case .head(let head) where !ResponseRules.isInterim(head):
            // Every head of every connection is heard by the queue's host books (a mirror's 429 holds its server).
            actions.append(.answered(head))
            guard let sharing, !connection.isAccepted, let segment = connection.segment,
                let start = sharing.plan.segments.first(where: { $0.id == segment })?.start
            else { return }
            let shape = sharing.shape
            let known = locations.locations[connection.location].validator
            if connection.asked == nil {
                // A stream of the whole file carrying the file on after its ranges failed.
                if let problem = SplitRules.streamProblem(with: head, shape: shape, validator: known) {
                    failover(from: connection.location, .wrongAnswer, reason: problem, &actions)
                    fillConnections(now: now, &actions)
                } else {
                    accept(id, now: now)
                }
                return
            }
            if let problem = SplitRules.problem(with: head, start: start, shape: shape, validator: known) {
                rangeFailed(id, location: connection.location, problem: problem, &actions)
                fillConnections(now: now, &actions)
            } else {
                locations.learn(SplitRules.ownValidator(of: head), for: connection.location)
                accept(id, now: now)
                // A race for its range is won by the first answer: the connection it raced stops.
                let racers = connections.filter { $0.key != id && $0.value.racingFrom == start }.keys.sorted()
                for racer in racers { stop(racer, &actions) }
                if !racers.isEmpty { fillConnections(now: now, &actions) }
            }
        // A body comes only as ``Event/bytes(_:connection:at:)``, with the piece the shell writes: a count here would
        // place bytes nobody writes.
        case .data:
            break
        case .metrics(let figures):
            if let sharing, sharing.metrics == nil { sharing.metrics = figures }
        case .completed(let error):
            if let error {
                lastError = error
                unreachable(error, connection: id, &actions)
            }
            ended(id, now: now, &actions)
        case .head, .sent, .redirect:
            break
        }
    }

    /// While the first connection runs alone, each of its windows is judged when it ends (``SplitRules/probeSeconds``),
    /// by a ``QueueTimer`` entry of the request (``windowEnded(now:_:)``), and not only when its bytes come.
    func scheduleWindowEnd(_ actions: inout [Action]) {
        guard let sharing, case .judging(let since, _, _) = sharing.pace else { return }
        actions.append(.recheck(at: since + SplitRules.probeSeconds))
    }

    /// A look of the file's timer came at `now`: while the first connection's pace is judged, it is its window's end,
    /// judged on what the window brought, whether bytes came lately or not (a server that paces by bursts, as nginx's
    /// cap does, sends nothing for most of a window); the end of a window its bytes judged already is no one's. False
    /// once the pace is judged: the look is the end game's.
    mutating func windowEnded(now: Double, _ actions: inout [Action]) -> Bool {
        guard let sharing, case .judging(let since, let received, let saidAlone) = sharing.pace else { return false }
        if now >= since + SplitRules.probeSeconds {
            judgePace(sharing, since: since, received: received, saidAlone: saidAlone, now: now, &actions)
        }
        return true
    }

    /// While the first connection runs alone: `received` bytes kept since `since`, at `now`, judged
    /// (``SplitRules/pace(received:elapsed:remaining:)``): the rest is shared, or a new window begins.
    private mutating func judgePace(
        _ sharing: Sharing, since: Double, received: Int64, saidAlone: Bool, now: Double, _ actions: inout [Action]
    ) {
        let remaining = sharing.plan.length - sharing.plan.receivedBytes
        switch SplitRules.pace(received: received, elapsed: now - since, remaining: remaining) {
        case .judging: sharing.pace = .judging(since: since, received: received, saidAlone: saidAlone)
        case .share:
            // The first connection keeps less by what this window brought it (see ``SegmentPlan/divide(into:keepingLess:)``).
            sharing.plan.divide(into: connectionLimit, keepingLess: received)
            share(&actions)
        case .alone(let seconds):
            sharing.pace = .judging(since: now, received: 0, saidAlone: true)
            scheduleWindowEnd(&actions)
            guard !saidAlone else { return }
            let message = String(format: "one connection for now: the rest would take %.2f s on it", seconds)
            if logs { actions.append(.note(.splitDecided, .info, message)) }
        }
    }

    /// `count` bytes of connection `id`'s stream, the first at `position` of the file and at `from` of the piece in
    /// hand: what the plan keeps is written (unless the shell `written` them already, through the connection's
    /// cursor); bytes below the segment's next are on disk already, and dropped; bytes past the segment's end go to the
    /// next segment its server sends, or stop the connection. Returns the bytes kept.
    @discardableResult
    private mutating func take(
        from: Int, count: Int, at position: Int64, connection id: Int, written: Bool, now: Double,
        _ actions: inout [Action]
    ) -> Int64 {
        guard let sharing, let connection = connections[id], let segment = connection.segment else { return 0 }
        connections[id]?.lastByteAt = now
        connections[id]?.position = position + Int64(count)
        guard let current = sharing.plan.segments.first(where: { $0.id == segment }) else { return 0 }
        var (from, count) = (from, count)
        if position < current.next {
            // Bytes on disk already, sent before the segment's own: dropped.
            let dropped = Int(min(current.next - position, Int64(count)))
            (from, count) = (from + dropped, count - dropped)
            guard count > 0 else { return 0 }
        }
        let offset = current.next
        let piece = sharing.plan.received(Int64(count), segment: segment)
        if piece.kept > 0 {
            if !written {
                let threshold = SplitRules.recordThreshold(secondsSinceRecord: now - sharing.recordedAt)
                actions.append(
                    .work(
                        .write(
                            connection: id, from: from, count: Int(piece.kept), offset: offset, segment: segment,
                            recordAfter: threshold)))
            }
            locations.served(piece.kept, by: connection.location)
            sharing.servedAt[connection.location] = now
            connections[id]?.received += piece.kept
        }
        guard piece.isSegmentDone else { return piece.kept }
        actions.append(.work(.endSegment(segment)))
        connections[id]?.segment = nil
        let end = offset + piece.kept
        guard connection.asked.map({ $0 > end }) ?? true else { return piece.kept }
        // A location that takes ranges is asked again rather than streamed past more than a segment's worth of bytes
        // on disk; one that takes none is streamed to the end.
        let maxGap = locations.locations[connection.location].takesRanges ? minimumSize : nil
        // A segment whose connection has not answered yet may be taken over: this one is sending its bytes already.
        if let (next, _, tookOver) = follow(from: end, upTo: connection.asked, maxGap: maxGap, &actions) {
            // Its server goes on sending the bytes of the next segment: the connection takes it (the bytes of the gap
            // before it are dropped), and the one it was taken from gets other work.
            if tookOver { fillConnections(now: now, &actions) }
            connections[id]?.segment = next.id
            guard count > Int(piece.kept) else { return piece.kept }
            let rest = Int(piece.kept)
            return piece.kept
                + take(
                    from: from + rest, count: count - rest, at: end, connection: id, written: written, now: now,
                    &actions)
        }
        // Its server would send more than is wanted now: stopped, and its slot given new work.
        ended(id, now: now, &actions)
        return piece.kept
    }

    /// The file is shared: logged, and the connections beyond the first asked for.
    mutating func share(_ actions: inout [Action]) {
        guard let sharing else { return }
        sharing.pace = .shared
        let segments = sharing.plan.segments.count + sharing.plan.waiting.count
        let message =
            "split into \(segments) ranges over up to \(connectionLimit) connections and \(requests.count) locations"
        if logs { actions.append(.note(.splitDecided, .info, message)) }
        askForConnections(&actions)
    }

    /// Asks the queue for the connections beyond the first that the file may use and has work for (answered by
    /// ``Event/lent(_:)``; the last answer fills them).
    private mutating func askForConnections(_ actions: inout [Action]) {
        guard let plan = sharing?.plan else { return }
        let shareable = plan.waiting.count + plan.segments.filter { $0.remaining >= 2 * minimumSize }.count
        let wanted = min(connectionLimit - 1 - loans.count, shareable)
        actions.append(.borrow(nextLocations(max(0, wanted))))
    }

    /// The locations' URLs the next `count` connections would go to, in order (``LocationList/picks(_:)``).
    func nextLocations(_ count: Int) -> [URL?] { locations.picks(count).map(requests.url(of:)) }

    /// Ranges wait that no connection may ask for (no live location takes ranges) and no location streams the file: a
    /// live location's stream is wanted, to carry the rest. A stream stopped where a running range's segment begins (a
    /// location that takes no more ranges after one of its range connections broke) would otherwise leave the ranges
    /// after that segment to no one, and the file would fail whole once its last connection ended.
    private mutating func wantStreamIfStranded() {
        guard let sharing, sharing.streamWanted == nil, !sharing.plan.waiting.isEmpty, locations.leastBusy == nil,
            let location = locations.locations.indices.first(where: { location in
                locations.locations[location].isLive
                    && !connections.values.contains { $0.location == location && $0.asked == nil }
            })
        else { return }
        sharing.streamWanted = location
    }

    /// Starts the stream of the whole file `streamWanted` names, once the first missing segment is not behind
    /// another connection's and a connection is free: its server's bytes up to that segment (on disk already) are
    /// skipped, and it takes each waiting segment it reaches.
    private mutating func startStream(_ actions: inout [Action]) {
        guard let sharing, let location = sharing.streamWanted, connections.count < 1 + sharing.loans.count else {
            return
        }
        // One stream of a location at a time, answered or not.
        guard locations.locations[location].isLive,
            !connections.values.contains(where: { $0.location == location && $0.asked == nil })
        else {
            sharing.streamWanted = nil
            return
        }
        guard let (segment, gap, _) = follow(from: 0, upTo: nil, maxGap: nil, &actions) else { return }
        sharing.streamWanted = nil
        locations.started(location)
        // Its bytes below the segment's (the gap, on disk already) are dropped.
        _ = gap
        add(
            Connection(cell: TransferCell.makeCell(), location: location, segment: segment.id, asked: nil),
            .made(requests.request(to: location)), &actions)
    }

    /// The next segment a connection whose server sends the bytes from `offset` on (up to `limit`) can take, across
    /// at most `maxGap` bytes on disk (``SegmentPlan/follow(from:upTo:maxGap:takingOver:)``): a waiting one, or one
    /// whose connection has not answered yet, which is then stopped. Returns the segment, the gap, and whether a
    /// connection was stopped for it.
    private mutating func follow(
        from offset: Int64, upTo limit: Int64?, maxGap: Int64?, _ actions: inout [Action]
    ) -> (segment: SegmentPlan.Segment, gap: Int64, tookOver: Bool)? {
        let idle = Set(connections.values.filter { !$0.isAccepted }.compactMap(\.segment))
        guard
            let (segment, gap, takenOver) = sharing?.plan.follow(
                from: offset, upTo: limit, maxGap: maxGap, takingOver: idle)
        else { return nil }
        guard let takenOver, let other = connections.first(where: { $0.value.segment == takenOver })?.key else {
            return (segment, gap, false)
        }
        connections[other]?.segment = nil
        stop(other, &actions)
        return (segment, gap, true)
    }

    /// Gives every connection the file may run a segment (to the live location with the fewest), gives back lent
    /// connections left without work, and ends the file when it is whole or no location is left.
    mutating func fillConnections(now: Double, _ actions: inout [Action]) {
        guard let sharing else { return }
        wantStreamIfStranded()
        startStream(&actions)
        while connections.count < 1 + sharing.loans.count, locations.leastBusy != nil,
            let segment = sharing.plan.assign()
        {
            guard startRange(segment, &actions) else { break }
        }
        while connections.count < 1 + sharing.loans.count, race(now: now, &actions) {}
        while !sharing.loans.isEmpty, connections.count < 1 + sharing.loans.count {
            actions.append(.giveBack(sharing.loans.removeLast()))
        }
        finishIfDone(now: now, &actions)
        if self.sharing != nil, connections.isEmpty, !sharing.plan.isComplete {
            // Bytes are missing and no connection runs: no location is left to fetch them.
            end(failing: true, &actions)
        }
        scheduleRecheck(now: now, &actions)
    }

    /// Starts a connection for `segment` to `chosen`, else the least busy live location (its range asked under that
    /// location's validator); false when no location is left (the segment waits again).
    mutating func startRange(_ segment: SegmentPlan.Segment, at chosen: Int? = nil, _ actions: inout [Action])
        -> Bool
    {
        if let chosen { locations.started(chosen) }
        guard let location = chosen ?? locations.pick() else {
            sharing?.plan.failed(segment: segment.id)
            return false
        }
        var request = requests.request(to: location)
        let validator = locations.locations[location].validator
        for (name, value) in SplitRules.headers(for: segment.start..<segment.end, open: false, validator: validator) {
            request.setValue(value, forHTTPHeaderField: name)
        }
        add(
            Connection(
                cell: TransferCell.makeCell(), location: location, segment: segment.id, asked: segment.end,
                position: segment.start),
            .made(request), &actions)
        return true
    }

    /// A connection ended (completed, failed, stopped or dropped): a segment it had not finished waits again, a
    /// broken location is counted, and its slot is given new work.
    private mutating func ended(_ id: Int, now: Double, _ actions: inout [Action]) {
        guard let connection = stop(id, &actions) else { return }
        let why = lastError.map { "URLError \($0.code.rawValue)" } ?? "it ended early"
        let isLast = locations.isLast(connection.location)
        let location = locations.locations[connection.location]
        // The server served bytes of the file before, or answers another connection of it now: a connection it cuts is
        // its bad moment, not a server that cannot. A connection it refused is a break of the location (its books hear
        // it), never a restart.
        let hasServed =
            (connection.received > 0 || (sharing?.plan.receivedBytes ?? 0) > 0
                || connections.values.contains { $0.location == connection.location && $0.isAccepted })
            && !(lastError.map(DeadHostRules.isConnectFailure) ?? false)
        if let sharing, connection.segment != nil, connection.asked != nil, location.isLive,
            hasStream(of: connection.location) || isLast, hasServed, location.takesRanges,
            sharing.restarts < Self.restartLimit
        {
            // A range cut short (a dropped connection, a server's bad moment), while the same server's stream goes on
            // or by the last location: the rest of its segment is asked for again, as a range (never more than a bound
            // of times an attempt, with the streams' restarts).
            sharing.restarts += 1
            let message = "a range of \(describe(connection.location)) broke (\(why)): the rest is asked again"
            if logs { actions.append(.note(.splitDecided, .notice, message)) }
        } else if connection.segment != nil, connection.asked != nil, location.isLive,
            hasStream(of: connection.location) || isLast
        {
            // A range cut short past the bound of restarts (or before the file's first byte), while the same server's
            // stream of the file goes on, or by the last location: no more ranges from it; a stream of the whole file
            // carries the file on.
            rangeFailed(id, location: connection.location, problem: "a range's connection broke (\(why))", &actions)
        } else if let sharing, connection.segment != nil, connection.asked == nil, isLast, hasServed,
            sharing.restarts < Self.restartLimit
        {
            // The last location's stream broke once the server had served bytes of the file: what is left is asked for
            // again, as ranges while it takes them, else by a new stream (never more than a bound of times an attempt).
            sharing.restarts += 1
            let message = "\(describe(connection.location))'s connection broke (\(why)): the rest is asked again"
            if logs { actions.append(.note(.splitDecided, .notice, message)) }
            if !locations.locations[connection.location].takesRanges { sharing.streamWanted = connection.location }
        } else if connection.segment != nil, locations.locations[connection.location].isLive {
            let why = lastError.map { " (URLError \($0.code.rawValue))" } ?? ""
            guard broke(connection.location, reason: "its connection broke\(why)", &actions) else {
                // The last location broke: the attempt fails, and its retry continues every segment.
                return end(failing: true, &actions)
            }
        }
        fillConnections(now: now, &actions)
    }

    /// True when a connection to `location` streams the file to its end and its head was accepted (the first
    /// connection, asking for the file as it is).
    private func hasStream(of location: Int) -> Bool {
        connections.values.contains { $0.location == location && $0.isAccepted && $0.asked == nil }
    }

    /// Connection `id` to `location` got a wrong answer to its range (`problem`): with a good stream of the file from
    /// the same location, the location takes no more ranges and that stream goes on; otherwise the location is dropped
    /// (the ``FailoverRules`` verdict) and its connections stop. Either way the connection stops, and its segment
    /// waits again.
    private mutating func rangeFailed(_ id: Int, location: Int, problem: String, _ actions: inout [Action]) {
        let hasStream = hasStream(of: location)
        if !hasStream, locations.isLast(location) {
            // The last location's stream had stopped before this answer came: a new one carries the file on.
            sharing?.streamWanted = location
        }
        switch locations.rangeFailed(location, hasStream: hasStream || sharing?.streamWanted == location) {
        case .noMoreRanges:
            stop(id, &actions)
            let message =
                "no more ranges from \(describe(location)): \(problem); its connection of the whole file goes on"
            if logs { actions.append(.note(.splitDecided, .notice, message)) }
        case .dropped:
            failover(from: location, .wrongRange, reason: problem, &actions)
        }
    }

    /// A connection to `location` broke, or its HEAD failed (`reason`): a break counted (``LocationList/broke(_:)``).
    /// Below the limit the location stays, and the log says it is asked again; at it, the location is left for the
    /// others. False when it is the last live location (the attempt fails).
    @discardableResult
    mutating func broke(_ location: Int, reason: String, _ actions: inout [Action]) -> Bool {
        switch locations.broke(location) {
        case .last: return false
        case .dropped: failover(from: location, .broke, reason: reason, &actions)
        case .kept:
            let (breaks, limit) = (locations.locations[location].breaks, locations.breakLimit)
            let message = "\(describe(location)) asked again later (\(breaks) of \(limit) breaks): \(reason)"
            if logs { actions.append(.note(.splitDecided, .info, message)) }
        }
        return true
    }

    /// Connection `id` ended with `error`: when its connect failed, its server's book hears it (a mirror that fails
    /// connects is held as any server is, for the requests whose own URL it is).
    func unreachable(_ error: URLError, connection id: Int, _ actions: inout [Action]) {
        guard DeadHostRules.isConnectFailure(error), let connection = connections[id],
            let url = requests.url(of: connection.location)
        else { return }
        actions.append(.unreachable(url, startedAt: connection.startedAt))
    }

    /// Leaves `location` for the others (``FailoverRules``): dropped, logged as a failover with its `reason`, and its
    /// connections stop (what they received stays; the rest of their segments waits for the live locations: a dropped
    /// mirror that stalls would otherwise hold its segments until the attempt's idle timeout).
    private mutating func failover(
        from location: Int, _ cause: FailoverRules.Cause, reason: String, _ actions: inout [Action]
    ) {
        locations.drop(location)
        if logs { actions.append(.note(.locationDropped, .notice, FailoverRules.message(describe(location), reason))) }
        if cause != .broke { lastError = URLError(.badServerResponse) }
        for (id, connection) in connections where connection.location == location { stop(id, &actions) }
    }
}
