import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One file fetched over several connections and locations, as a part of its request's running attempt: every decision
/// of a split download, made by events that take the time and return ``Action``s. Pure: no lock, no clock, no I/O. Its
/// parent, the request's ``RequestMachine``, holds it in the ``Attempt`` and turns its actions into its own in the call
/// that produced them; the shell (the attempt's `TransferPipeline`) only starts and stops transports, writes bytes at
/// offsets and hands events in.
///
/// Words: a *location* is a place the file can be fetched from (the request's URL, then its mirrors); a *connection*
/// is one transfer of the attempt; a *segment* is a connection's share of the file (``SegmentPlan/Segment``).
///
/// One concern a file: this one holds the machine's state, its events' entry and what every facet shares (starting,
/// stopping and aiming connections, the file's end); `+FirstHead` decides on the first connection's answer,
/// `+Segments` runs the connections of a shared file, `+EndGame` races the last ranges. The machine's state is internal
/// to the module so that its facets (extensions in Engine/Download) reach it; only the request's machine
/// (`RequestMachine+Download.swift`) touches the machine from outside.
///
/// The first connection sends the request as it is (continuing a split part: from its first missing byte). Its head,
/// read and begun on the file by the shell, decides (``SplitRules/shape(of:minimumSize:)``): a file that may not be
/// split, or a response that is not the file, is carried by that one connection as it comes (``ConnectionWork/carry(id:head:)``:
/// the shell's pipeline goes on as any transfer's, and the machine hears no more of it). Otherwise the part is sized and
/// recorded (``ConnectionWork/beginFile(_:done:head:)``) and ``SegmentPlan`` shares its missing bytes among connections, each
/// a `Range` request with `If-Range` to a location the ``LocationList`` picks. A connection beyond the first is lent by
/// the queue only from a slot no waiting request could start in (``Action/borrow(_:)``, answered in the same call by
/// ``Event/lent(_:)``), and given back when no work is left for it. Moving from a failed location to the next is the
/// ``FailoverRules`` verdict, logged as a failover. The file fails only when no location is left, and then keeps its
/// part and record for the retry policy.
struct SplitMachine {
    /// Bytes counted between two asks for more connections (a slot may have come free meanwhile).
    static let askEvery: Int64 = 4 << 20
    /// Connections of the last location started again in one attempt after one broke having received bytes.
    static let restartLimit = 16

    // What the download is.
    /// What each location is sent: the request's own URL, then the mirrors.
    var requests: LocationRequests
    /// The most connections the file may use (at least 1).
    let connectionLimit: Int
    /// The smallest segment (at least 64 KiB).
    let minimumSize: Int64
    /// True when the queue caps the transfer's rate (nothing is raced at the end of the file then).
    let isCapped: Bool
    let collectsMetrics: Bool
    /// True when the queue logs: the machine's notes (``Action/note(_:_:_:)``) are made only then.
    let logs: Bool
    /// The part an earlier attempt or run left, as its file says (nil: none).
    let part: PartSegments?
    /// The locations that served bytes of an earlier attempt that failed its checksum (none of them is used).
    let untrusted: Set<Int>
    /// When the download began (queue clock): its metrics' total time runs from here.
    let startedAt: Double

    // Where it is.
    var mode = Mode.first
    var locations: LocationList
    var connections: [Int: Connection] = [:]
    var nextConnection = 0
    /// The cursor each connection was last given (`aimConnections`), and how many were given.
    var aimed: [Int: ConnectionCursor] = [:]
    var aims = 0
    var mostConnections = 1
    var lastError: URLError?
    /// True once the part was found not to be this file's any more (its server answered the continuing request
    /// with another validator or length): it is fetched anew.
    var partStartsOver = false
    /// The time of the event being handled (queue clock).
    var now: Double
    /// The location whose first answer began the file (its validator is the file's): the one a file that failed its
    /// checksum after several locations served it is fetched again from.
    var firstSource: Int?

    /// What the file has while it is shared (nil in the other modes).
    var sharing: Sharing? { if case .running(let sharing) = mode { sharing } else { nil } }
    /// The connections lent to the file and not given back yet.
    var loans: [QueueStateMachine.ConnectionLoan] { sharing?.loans ?? [] }

