import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One file fetched over several connections and locations (issue 36), as a part of its request's running attempt
/// (issue 51): every decision of a split download, made by events that take the time and return ``Action``s. Pure:
/// no lock, no clock, no I/O. The coordinator holds it in the ``Attempt`` and applies its actions under the queue's
/// one lock; the shell (the attempt's `TransferPipeline`) only starts and stops transports, writes bytes at offsets
/// and hands events in.
///
/// Words: a *location* is a place the file can be fetched from (the request's URL, then its mirrors); a *connection*
/// is one transfer of the attempt; a *segment* is a connection's share of the file (``SegmentPlan/Segment``).
///
/// The first connection sends the request as it is (continuing a split part: from its first missing byte). Its
/// head decides (``SplitRules/shape(of:minimumSize:)``): a file that may not be split, or a response that is not
/// the file, is carried by that one connection as it comes (the machine says nothing more: the shell's pipeline goes
/// on as any transfer's). Otherwise the part is sized and recorded (``ConnectionWork/beginFile(_:done:head:)``,
/// answered by ``Event/fileBegun(_:)``), ``SegmentPlan`` shares its missing bytes
/// among connections, each a `Range` request with `If-Range` to a location the ``LocationList`` picks. A connection
/// beyond the first is lent by the queue only from a slot no waiting request could start in (``Action/borrow(_:)``,
/// answered by ``Event/lent(_:)``), and given back when no work is left for it. Moving from a failed location to the next
/// is the ``FailoverRules`` verdict, logged as a failover. The file fails only when no location is left, and then keeps
/// its part and record for the retry policy.
struct SplitMachine {
    /// Bytes counted between two asks for more connections (a slot may have come free meanwhile).
    static let askEvery: Int64 = 4 << 20
    /// Connections of the last location started again in one attempt after one broke having received bytes.
    static let restartLimit = 16

    // What the download is.
    /// What each location is sent: the request's own URL, then the mirrors.
    private var requests: LocationRequests
    /// The most connections the file may use (at least 1).
    let connectionLimit: Int
    /// The smallest segment (at least 64 KiB).
    let minimumSize: Int64
    /// True when the queue caps the transfer's rate (nothing is raced at the end of the file then).
    let isCapped: Bool
    let collectsMetrics: Bool
    /// The part an earlier attempt or run left, as its file says (nil: none).
    let part: PartSegments?

    // Where it is.
    private(set) var mode = Mode.first
    private(set) var locations: LocationList
    private(set) var connections: [Int: Connection] = [:]
    private var nextConnection = 0
    /// The cursor each connection was last given (``aimConnections(now:_:)``), and how many were given.
    private var aimed: [Int: ConnectionCursor] = [:]
    private var aims = 0
    private var mostConnections = 1
    private var lastError: URLError?
    /// True once the part was found not to be this file's any more (its server answered the continuing request
    /// with another validator or length): it is fetched anew.
    private var partStartsOver = false
    /// The time of the event being handled (queue clock).
    private var now: Double
    /// The location whose first answer began the file (its validator is the file's): the one a file that failed its
    /// checksum after several locations served it is fetched again from.
    private(set) var firstSource: Int?
    /// The locations that served bytes of an earlier attempt that failed its checksum (none of them is used).
    let untrusted: Set<Int>
    /// When the download began (queue clock): its metrics' total time runs from here.
    private let startedAt: Double

    /// What the file has while it is shared (nil in the other modes).
    private var sharing: Sharing? { if case .running(let sharing) = mode { sharing } else { nil } }
    /// The connections lent to the file and not given back yet.
    var loans: [QueueStateMachine.ConnectionLoan] { sharing?.loans ?? [] }

