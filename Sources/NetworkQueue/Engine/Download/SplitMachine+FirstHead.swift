import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The first connection of a split download: what it asks for, and what its answer decides. The shell reads the first
/// final head as a transfer's head is read (one reading: ``Event/firstHead(_:connection:)``); the answer (``SplitRules/firstAnswer(to:resumed:revalidates:minimumSize:)``) begins the file as shared, carries it on that
/// one connection, starts the part over, or asks the next location.
extension SplitMachine {
    /// The facet's door: an event of the first connection while the file is not shared yet (a transfer's event, or
    /// its final head as the shell read it). Other events are not this facet's, and change nothing.
    mutating func firstEvent(_ event: Event, now: Double, _ actions: inout [Action]) {
        switch event {
        case .transfer(let transferEvent, let id): first(transferEvent, connection: id, &actions)
        case .firstHead(let reading, let id): firstHead(reading, connection: id, now: now, &actions)
        case .bytes, .written, .reached, .writeFailed, .lent, .recheckDue, .finished: break
        }
    }

    /// An event of the first connection before its final head: the attempt's own, passed on (its failure too, when no
    /// other location is left to ask).
    private mutating func first(_ event: TransferEvent, connection id: Int, _ actions: inout [Action]) {
        if case .completed(let error?) = event, locations.locations.count > 1 {
            // No byte reached the file: the next location is asked instead (its connect counted by its server's
            // book: the request's own failure is heard only when no location is left).
            unreachable(error, connection: id, &actions)
            let reason = "its connection failed (URLError \(error.code.rawValue))"
            return firstFailed(id, .broke, reason: reason, error: error, &actions)
        }
        if case .completed(nil) = event {
            // It ended without a head: no response.
            mode = .ended
            return actions.append(.fail(URLError(.badServerResponse)))
        }
        if case .completed = event { mode = .ended }
        actions.append(.passOn(event))
    }

    /// The first connection's final head, as the shell read it (`reading`) and began it on the file.
    private mutating func firstHead(_ reading: HeadReading, connection id: Int, now: Double, _ actions: inout [Action])
    {
        let head = reading.head
        actions.append(.answered(head))
        switch SplitRules.firstAnswer(
            to: head, resumed: resumed, revalidates: !requests.conditionalFields.isEmpty, minimumSize: minimumSize)
        {
        case .begin(let shape, let done, let heard, let isWhole):
            if isWhole {
                // A 200 is the whole file, whatever range was asked for: its connection streams to the end.
                connections[id]?.asked = nil
                connections[id]?.position = 0
            }
            // A continued part's head is heard in its continuing form (from the bytes on disk), read as the shell reads
            // a head that continues its part.
            let read =
                done.isEmpty
                ? reading : HeadReading(heard, continuedFrom: resumed?.onDisk ?? 0, acceptableStatusCodes: nil)
            begin(shape, done: done, connection: id, reading: read, now: now, &actions)
        case .startOver(let reason): startOver(id, reason: reason, &actions)
        // The file there is unchanged (a 304 to a revalidated file): the answer is the attempt's.
        case .unchanged: carry(id, reading, &actions)
        case .status(let code):
            firstFailed(id, .status(code), reason: "it answered \(code)", error: nil, answer: reading, &actions)
        case .oneConnection(let reason):
            if logs { actions.append(.note(.splitDecided, .info, "one connection: \(reason)")) }
            carry(id, reading, &actions)
        }
    }

