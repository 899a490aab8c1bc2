import Foundation

/// The locations of one split file (its URL, then its mirrors): which are still used, how many connections each
/// runs and how many bytes each served. Pure.
///
/// A location that served the wrong bytes or a status is dropped at once. A location whose connection broke (or whose
/// HEAD failed) is asked again, as any stage of a request is retried (STYLE habit 23): it is dropped only after
/// ``breakLimit`` breaks with no kept byte between, and only while another location is left; when it is the last, the
/// attempt fails instead, and the request's retry policy decides whether a next attempt continues every range from
/// where it stopped.
///
/// Splitting is an optimisation, never a reason to fail: a location whose answer to a range is wrong while
/// its stream of the whole file is good (the first connection's) is not dropped but asked for no more ranges; its
/// stream goes on, taking each waiting range it reaches.
struct LocationList: Equatable, Sendable {
    struct Location: Equatable, Sendable {
        var isLive = true
        /// Connections running to it now.
        var running = 0
        /// Bytes it served that were kept.
        var served: Int64 = 0
        /// False once it answered a range wrongly while its stream of the file was good: no range is sent to it.
        var takesRanges = true
        /// Its own validator, learned from its first answer (nil until then): its ranges are asked and checked
        /// under it (other server software makes other entity tags for the same file).
        var validator: RangeRules.Validator?
        /// Its connections (and HEAD) that broke since it last served a kept byte.
        var breaks = 0
    }

    /// What becomes of a location whose connection broke (``broke(_:)``).
    enum BreakVerdict: Equatable, Sendable {
        /// It stays live, to be asked again (its breaks are below the limit).
        case kept
        /// It is dropped: another location is live.
        case dropped
        /// It is the last live location: kept, and the attempt fails.
        case last
    }

    /// What becomes of a location whose answer to a range was wrong (``rangeFailed(_:hasStream:)``).
    enum RangeVerdict: Equatable, Sendable {
        /// It is asked for no more ranges; its stream of the file goes on.
        case noMoreRanges
        /// It is dropped: its connections stop.
        case dropped
    }

    private(set) var locations: [Location]
    /// The breaks in a row that drop a location while another is live: the attempts the request's retry policy gives
    /// (at least 1).
    let breakLimit: Int

    /// `count` locations, all live; each dropped after `breakLimit` breaks in a row (1: at its first).
    init(count: Int, breakLimit: Int = 1) {
        locations = Array(repeating: Location(), count: max(1, count))
        self.breakLimit = max(1, breakLimit)
    }

    /// True while any location is live.
    var hasLive: Bool { locations.contains { $0.isLive } }

    /// The live locations that take ranges, in order.
    var takingRanges: [Int] { locations.indices.filter { locations[$0].isLive && locations[$0].takesRanges } }

    /// The live location that takes ranges with the fewest connections running (the first of equals: the request's
    /// own URL first); nil when none is left.
    var leastBusy: Int? { leastBusy(among: takingRanges) }

    /// Of `indices`, the location with the fewest connections running (the first of equals); nil when empty.
    func leastBusy(among indices: [Int]) -> Int? { indices.min { locations[$0].running < locations[$1].running } }

    /// The ``leastBusy`` location, which then runs one more connection; nil when none is left. With `forRange` false
    /// (a first connection, asking for the file as it is), any live location but `avoiding` while another is live
    /// (the one whose first connection just broke: the next is asked first, as a failover).
    mutating func pick(forRange: Bool = true, avoiding: Int? = nil) -> Int? {
        let live = locations.indices.filter { locations[$0].isLive }
        let others = live.filter { $0 != avoiding }
        let found =
            forRange
            ? leastBusy
            : (others.isEmpty ? live : others).min { locations[$0].running < locations[$1].running }
        guard let index = found else { return nil }
        locations[index].running += 1
        return index
    }

    /// `index` answered a range with what is not the file's bytes there (a status, a whole file, other offsets,
    /// length or validator, a content coding, a short body). With a good stream of the file (`hasStream`) it only
    /// takes no more ranges; otherwise it is dropped (``FailoverRules``).
    mutating func rangeFailed(_ index: Int, hasStream: Bool) -> RangeVerdict {
        if FailoverRules.verdict(after: .wrongRange, of: index, among: self, hasStream: hasStream) == .noMoreRanges {
            locations[index].takesRanges = false
            return .noMoreRanges
        }
        locations[index].isLive = false
        return .dropped
    }