    /// A split download of `request` (its `Range` and `If-Range` dropped) over its own URL and `options.mirrors`
    /// (each made with `policy`, as a redirect there would be), continuing `part`, beginning at `now`. The first
    /// `deadAtHead` locations failed the HEAD preflight: each has that break counted (issue 51: a failover everyone
    /// hears, wherever it came), and is left at once only when `breakLimit` is 1. A location is dropped after
    /// `breakLimit` breaks in a row (the attempts of the request's retry policy: every stage of a request retries the
    /// same faults, issue 71). The first connection's start is in `actions`, its handle going to `cell` (the attempt's
    /// first transfer).
    ///
    /// `onlySource`: the attempt fetches the file from that location alone (an earlier attempt's file failed its
    /// checksum after the `untrusted` locations served some or all of its bytes).
    init(
        request: OutgoingRequest, options: NetworkRequest.FileOptions, policy: RedirectPolicy, part: PartSegments?,
        deadAtHead: Int = 0, breakLimit: Int = 1, onlySource: Int? = nil, untrusted: [Int] = [], isCapped: Bool,
        collectsMetrics: Bool, cell: TransferCell, now: Double, _ actions: inout [Action]
    ) {
        requests = LocationRequests(request, mirrors: options.mirrors, policy: policy)
        connectionLimit = max(1, options.maximumConnections)
        minimumSize = max(64 << 10, options.minimumSegmentSize)
        self.isCapped = isCapped
        self.collectsMetrics = collectsMetrics
        self.part = part
        locations = LocationList(count: requests.count, breakLimit: breakLimit)
        startedAt = now
        self.now = now
        self.untrusted = Set(untrusted)
        for location in 0..<min(deadAtHead, requests.count - 1) {
            broke(location, reason: "its HEAD failed", &actions)
        }
        if let onlySource, locations.locations.indices.contains(onlySource) {
            for location in locations.locations.indices where location != onlySource { locations.drop(location) }
            let others = untrusted.map(describe).joined(separator: ", ")
            let served = untrusted.isEmpty ? "" : " after \(others) served its bytes"
            let message = "fetched again from \(describe(onlySource)) alone: the file failed its checksum\(served)"
            actions.append(.note(.locationDropped, .notice, message))
        }
        startFirst(cell: cell, &actions)
    }

    // MARK: Events

    /// Applies `event` at `now`; what follows from it is appended to `actions`, in order.
    mutating func handle(_ event: Event, now: Double, _ actions: inout [Action]) {
        self.now = now
        switch event {
        case .transfer(let transferEvent, let id): self.transferEvent(transferEvent, connection: id, now: now, &actions)
        case .bytes(let count, let id, let position): bytes(count, connection: id, at: position, now: now, &actions)
        case .written(let kept, let recorded, let failure):
            written(kept, recorded: recorded, failure: failure, now: now, &actions)
        case .reached(let id, let through, let segment):
            reached(id, through: through, segment: segment, now: now, &actions)
        case .writeFailed(let failure):
            guard sharing != nil else { break }
            end(failing: false, &actions)
            actions.append(.fileFailed(failure))
        case .fileBegun(let reading): fileBegun(reading, now: now, &actions)
        case .lent(let loans): lent(loans, now: now, &actions)
        case .recheckDue: recheckDue(now: now, &actions)
        case .finished(let metrics):
            // The file's end is its transfer's, as a transfer of one connection reports it: its metrics, then success.
            if let metrics { actions.append(.notice(.event(.metrics(metrics)))) }
            actions.append(.notice(.event(.completed(nil))))
        }
        aimConnections(now: now, &actions)
    }

    /// An event of connection `id` other than its body (``Event/bytes(_:connection:)``).
    private mutating func transferEvent(
        _ event: TransferEvent, connection id: Int, now: Double, _ actions: inout [Action]
    ) {
        guard let connection = connections[id] else { return }
        switch mode {
        case .first: first(event, connection: id, now: now, &actions)
        case .running: segmentEvent(event, connection, id: id, now: now, &actions)
        case .beginning, .ended: break
        }
    }