    /// The file is shared (its `shape`, `done` on disk already): the first connection takes the first segment, the
    /// request hears the file's head (before any count, and before any other connection starts), the shell sizes and
    /// records the part, and the others are asked for; a file that may use one connection (N = 1) shares nothing.
    private mutating func begin(
        _ shape: SplitRules.Shape, done: [Range<Int64>], connection id: Int, reading: HeadReading, now: Double,
        _ actions: inout [Action]
    ) {
        // A new file runs on its first connection alone until its pace says whether sharing is worth it; a
        // continued one shares its holes at once.
        let probing = done.isEmpty && connectionLimit > 1
        var plan = SegmentPlan(
            length: shape.length, connections: probing ? 1 : connectionLimit, minimumSize: minimumSize, done: done)
        guard let segment = plan.assign() else { return end(failing: true, &actions) }
        let pace = Pace.judging(since: now, received: 0, saidAlone: false)
        mode = .running(Sharing(shape: shape, head: reading.head, plan: plan, pace: probing ? pace : .shared))
        connections[id]?.segment = segment.id
        accept(id, now: now)
        if let location = connections[id]?.location {
            locations.learn(shape.validator, for: location)
            firstSource = location
        }
        actions.append(.work(.beginFile(shape, done: done, head: reading.head)))
        actions.append(.head(reading))
        if !probing, connectionLimit > 1 { share(&actions) }
        if probing { scheduleWindowEnd(&actions) }
    }

    /// The first connection carries the file as it comes, its head (`reading`) the attempt's: the machine hears no more
    /// of it.
    private mutating func carry(_ id: Int, _ reading: HeadReading, _ actions: inout [Action]) {
        mode = .ended
        // The location it comes from alone: where a checksum failure looks for another (a lying first mirror).
        if let location = connections[id]?.location { firstSource = location }
        actions.append(.work(.carry(id: id, head: reading.head)))
        actions.append(.head(reading))
    }

    /// The first connection's location failed before any byte was written (`cause`): the ``FailoverRules`` verdict
    /// asks the next live location, or (none left) the attempt fails as that connection did (`error`), or its `answer`
    /// (a status) is carried on by its connection as the attempt's response.
    private mutating func firstFailed(
        _ id: Int, _ cause: FailoverRules.Cause, reason: String, error: URLError?, answer: HeadReading? = nil,
        _ actions: inout [Action]
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
            if let answer { return carry(id, answer, &actions) }
            mode = .ended
            if let error { actions.append(.fail(error)) }
            return
        }
        stop(id, &actions)
        if logs { actions.append(.note(.locationDropped, .notice, FailoverRules.message(describe(location), reason))) }
        startFirst(cell: TransferCell.makeCell(), &actions)
    }

    /// The part cannot be continued from the first answer (`reason`): the first connection stops, and the file is
    /// asked for anew, as it is; its answer begins the part again (the record is replaced).
    private mutating func startOver(_ id: Int, reason: String, _ actions: inout [Action]) {
        guard stop(id, &actions) != nil else { return }
        partStartsOver = true
        if logs { actions.append(.note(.splitDecided, .notice, "the part starts over: \(reason)")) }
        startFirst(cell: TransferCell.makeCell(), &actions)
    }

    /// The part this download continues: the file's, unless it was found to be another file's.
    private var resumed: PartSegments? { partStartsOver ? nil : part }

    /// Sends the first connection's request to the next live location (from the part's first missing byte when a
    /// split part is continued).
    mutating func startFirst(cell: TransferCell, avoiding: Int? = nil, _ actions: inout [Action]) {
        guard let location = locations.pick(forRange: false, avoiding: avoiding) else {
            return end(failing: true, &actions)
        }
        guard location > 0 || resumed != nil else {
            // The file as it was sent to its own URL: the connection sends the attempt's request itself. With no other
            // location, every answer but one that shares the file is carried by it: its shell carries such a head
            // itself (unless the queue logs: the machine then notes why the file is not shared).
            let carrying = Self.carryRule(locations: locations.locations.count, logs: logs, minimumSize: minimumSize)
            return add(Connection(cell: cell, location: location), .asSent, carrying: carrying, &actions)
        }
        let (request, asked, position) = SplitRules.firstRequest(
            requests.request(to: location), resumed: resumed, conditionalFields: requests.conditionalFields,
            connections: connectionLimit, minimumSize: minimumSize)
        add(Connection(cell: cell, location: location, asked: asked, position: position), .made(request), &actions)
    }
}
