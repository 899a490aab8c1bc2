/// How one file's bytes are shared among several connections (segmented downloads and mirrors): which
/// ranges are on disk, which segment on which connection, and which wait. Pure: no time, no I/O.
///
/// A *segment* fetches one range in order, from its start (a `Range: bytes=start-` request) and ends when its range
/// is whole: the plan tells it, piece by piece, how many of the bytes it received belong to it, so a segment whose
/// range was shortened (stolen from) stops at its new end, and nothing is written twice. A connection that is
/// free takes a waiting range, or else half of what the segment with the most left has not received yet ("work
/// stealing"), never leaving either part under ``minimumSize``: the slowest connection never holds the end alone.
/// A segment that fails gives back what it had not received, which waits for the next connection; what it received
/// stays done.
///
/// The bytes counted (``receivedBytes``) are each counted once and never go backwards, whatever is stolen or
/// failed. ``doneRanges`` is what a record beside the part may claim (see ``SegmentRecord``).
struct SegmentPlan: Equatable, Sendable {
    /// One connection's range: `start..<end`, received up to `next`.
    struct Segment: Equatable, Sendable {
        let id: Int
        let start: Int64
        var next: Int64
        var end: Int64
        /// Bytes not received yet.
        var remaining: Int64 { end - next }
    }

    /// What the plan makes of a piece a segment received.
    struct Piece: Equatable, Sendable {
        /// How many of its first bytes belong to the segment (written at the segment's offset); the rest are beyond its
        /// end (its range was shortened) and are dropped.
        let kept: Int64
        /// True when the segment's range is now whole: its transfer is stopped (and ends as done).
        let isSegmentDone: Bool
    }

    /// The file's length.
    let length: Int64
    /// The smallest range a segment is given or left with when stealing (the last waiting range may be smaller).
    let minimumSize: Int64
    /// Ranges waiting for a connection, by start.
    private(set) var waiting: [Range<Int64>]
    /// The segments in flight, by id.
    private(set) var segments: [Segment] = []
    /// Whole ranges received (merged, by start), not counting the received parts of running ranges.
    private(set) var done: [Range<Int64>]
    private var nextID = 1

    /// A plan for `length` bytes split into `connections` waiting ranges of at least `minimumSize` (fewer when
    /// the file is small), less the ranges of `done` (a resumed file's record).
    init(length: Int64, connections: Int, minimumSize: Int64, done: [Range<Int64>] = []) {
        precondition(length >= 0 && minimumSize > 0, "SegmentPlan needs a length and a positive minimum size")
        self.length = length
        self.minimumSize = minimumSize
        self.done = Self.merged(done.map { max(0, $0.lowerBound)..<min(length, $0.upperBound) }.filter { !$0.isEmpty })
        let missing = Self.complement(of: self.done, in: 0..<length)
        let total = missing.reduce(0) { $0 + Int64($1.count) }
        let parts = max(1, min(Int64(max(1, connections)), total / minimumSize))
        // Parts of about total/parts bytes; a tail under the minimum joins the part before it.
        let step = max(minimumSize, (total + parts - 1) / parts)
        var waiting: [Range<Int64>] = []
        for range in missing {
            var start = range.lowerBound
            while start < range.upperBound {
                var end = min(range.upperBound, start + step)
                if range.upperBound - end < minimumSize { end = range.upperBound }
                waiting.append(start..<end)
                start = end
            }
        }
        self.waiting = waiting
    }

    /// Bytes received: whole ranges and the received part of each segment, each byte once.
    var receivedBytes: Int64 {
        done.reduce(0) { $0 + Int64($1.count) } + segments.reduce(0) { $0 + ($1.next - $1.start) }
    }

    /// True when every byte is received.
    var isComplete: Bool { segments.isEmpty && waiting.isEmpty && receivedBytes == length }

    /// What a record beside the part may claim: the whole ranges and the received part of each segment, merged.
    var doneRanges: [Range<Int64>] {
        Self.merged(done + segments.filter { $0.next > $0.start }.map { $0.start..<$0.next })
    }

    /// Gives a free connection a range: the first waiting one, else half of the largest remainder of a segment (which
    /// is shortened to end where the new segment starts). Nil when nothing is left to share.
    mutating func assign() -> Segment? {
        if !waiting.isEmpty { return start(waiting.removeFirst()) }
        guard let index = segments.indices.max(by: { segments[$0].remaining < segments[$1].remaining }),
            segments[index].remaining >= 2 * minimumSize
        else { return nil }
        let victim = segments[index]
        let cut = victim.next + victim.remaining / 2
        segments[index].end = cut
        return start(cut..<victim.end)
    }