    /// The shell began the file (``ConnectionWork/beginFile(_:done:head:)``): the head is heard, the first connection takes
    /// the first segment and the others are asked for; or the part could not be begun, and the attempt fails.
    private mutating func fileBegun(
        _ begun: Result<HeadReading, NetworkQueueError>, now: Double, _ actions: inout [Action]
    ) {
        guard case .beginning(let beginning) = mode else { return }
        let (shape, done, id) = (beginning.shape, beginning.done, beginning.connection)
        let reading: HeadReading
        switch begun {
        case .success(let read): reading = read
        case .failure(let failure):
            end(failing: false, &actions)
            actions.append(.fileFailed(failure))
            return
        }
        // A new file runs on its first connection alone until its pace says whether sharing is worth it; a
        // continued one shares its holes at once.
        let probing = done.isEmpty && connectionLimit > 1
        var plan = SegmentPlan(
            length: shape.length, connections: probing ? 1 : connectionLimit, minimumSize: minimumSize, done: done)
        guard let segment = plan.assign() else { return end(failing: true, &actions) }
        let pace = probing ? Pace.judging(since: now, received: 0, saidAlone: false) : .shared
        mode = .running(Sharing(shape: shape, head: beginning.head, plan: plan, pace: pace))
        connections[id]?.segment = segment.id
        accept(id, now: now)
        if let location = connections[id]?.location {
            locations.learn(shape.validator, for: location)
            firstSource = location
        }
        // The engine hears the head before any count, and before any other connection starts.
        actions.append(.notice(.head(.head(beginning.head), reading)))
        // A file of one connection (N = 1) shares nothing: no loan is asked for, and no end game is looked at.
        if !probing, connectionLimit > 1 { share(&actions) }
    }

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

    /// The writes of one ``Event/bytes(_:connection:)`` event are done: `kept` bytes in all (the record saved when
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
        actions.append(.notice(.body(Int(kept))))
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

    /// The look at the end game came (``Action/recheck(at:)``): a range worth racing with no connection free asks
    /// the queue for one more (``Action/borrow(_:)``; the loan races it); the next look is scheduled while the end
    /// game lasts.
    private mutating func recheckDue(now: Double, _ actions: inout [Action]) {
        guard let sharing else { return }
        sharing.recheckAt = nil
        if connections.count < 1 + sharing.loans.count { return fillConnections(now: now, &actions) }
        if endGame?.slowest(now: now) != nil, sharing.loans.count < connectionLimit - 1 {
            actions.append(.borrow(nextLocations(1)))
        }
        scheduleRecheck(now: now, &actions)
    }

    /// The attempt ends another way (cancelled, paused, timed out, failed by its engine): every connection stops
    /// and the loans still held are returned.
    mutating func release() -> [QueueStateMachine.ConnectionLoan] {
        let loans = self.loans
        mode = .ended
        connections.removeAll()
        return loans
    }

    // MARK: Cursors

    /// Gives each connection whose segment changed since its last cursor a new one (``ConnectionWork/aim(id:_:sequence:)``):
    /// the shell writes its bytes within it without asking, and counts them by a batched notice
    /// (``Event/reached(connection:through:segment:)``). A connection without an accepted head, raced in the end
    /// game, or without a segment has none: its bytes are asked about one piece at a time.
    private mutating func aimConnections(now: Double, _ actions: inout [Action]) {
        guard let sharing else { return }
        for id in connections.keys.sorted() {
            guard let connection = connections[id] else { continue }
            var cursor: ConnectionCursor?
            if connection.isAccepted, connection.racingFrom == nil, let segment = connection.segment,
                let current = sharing.plan.segments.first(where: { $0.id == segment })
            {
                var end = current.end
                if case .judging(let since, let received, let saidAlone) = sharing.pace {
                    // The first window in small steps (a throttled server's first burst comes at the loopback's pace);
                    // the later ones, once one connection was found enough for now, at their own pace.
                    let step =
                        saidAlone
                        ? SplitRules.judgingStep(received: received, elapsed: now - since) : SplitRules.judgingStep
                    end = min(end, current.next + step)
                }
                cursor = ConnectionCursor(segment: segment, from: current.next, end: end)
            }
            // Given again when its segment or its end changed.
            let before = aimed[id]
            if before?.segment == cursor?.segment, before?.end == cursor?.end { continue }
            aimed[id] = cursor
            aims += 1
            actions.append(.work(.aim(id: id, cursor, sequence: aims)))
        }
    }

    // MARK: The first head

