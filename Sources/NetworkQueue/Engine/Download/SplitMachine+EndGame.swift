import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The end game of a shared file: once no range waits, a free connection (or one borrowed at a timer's look) races the
/// connection whose range would end last, when ``EndGame`` says it is worth it; the first to bring those bytes keeps the
/// range and the other stops.
extension SplitMachine {
    /// The look at the end game came (``Action/recheck(at:)``): a range worth racing with no connection free asks
    /// the queue for one more (``Action/borrow(_:)``; the loan races it); the next look is scheduled while the end
    /// game lasts.
    mutating func recheckDue(now: Double, _ actions: inout [Action]) {
        guard let sharing, !isEnded, !windowEnded(now: now, &actions) else { return }
        // The end game's look, when it is due (not the end of a window that outlived it).
        guard let due = sharing.recheckAt, now >= due else { return }
        sharing.recheckAt = nil
        if connections.count < 1 + sharing.loans.count { return fillConnections(now: now, &actions) }
        if endGame?.slowest(now: now) != nil, sharing.loans.count < connectionLimit - 1 {
            actions.append(.borrow(nextLocations(1)))
        }
        scheduleRecheck(now: now, &actions)
    }

    /// The end of the file (no range waits) while connections run: the end game is looked at again once a new
    /// connection could be judged, so that a range whose connection stalls is raced even when no connection comes
    /// free (a ``QueueTimer`` entry of the request). Not under the queue's rate cap, which may be what slows them.
    mutating func scheduleRecheck(now: Double, _ actions: inout [Action]) {
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

    /// The end game: no range waits and a connection is free, so it races the connection whose range
    /// would end last, when that is worth it. The new connection asks for what that range has not received yet; the
    /// raced one goes on, and the first of the two to bring those bytes keeps them while the other stops (see
    /// ``Event/bytes(_:connection:at:)`` and the accepted head, both heard by ``segmentEvent(_:now:_:)``). Nothing is dropped:
    /// a healthy but slower location only loses a race. True when a connection was started.
    mutating func race(now: Double, _ actions: inout [Action]) -> Bool {
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
        if logs { actions.append(.note(.splitDecided, .info, message)) }
        return true
    }
}