    /// A split download of `request` (its `Range` and `If-Range` dropped) over its own URL and `options.mirrors`
    /// (each made with `policy`, as a redirect there would be), continuing `part`, beginning at `now`. The first
    /// `deadAtHead` locations failed the HEAD preflight: each has that break counted (a failover everyone hears,
    /// wherever it came), and is left at once only when `breakLimit` is 1. A location is dropped after `breakLimit`
    /// breaks in a row (the attempts of the request's retry policy: every stage of a request retries the same faults).
    /// The first connection's start is in `actions`, its handle going to `cell` (the attempt's first transfer).
    ///
    /// `onlySource`: the attempt fetches the file from that location alone (an earlier attempt's file failed its
    /// checksum after the `untrusted` locations served some or all of its bytes).
    init(
        request: OutgoingRequest, options: NetworkRequest.FileOptions, policy: RedirectPolicy, part: PartSegments?,
        deadAtHead: Int = 0, breakLimit: Int = 1, onlySource: Int? = nil, untrusted: [Int] = [], isCapped: Bool,
        collectsMetrics: Bool, logs: Bool = true, cell: TransferCell, now: Double, _ actions: inout [Action]
    ) {
        self.init(
            Start(
                request: request, options: options, policy: policy, part: part, deadAtHead: deadAtHead,
                breakLimit: breakLimit, onlySource: onlySource, untrusted: untrusted, isCapped: isCapped,
                collectsMetrics: collectsMetrics, logs: logs, cell: cell, now: now), &actions)
    }

    /// The split download `start` describes (see ``init(request:options:policy:part:deadAtHead:breakLimit:onlySource:untrusted:isCapped:collectsMetrics:logs:cell:now:_:)``).
    init(_ start: Start, _ actions: inout [Action]) {
        let (options, now) = (start.options, start.now)
        requests = LocationRequests(start.request, mirrors: options.mirrors, policy: start.policy)
        connectionLimit = max(1, options.maximumConnections)
        minimumSize = Self.minimumSize(of: options)
        isCapped = start.isCapped
        collectsMetrics = start.collectsMetrics
        logs = start.logs
        part = start.part
        locations = LocationList(count: requests.count, breakLimit: start.breakLimit)
        startedAt = now
        self.now = now
        untrusted = Set(start.untrusted)
        for location in 0..<min(start.deadAtHead, requests.count - 1) {
            broke(location, reason: "its HEAD failed", &actions)
        }
        if let onlySource = start.onlySource, locations.locations.indices.contains(onlySource) {
            for location in locations.locations.indices where location != onlySource { locations.drop(location) }
            let others = start.untrusted.map(describe).joined(separator: ", ")
            let served = start.untrusted.isEmpty ? "" : " after \(others) served its bytes"
            let message = "fetched again from \(describe(onlySource)) alone: the file failed its checksum\(served)"
            if logs { actions.append(.note(.locationDropped, .notice, message)) }
        }
        startFirst(cell: start.cell, &actions)
    }

    /// The smallest segment `options` allow (at least 64 KiB).
    static func minimumSize(of options: NetworkRequest.FileOptions) -> Int64 {
        max(64 << 10, options.minimumSegmentSize)
    }

    /// What a split download begins with: the request as the queue sends it, the file's options, how a mirror's
    /// request is made, the part an earlier attempt left, the locations the HEAD found dead, the breaks that drop a
    /// location, the location to fetch from alone and the untrusted ones, whether the queue caps the rate, collects
    /// metrics and logs, the first connection's cell and the time it begins.
    struct Start {
        let request: OutgoingRequest
        let options: NetworkRequest.FileOptions
        let policy: RedirectPolicy
        let part: PartSegments?
        let deadAtHead: Int
        let breakLimit: Int
        let onlySource: Int?
        let untrusted: [Int]
        let isCapped: Bool
        let collectsMetrics: Bool
        let logs: Bool
        let cell: TransferCell
        let now: Double
    }

    /// The rule a first connection sent as the request was sent is started with (``SplitRules/CarryRule``): given to a
    /// file of one location (`locations`, its URL and mirrors) in a queue that does not log (`logs`), whose every
    /// answer but one that shares the file is carried; nil otherwise (the machine then hears its head).
    static func carryRule(locations: Int, logs: Bool, minimumSize: Int64) -> SplitRules.CarryRule? {
        locations == 1 && !logs ? SplitRules.CarryRule(minimumSize: minimumSize) : nil
    }

