import Foundation

/// The end game's judgements of a split file, once no range waits: which connection's range is worth
/// racing, the best pace a connection kept, and where a race goes. Pure: a snapshot of the file's connections and
/// books, the time a parameter; the ``SplitMachine`` takes it when it looks and acts on the answers.
struct EndGame {
    /// One running connection of the file, as the end game sees it.
    struct Runner {
        /// Its connection number: connections are judged in this order, and a tie goes to the first.
        let id: Int
        /// The location it fetches from.
        let location: Int
        /// When it was started, and when its head was accepted (queue clock; nil before).
        let startedAt: Double
        let acceptedAt: Double?
        /// Bytes of the file it kept.
        let received: Int64
        /// Its range while it runs one: the offset of the next byte it brings, and the bytes left.
        let range: (next: Int64, remaining: Int64)?
    }

    /// The file's running connections, by connection number.
    let runners: [Runner]
    /// How long a connection runs before its pace is judged, in seconds (``SplitMachine/Sharing/settleTime``).
    let settleTime: Double
    /// The longest a connection of the file took from its start to its accepted head, in seconds.
    let startDelay: Double
    /// The best pace a stopped connection kept, in bytes a second, and its location (nil: none).
    let keptPace: (rate: Double, location: Int)?
    /// The offsets a race was started from: a range whose racer stalls at the same offset is not raced again.
    let racedFrom: Set<Int64>
    /// When each location last brought bytes of the file (queue clock), by location.
    let servedAt: [Int: Double]

    /// The best pace a connection kept at `now`, running (judged once it ran the settle time) or stopped, and its
    /// location (nil: none judged yet); with `among`, of those locations only.
    func bestPace(now: Double, among allowed: [Int]? = nil) -> (rate: Double, location: Int)? {
        let isAllowed = { (location: Int) in allowed?.contains(location) ?? true }
        var best = keptPace.flatMap { isAllowed($0.location) ? $0 : nil }
        for runner in runners {
            guard let acceptedAt = runner.acceptedAt, runner.received > 0, isAllowed(runner.location),
                now - acceptedAt >= settleTime
            else { continue }
            let rate = Double(runner.received) / (now - acceptedAt)
            if rate > best?.rate ?? 0 { best = (rate, runner.location) }
        }
        return best
    }

    /// The connection whose range would end last at `now`, when racing it is worth it (``SplitRules/isWorthRacing(remaining:finishTime:rate:startDelay:)``):
    /// a range already raced from its next byte is not raced again. A connection whose head has not come is judged from
    /// its start: one that never answers (or whose transport never hands its head over without a body byte) is the
    /// slowest of all once it waited the settle time. Nil otherwise.
    func slowest(now: Double) -> Int? {
        var found: (id: Int, time: Double, remaining: Int64)?
        let rate = bestPace(now: now)?.rate
        for runner in runners {
            guard let range = runner.range, !racedFrom.contains(range.next),
                let time = SplitRules.finishTime(
                    remaining: range.remaining, received: runner.received,
                    running: now - (runner.acceptedAt ?? runner.startedAt), settle: settleTime)
            else { continue }
            if found.map({ time > $0.time }) ?? true { found = (runner.id, time, range.remaining) }
        }
        guard let found,
            SplitRules.isWorthRacing(
                remaining: found.remaining, finishTime: found.time, rate: rate, startDelay: startDelay)
        else { return nil }
        return found.id
    }

    /// Where a race goes at `now`, among `locations`' that take ranges: of those that brought bytes lately (within the
    /// settle time of the latest byte of any: a location whose connections stall would most likely stall the race
    /// too), the one of the best pace if known there, else the least busy. The best pace alone is not enough: it may be
    /// a stalled mirror's own burst before it broke, and with no pace settled yet (under load) the least busy may be
    /// the stalled mirror; the race would stall too, and its range wait for the attempt's idle timeout.
    func raceLocation(now: Double, _ locations: LocationList) -> Int? {
        let live = locations.takingRanges
        var fresh = live
        if let latest = live.compactMap({ servedAt[$0] }).max() {
            fresh = live.filter { (servedAt[$0] ?? -.infinity) >= latest - settleTime }
        }
        if let best = bestPace(now: now, among: fresh)?.location { return best }
        return locations.leastBusy(among: fresh)
    }
}