    /// A segment whose range is whole, at `offset`, on a connection that goes on sending the bytes after it (up to
    /// `limit`, nil: to the end of the file), continues into the next range after it that is not done when every
    /// byte between is done and that gap is at most `maxGap` bytes (nil: any): its connection keeps streaming,
    /// dropping the gap, instead of being stopped while another is opened. The next range is a waiting one, or a segment
    /// of `idle` (whose connection has not answered yet) that received nothing: that segment is taken over, and its
    /// connection is to be stopped. Returns the new segment (at most to `limit`; the rest of the range waits), the gap,
    /// and the segment taken over; nil when no range can be reached so.
    mutating func follow(
        from offset: Int64, upTo limit: Int64?, maxGap: Int64?, takingOver idle: Set<Int> = []
    ) -> (segment: Segment, gap: Int64, takenOver: Int?)? {
        guard !segments.contains(where: { $0.start < offset && $0.end > offset }) else { return nil }
        let nextWaiting = waiting.firstIndex { $0.lowerBound >= offset }
        let nextRun = segments.indices.filter { segments[$0].start >= offset }.min {
            segments[$0].start < segments[$1].start
        }
        var takenOver: Int?
        let index: Int
        if let w = nextWaiting, nextRun.map({ waiting[w].lowerBound < segments[$0].start }) ?? true {
            index = w
        } else if let r = nextRun {
            let segment = segments[r]
            guard idle.contains(segment.id), segment.next == segment.start else { return nil }
            segments.remove(at: r)
            takenOver = segment.id
            index = waiting.firstIndex { $0.lowerBound > segment.start } ?? waiting.endIndex
            waiting.insert(segment.start..<segment.end, at: index)
        } else {
            return nil
        }
        let range = waiting[index]
        let gap = range.lowerBound - offset
        guard maxGap.map({ gap <= $0 }) ?? true, let end = Optional(min(range.upperBound, limit ?? range.upperBound)),
            end > range.lowerBound
        else {
            if let takenOver { restore(takenOver, at: index) }
            return nil
        }
        if end < range.upperBound {
            waiting[index] = end..<range.upperBound
        } else {
            waiting.remove(at: index)
        }
        return (start(range.lowerBound..<end), gap, takenOver)
    }

    /// Puts back the segment `id` that ``follow(from:upTo:maxGap:takingOver:)`` took out of `waiting[index]`.
    private mutating func restore(_ id: Int, at index: Int) {
        let range = waiting.remove(at: index)
        segments.append(Segment(id: id, start: range.lowerBound, next: range.lowerBound, end: range.upperBound))
    }

    /// Shares the segment with the most left among `parts` connections: it keeps the first of `parts` shares of what
    /// it has not received, `less` bytes smaller than the others, which are equal (each at least ``minimumSize``), and
    /// the others wait, in order. Used when one connection turns out too slow for the file alone: `less` is what it
    /// brought in its first window, which each new connection is expected to bring in its own on top of its pace (a
    /// server that caps each connection's pace lets each new one have a burst first, as nginx does: the running one had
    /// its burst already).
    mutating func divide(into parts: Int, keepingLess less: Int64 = 0) {
        guard parts > 1, let index = segments.indices.max(by: { segments[$0].remaining < segments[$1].remaining })
        else { return }
        let segment = segments[index]
        let count = max(1, min(Int64(parts), segment.remaining / minimumSize))
        guard count > 1 else { return }
        let step = (segment.remaining + count - 1) / count
        // The first share is smaller by `less`, never under the minimum; the others share what it leaves equally.
        let kept = max(min(step, minimumSize), step - max(0, less))
        let others = kept == step ? step : (segment.remaining - kept + count - 2) / (count - 1)
        segments[index].end = segment.next + kept
        var start = segment.next + kept
        var shares: [Range<Int64>] = []
        while start < segment.end {
            var end = min(segment.end, start + others)
            if segment.end - end < minimumSize { end = segment.end }
            shares.append(start..<end)
            start = end
        }
        waiting = (waiting + shares).sorted { $0.lowerBound < $1.lowerBound }
    }

    private mutating func start(_ range: Range<Int64>) -> Segment {
        let segment = Segment(id: nextID, start: range.lowerBound, next: range.lowerBound, end: range.upperBound)
        nextID += 1
        segments.append(segment)
        return segment
    }

    /// The segment `id` received `count` more bytes (at its `next` offset). A segment not in the plan (it ended) keeps
    /// nothing.
    mutating func received(_ count: Int64, segment id: Int) -> Piece {
        guard let index = segments.firstIndex(where: { $0.id == id }) else {
            return Piece(kept: 0, isSegmentDone: false)
        }
        let kept = min(max(0, count), segments[index].remaining)
        segments[index].next += kept
        guard segments[index].remaining == 0 else { return Piece(kept: kept, isSegmentDone: false) }
        let segment = segments.remove(at: index)
        done = Self.merged(done + [segment.start..<segment.end])
        return Piece(kept: kept, isSegmentDone: true)
    }

    /// The segment `id` ended before its range was whole: what it received stays done, the rest waits again (first,
    /// so that the file fills from its start).
    mutating func failed(segment id: Int) {
        guard let index = segments.firstIndex(where: { $0.id == id }) else { return }
        let segment = segments.remove(at: index)
        if segment.next > segment.start { done = Self.merged(done + [segment.start..<segment.next]) }
        waiting.insert(
            segment.next..<segment.end, at: waiting.firstIndex { $0.lowerBound > segment.next } ?? waiting.endIndex)
    }

    /// `ranges` sorted and joined where they touch or overlap.
    static func merged(_ ranges: [Range<Int64>]) -> [Range<Int64>] {
        var result: [Range<Int64>] = []
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) where !range.isEmpty {
            if let last = result.last, range.lowerBound <= last.upperBound {
                result[result.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                result.append(range)
            }
        }
        return result
    }

    /// What `whole` has outside the sorted, disjoint `ranges`.
    static func complement(of ranges: [Range<Int64>], in whole: Range<Int64>) -> [Range<Int64>] {
        var result: [Range<Int64>] = []
        var cursor = whole.lowerBound
        for range in ranges where range.upperBound > cursor {
            if range.lowerBound > cursor { result.append(cursor..<min(range.lowerBound, whole.upperBound)) }
            cursor = max(cursor, range.upperBound)
        }
        if cursor < whole.upperBound { result.append(cursor..<whole.upperBound) }
        return result.filter { !$0.isEmpty }
    }
}