    /// An event of the first connection before its head decided.
    private mutating func first(_ event: TransferEvent, connection id: Int, now: Double, _ actions: inout [Action]) {
        guard case .head(let head) = event, !ResponseRules.isInterim(head) else {
            if case .completed(let error?) = event, locations.locations.count > 1 {
                // No byte reached the file: the next location is asked instead (its connect counted by its server's
                // book: the request's own failure is heard only when no location is left).
                unreachable(error, connection: id, &actions)
                let reason = "its connection failed (URLError \(error.code.rawValue))"
                return firstFailed(id, .broke, reason: reason, error: error, &actions)
            }
            if case .completed(nil) = event {
                // It ended without a head: no response.
                return actions.append(.fail(URLError(.badServerResponse)))
            }
            return actions.append(.notice(.event(event)))
        }
        switch SplitRules.firstAnswer(
            to: head, resumed: resumed, revalidates: !requests.conditionalFields.isEmpty, minimumSize: minimumSize)
        {
        case .begin(let shape, let done, let head, let isWhole):
            if isWhole {
                // A 200 is the whole file, whatever range was asked for: its connection streams to the end.
                connections[id]?.asked = nil
                connections[id]?.position = 0
            }
            mode = .beginning(Beginning(shape: shape, done: done, connection: id, head: head))
            actions.append(.work(.beginFile(shape, done: done, head: head)))
        case .startOver(let reason): startOver(id, reason: reason, &actions)
        // The file there is unchanged: the answer is the attempt's, and its request keeps the file.
        case .unchanged: mode = .ended
        case .status(let code):
            // Its server's Retry-After or spent rate limit holds that server for the batch, whichever location it is
            // (the last location's head is carried on, and heard as the request's).
            if let location = connections[id]?.location, !locations.isLast(location) { actions.append(.heed(head)) }
            firstFailed(id, .status(code), reason: "it answered \(code)", error: nil, &actions)
        case .oneConnection(let reason):
            mode = .ended
            actions.append(.note(.splitDecided, .info, "one connection: \(reason)"))
        }
    }

    /// The first connection's location failed before any byte was written (`cause`): the ``FailoverRules`` verdict
    /// asks the next live location, or (none left) the attempt fails as that connection did (`error`; a status is
    /// carried on by its connection as the response).
    private mutating func firstFailed(
        _ id: Int, _ cause: FailoverRules.Cause, reason: String, error: URLError?, _ actions: inout [Action]
    ) {
        guard let connection = connections[id] else { return }
        let location = connection.location
        let verdict = FailoverRules.verdict(after: cause, of: location, among: locations, hasStream: false)
        if cause == .broke, verdict == .nextLocation {
            // A broken connection is a break of its location, which stays live below the limit (asked again later).
            stop(id, &actions)
            broke(location, reason: reason, &actions)
            return startFirst(cell: TransferCell.makeCell(), avoiding: location, &actions)
        }
        locations.drop(location)
        guard case .nextLocation = verdict, locations.hasLive else {
            mode = .ended
            if let error { actions.append(.fail(error)) }
            return
        }
        stop(id, &actions)
        actions.append(.note(.locationDropped, .notice, FailoverRules.message(describe(location), reason)))
        startFirst(cell: TransferCell.makeCell(), &actions)
    }

    /// The part cannot be continued from the first answer (`reason`): the first connection stops, and the file is
    /// asked for anew, as it is; its answer begins the part again (the record is replaced).
    private mutating func startOver(_ id: Int, reason: String, _ actions: inout [Action]) {
        guard stop(id, &actions) != nil else { return }
        partStartsOver = true
        actions.append(.note(.splitDecided, .notice, "the part starts over: \(reason)"))
        startFirst(cell: TransferCell.makeCell(), &actions)
    }

    /// The part this download continues: the file's, unless it was found to be another file's.
    private var resumed: PartSegments? { partStartsOver ? nil : part }

    /// Sends the first connection's request to the next live location (from the part's first missing byte when a
    /// split part is continued).
    private mutating func startFirst(cell: TransferCell, avoiding: Int? = nil, _ actions: inout [Action]) {
        guard let location = locations.pick(forRange: false, avoiding: avoiding) else {
            return end(failing: true, &actions)
        }
        guard location > 0 || resumed != nil else {
            // The file as it was sent to its own URL: the connection sends the attempt's request itself.
            return add(Connection(cell: cell, location: location), .asSent, &actions)
        }
        let (request, asked, position) = SplitRules.firstRequest(
            requests.request(to: location), resumed: resumed, conditionalFields: requests.conditionalFields,
            connections: connectionLimit, minimumSize: minimumSize)
        add(Connection(cell: cell, location: location, asked: asked, position: position), .made(request), &actions)
    }