    /// A connection to `index` ended.
    mutating func ended(_ index: Int) { locations[index].running -= 1 }

    /// `index` names itself by `validator` (learned once, from its first good answer).
    mutating func learn(_ validator: RangeRules.Validator?, for index: Int) {
        if locations[index].validator == nil { locations[index].validator = validator }
    }

    /// `index` served `count` kept bytes.
    mutating func served(_ count: Int64, by index: Int) {
        locations[index].served += count
        if count > 0 { locations[index].breaks = 0 }
    }

    /// `index` served bytes that are not the file's (a status, another length or validator): dropped.
    mutating func drop(_ index: Int) { locations[index].isLive = false }

    /// True when no live location but `index` is left.
    func isLast(_ index: Int) -> Bool { !locations.indices.contains { $0 != index && locations[$0].isLive } }

    /// A connection to `index` starts (one it was not picked for: a stream of the whole file).
    mutating func started(_ index: Int) { locations[index].running += 1 }

    /// True when a live location other than `index` takes ranges: what `index` holds could go there.
    func hasOtherForRanges(than index: Int) -> Bool {
        locations.indices.contains { $0 != index && locations[$0].isLive && locations[$0].takesRanges }
    }

    /// A connection to `index` broke (or its HEAD failed): counted, and the location is dropped once its breaks in a
    /// row reach ``breakLimit`` while another is live; the last one is kept, and the attempt fails.
    mutating func broke(_ index: Int) -> BreakVerdict {
        guard FailoverRules.verdict(after: .broke, of: index, among: self) == .nextLocation else { return .last }
        locations[index].breaks += 1
        guard locations[index].breaks >= breakLimit else { return .kept }
        locations[index].isLive = false
        return .dropped
    }

    /// The locations the next `count` connections would go to, in order (their servers are what a per-host limit
    /// counts): each the least busy once the ones before it run. The list itself is unchanged.
    func picks(_ count: Int) -> [Int] {
        var after = self
        var picked: [Int] = []
        while picked.count < count, let location = after.pick() { picked.append(location) }
        return picked
    }

    /// After the file failed its checksum, `firstSource` having begun it (its validator is the file's): the location
    /// to fetch it again from alone, the locations that served its bytes under suspicion (`untrusted`, named in the
    /// metrics), and those to fetch it from alone next, in turn, should that fail too (`then`).
    /// - Several locations served it: `firstSource` first, then each other that served some.
    /// - One location served it alone (the request's URL, or a mirror that began it because the request's URL broke or
    ///   had not answered yet): the live locations that served none of it, in their order (the request's URL first),
    ///   at most ``mostRefetchesAfterOne``. A location that lies cannot fail the file while another serves it right (a
    ///   Metalink's first mirror may be stale), and a checksum that is itself wrong costs at most that many more
    ///   fetches.
    /// - Nil when no other location is live, or nothing began it.
    func checksumRefetch(firstSource: Int?) -> (source: Int, untrusted: [Int], then: [Int])? {
        guard let firstSource else { return nil }
        let others = locations.indices.filter { $0 != firstSource && locations[$0].served > 0 }
        if !others.isEmpty { return (firstSource, others, others) }
        let untried = locations.indices.filter { $0 != firstSource && locations[$0].isLive }
            .prefix(Self.mostRefetchesAfterOne)
        guard let next = untried.first else { return nil }
        return (next, [firstSource], Array(untried.dropFirst()))
    }

    /// The most locations a file that one location served alone and that failed its checksum is fetched again from,
    /// each alone: 2.
    static let mostRefetchesAfterOne = 2

    /// What the file's metrics say of its locations (`urls`, by location; `untrusted`: those that served an earlier
    /// attempt that failed its checksum) when at most `connections` ran at once.
    func segmentMetrics(urls: [URL?], untrusted: Set<Int>, connections: Int) -> SegmentMetrics {
        SegmentMetrics(
            connections: connections,
            locations: locations.indices.map {
                SegmentMetrics.Location(
                    url: urls[$0] ?? URL(fileURLWithPath: "/"), bytes: locations[$0].served,
                    wasDropped: !locations[$0].isLive, refusedRanges: !locations[$0].takesRanges,
                    untrusted: untrusted.contains($0))
            })
    }
}