    // MARK: Events

    /// Applies `event` at `now`; what follows from it is appended to `actions`, in order.
    mutating func handle(_ event: Event, now: Double, _ actions: inout [Action]) {
        self.now = now
        // Each facet hears its own events through its door: the first connection's (``firstEvent(_:now:_:)``) until
        // the file is shared, then the connections' and their bytes' (``segmentEvent(_:now:_:)``).
        switch event {
        case .transfer(_, let id), .firstHead(_, let id):
            guard connections[id] != nil else { break }
            switch mode {
            case .first: firstEvent(event, now: now, &actions)
            case .running: segmentEvent(event, now: now, &actions)
            case .ended: break
            }
        case .bytes, .written, .reached, .lent: segmentEvent(event, now: now, &actions)
        case .writeFailed(let failure):
            guard !isEnded else { break }
            end(failing: false, &actions)
            actions.append(.fileFailed(failure))
        case .recheckDue: recheckDue(now: now, &actions)
        case .finished(let metrics): actions.append(.finished(metrics))
        }
        aimConnections(now: now, &actions)
    }

    /// The attempt ends another way (cancelled, paused, timed out, failed by its engine): every connection stops
    /// and the loans still held are returned.
    mutating func release() -> [QueueStateMachine.ConnectionLoan] {
        let loans = self.loans
        mode = .ended
        connections.removeAll()
        return loans
    }

    /// True once the download ended (whole, failed, released, or carried by its first connection).
    var isEnded: Bool { if case .ended = mode { true } else { false } }

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

    // MARK: What every facet shares

    /// Starts `connection` sending `request`: its number is the next; `carrying`: see ``ConnectionWork/start(id:_:_:at:carrying:)``.
    mutating func add(
        _ connection: Connection, _ request: ConnectionRequest, carrying: SplitRules.CarryRule? = nil,
        _ actions: inout [Action]
    ) {
        let id = nextConnection
        nextConnection += 1
        connections[id] = connection
        connections[id]?.startedAt = now
        mostConnections = max(mostConnections, connections.count)
        actions.append(.work(.start(id: id, request, connection.cell, at: connection.position, carrying: carrying)))
    }

    /// Stops connection `id`: its location runs one fewer, and what its segment received stays while the rest waits
    /// again. Returns it, or nil when it had ended.
    @discardableResult
    mutating func stop(_ id: Int, _ actions: inout [Action]) -> Connection? {
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

    /// Connection `id`'s head was accepted at `now`.
    mutating func accept(_ id: Int, now: Double) {
        guard let started = connections[id]?.startedAt else { return }
        connections[id]?.isAccepted = true
        connections[id]?.lastByteAt = now
        connections[id]?.acceptedAt = now
        if let sharing { sharing.startDelay = max(sharing.startDelay, now - started) }
    }

    /// Stops every connection and gives back every lent one; `failing`: the attempt fails.
    mutating func end(failing: Bool, _ actions: inout [Action]) {
        if isEnded { return }
        let loans = self.loans
        mode = .ended
        for connection in connections.values { actions.append(.work(.stop(connection.cell))) }
        connections.removeAll()
        for loan in loans { actions.append(.giveBack(loan)) }
        if failing { actions.append(.fail(lastError ?? URLError(.networkConnectionLost))) }
    }

    /// Ends the file when every byte is kept and written: its shell closes and checks it
    /// (``ConnectionWork/finish(_:length:metrics:)``), and its ``Event/finished(_:)`` follows.
    mutating func finishIfDone(now: Double, _ actions: inout [Action]) {
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

    /// After the file failed its checksum: where to fetch it again from (``LocationList/checksumRefetch(firstSource:)``).
    var checksumRefetch: (source: Int, untrusted: [Int], then: [Int])? {
        locations.checksumRefetch(firstSource: firstSource)
    }

    func describe(_ location: Int) -> String {
        location == 0 ? "the request's URL" : "mirror \(location) (\(Redaction.describe(requests.url(of: location))))"
    }
}