    // MARK: Connections of a split file

    /// An event of a connection of a split file.
    private mutating func segmentEvent(
        _ event: TransferEvent, _ connection: Connection, id: Int, now: Double, _ actions: inout [Action]
    ) {
        switch event {
        case .head(let head) where !ResponseRules.isInterim(head):
            // Every head of every connection is heard by the queue's host books (a mirror's 429 holds its server).
            actions.append(.heed(head))
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
        // A body comes only as ``Event/bytes(_:connection:)``, with the piece the shell writes: a count here would
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

    /// While the first connection runs alone: `received` bytes kept since `since`, at `now`, judged
    /// (``SplitRules/pace(received:elapsed:remaining:)``): the rest is shared, or a new window begins.
    private mutating func judgePace(
        _ sharing: Sharing, since: Double, received: Int64, saidAlone: Bool, now: Double, _ actions: inout [Action]
    ) {
        let remaining = sharing.plan.length - sharing.plan.receivedBytes
        switch SplitRules.pace(received: received, elapsed: now - since, remaining: remaining) {
        case .judging: sharing.pace = .judging(since: since, received: received, saidAlone: saidAlone)
        case .share:
            sharing.plan.divide(into: connectionLimit)
            share(&actions)
        case .alone(let seconds):
            sharing.pace = .judging(since: now, received: 0, saidAlone: true)
            guard !saidAlone else { return }
            let message = String(format: "one connection for now: the rest would take %.2f s on it", seconds)
            actions.append(.note(.splitDecided, .info, message))
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

    private mutating func add(_ connection: Connection, _ request: ConnectionRequest, _ actions: inout [Action]) {
        let id = nextConnection
        nextConnection += 1
        connections[id] = connection
        connections[id]?.startedAt = now
        mostConnections = max(mostConnections, connections.count)
        actions.append(.work(.start(id: id, request, connection.cell, at: connection.position)))
    }

    /// The file is shared: logged, and the connections beyond the first asked for.
    private mutating func share(_ actions: inout [Action]) {
        guard let sharing else { return }
        sharing.pace = .shared
        let segments = sharing.plan.segments.count + sharing.plan.waiting.count
        let message =
            "split into \(segments) ranges over up to \(connectionLimit) connections and \(requests.count) locations"
        actions.append(.note(.splitDecided, .info, message))
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

    /// After the file failed its checksum: where to fetch it again from (``LocationList/checksumRefetch(firstSource:)``).
    var checksumRefetch: (source: Int, untrusted: [Int], then: [Int])? {
        locations.checksumRefetch(firstSource: firstSource)
    }

    /// The locations' URLs the next `count` connections would go to, in order (``LocationList/picks(_:)``).
    private func nextLocations(_ count: Int) -> [URL?] { locations.picks(count).map(requests.url(of:)) }

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
    private mutating func fillConnections(now: Double, _ actions: inout [Action]) {
        guard let sharing else { return }
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
    private mutating func startRange(_ segment: SegmentPlan.Segment, at chosen: Int? = nil, _ actions: inout [Action])
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

    // MARK: The end game

    /// The end of the file (no range waits) while connections run: the end game is looked at again once a new
    /// connection could be judged, so that a range whose connection stalls is raced even when no connection comes
    /// free (a ``QueueTimer`` entry of the request). Not under the queue's rate cap, which may be what slows them.
    private mutating func scheduleRecheck(now: Double, _ actions: inout [Action]) {
        guard let sharing, connectionLimit > 1, case .shared = sharing.pace, !isCapped, sharing.recheckAt == nil,
            sharing.plan.waiting.isEmpty, !connections.isEmpty
        else { return }
        let at = now + sharing.settleTime
        sharing.recheckAt = at
        actions.append(.recheck(at: at))
    }

    /// The end game's view of the file (``EndGame``): nil when it is not split, under the queue's rate cap, or while a
    /// range waits.
    private var endGame: EndGame? {
        guard let sharing, !isCapped, sharing.plan.waiting.isEmpty else { return nil }
        let runners = connections.keys.sorted().compactMap { id -> EndGame.Runner? in
            guard let connection = connections[id] else { return nil }
            let range = connection.segment.flatMap { segment in sharing.plan.segments.first { $0.id == segment } }
            return EndGame.Runner(
                id: id, location: connection.location, startedAt: connection.startedAt,
                acceptedAt: connection.acceptedAt,
                received: connection.received, range: range.map { ($0.next, $0.remaining) })
        }
        return EndGame(
            runners: runners, settleTime: sharing.settleTime, startDelay: sharing.startDelay,
            keptPace: sharing.keptPace, racedFrom: sharing.racedFrom, servedAt: sharing.servedAt)
    }

    /// The end game (issue 62): no range waits and a connection is free, so it races the connection whose range
    /// would end last, when that is worth it. The new connection asks for what that range has not received yet; the
    /// raced one goes on, and the first of the two to bring those bytes keeps them while the other stops (see
    /// ``bytes(_:connection:now:_:)`` and the accepted head in ``segmentEvent(_:_:id:now:_:)``). Nothing is dropped:
    /// a healthy but slower location only loses a race. True when a connection was started.
    private mutating func race(now: Double, _ actions: inout [Action]) -> Bool {
        guard let sharing, locations.leastBusy != nil, let game = endGame, let victim = game.slowest(now: now),
            let connection = connections[victim], let segment = connection.segment,
            let from = sharing.plan.segments.first(where: { $0.id == segment })?.next
        else { return false }
        actions.append(.work(.endSegment(segment)))
        sharing.plan.failed(segment: segment)
        connections[victim]?.segment = nil
        connections[victim]?.racingFrom = from
        sharing.racedFrom.insert(from)
        guard let taken = sharing.plan.assign() else { return false }
        let end = taken.end
        guard startRange(taken, at: game.raceLocation(now: now, locations), &actions) else {
            return false
        }
        let pace = connection.received == 0 ? "it brought nothing" : "it is behind the others"
        let message =
            "bytes \(from)-\(end - 1) of \(describe(connection.location)) raced by another connection: \(pace)"
        actions.append(.note(.splitDecided, .info, message))
        return true
    }

    /// Connection `id`'s head was accepted at `now`.
    private mutating func accept(_ id: Int, now: Double) {
        guard let started = connections[id]?.startedAt else { return }
        connections[id]?.isAccepted = true
        connections[id]?.lastByteAt = now
        connections[id]?.acceptedAt = now
        if let sharing { sharing.startDelay = max(sharing.startDelay, now - started) }
    }

    /// A connection ended (completed, failed, stopped or dropped): a segment it had not finished waits again, a
    /// broken location is counted, and its slot is given new work.
    private mutating func ended(_ id: Int, now: Double, _ actions: inout [Action]) {
        guard let connection = stop(id, &actions) else { return }
        let why = lastError.map { "URLError \($0.code.rawValue)" } ?? "it ended early"
        let isLast = locations.isLast(connection.location)
        if connection.segment != nil, connection.asked != nil, locations.locations[connection.location].isLive,
            hasStream(of: connection.location) || isLast
        {
            // A range cut short while the same server's stream of the file goes on, or by the last location: no more
            // ranges from it; a stream of the whole file carries the file on.
            rangeFailed(id, location: connection.location, problem: "a range's connection broke (\(why))", &actions)
        } else if let sharing, connection.segment != nil, connection.asked == nil, isLast, connection.received > 0,
            sharing.restarts < Self.restartLimit
        {
            // The last location's stream broke after bytes came: what is left is asked for again, as ranges while it
            // takes them, else by a new stream (never more than a bound of times an attempt).
            sharing.restarts += 1
            let message = "\(describe(connection.location))'s connection broke (\(why)): the rest is asked again"
            actions.append(.note(.splitDecided, .notice, message))
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
            actions.append(.note(.splitDecided, .notice, message))
        case .dropped:
            failover(from: location, .wrongRange, reason: problem, &actions)
        }
    }

    /// A connection to `location` broke, or its HEAD failed (`reason`): a break counted (``LocationList/broke(_:)``).
    /// Below the limit the location stays, and the log says it is asked again; at it, the location is left for the
    /// others. False when it is the last live location (the attempt fails).
    @discardableResult
    private mutating func broke(_ location: Int, reason: String, _ actions: inout [Action]) -> Bool {
        switch locations.broke(location) {
        case .last: return false
        case .dropped: failover(from: location, .broke, reason: reason, &actions)
        case .kept:
            let (breaks, limit) = (locations.locations[location].breaks, locations.breakLimit)
            let message = "\(describe(location)) asked again later (\(breaks) of \(limit) breaks): \(reason)"
            actions.append(.note(.splitDecided, .info, message))
        }
        return true
    }

    /// Connection `id` ended with `error`: when its connect failed, its server's book hears it (a mirror that fails
    /// connects is held as any server is, for the requests whose own URL it is).
    private func unreachable(_ error: URLError, connection id: Int, _ actions: inout [Action]) {
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
        actions.append(.note(.locationDropped, .notice, FailoverRules.message(describe(location), reason)))
        if cause != .broke { lastError = URLError(.badServerResponse) }
        for (id, connection) in connections where connection.location == location { stop(id, &actions) }
    }

    /// Stops connection `id`: its location runs one fewer, and what its segment received stays while the rest waits
    /// again. Returns it, or nil when it had ended.
    @discardableResult
    private mutating func stop(_ id: Int, _ actions: inout [Action]) -> Connection? {
        guard let connection = connections.removeValue(forKey: id) else { return nil }
        if aimed.removeValue(forKey: id) != nil {
            // Its cursor goes first: nothing more of it is written where the segment's next connection writes.
            aims += 1
            actions.append(.work(.aim(id: id, nil, sequence: aims)))
        }
        locations.ended(connection.location)
        if let sharing, let acceptedAt = connection.acceptedAt, now - acceptedAt >= sharing.settleTime,
            connection.received > 0
        {
            let rate = Double(connection.received) / (now - acceptedAt)
            if rate > sharing.keptPace?.rate ?? 0 { sharing.keptPace = (rate, connection.location) }
        }
        actions.append(.work(.stop(connection.cell)))
        if let segment = connection.segment {
            actions.append(.work(.endSegment(segment)))
            sharing?.plan.failed(segment: segment)
        }
        return connection
    }

    /// Ends the file when every byte is kept and written.
    private mutating func finishIfDone(now: Double, _ actions: inout [Action]) {
        guard let sharing, sharing.plan.isComplete, sharing.writesInFlight == 0 else { return }
        var figures: TransferMetrics?
        if collectsMetrics {
            // The first connection's figures (its connect, its first byte), over the whole file's time: a connection
            // stopped before its figures came (a retry's, say) would leave it at 0.
            var measured = sharing.metrics ?? TransferMetrics(totalDuration: 0)
            let elapsed = now - startedAt
            if elapsed.isFinite { measured.totalDuration = max(measured.totalDuration, elapsed) }
            measured.segments = locations.segmentMetrics(
                urls: locations.locations.indices.map(requests.url(of:)), untrusted: untrusted,
                connections: mostConnections)
            figures = measured
        }
        end(failing: false, &actions)
        actions.append(.work(.finish(sharing.head, length: sharing.plan.length, metrics: figures)))
    }

    /// Stops every connection and gives back every lent one; `failing`: the attempt fails.
    private mutating func end(failing: Bool, _ actions: inout [Action]) {
        if case .ended = mode { return }
        let loans = self.loans
        mode = .ended
        for connection in connections.values { actions.append(.work(.stop(connection.cell))) }
        connections.removeAll()
        for loan in loans { actions.append(.giveBack(loan)) }
        if failing { actions.append(.fail(lastError ?? URLError(.networkConnectionLost))) }
    }

    private func describe(_ location: Int) -> String {
        location == 0 ? "the request's URL" : "mirror \(location) (\(Redaction.describe(requests.url(of: location))))"
    }
}
