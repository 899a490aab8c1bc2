import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How a file that may be shared starts (62): what its first connection asks for, what the first final
/// head says, and how the first connection's pace is judged while it runs alone. Pure: the ``SplitMachine`` acts on
/// the answers.
extension SplitRules {
    /// What the first connection's final head says of the file.
    enum FirstAnswer {
        /// The file is shared: its shape, the ranges on disk already, and the head the engine hears (a continued
        /// part's head in its continuing form). `isWhole`: a 200, the whole file whatever range was asked for (its
        /// connection streams to the end, from the file's first byte).
        case begin(Shape, done: [Range<Int64>], head: ResponseHead, isWhole: Bool)
        /// The part on disk is not this file's any more (`reason`): the file is asked for anew, as it is.
        case startOver(String)
        /// The file there is unchanged (a 304 to a revalidated file): the answer is the attempt's.
        case unchanged
        /// An error status: the next location is asked, or the last one's answer is the attempt's.
        case status(Int)
        /// Not one to share (`reason`): its connection carries the file as it comes.
        case oneConnection(String)
    }

    /// What the shell of a file with one location and no part reads of its first connection's final head on its own,
    /// as the machine said when it started that connection: a head that cannot share the file (``shape(of:minimumSize:)``
    /// refuses it) is carried by that connection at once, as any transfer's head is, for every other answer of such a
    /// file is carried too (``firstAnswer(to:resumed:revalidates:minimumSize:)``: an error status with no other location,
    /// a 304, a file too small or not rangeable). Only a head that may share the file is the machine's to decide: so
    /// that a list of small files over `--split` pays no trip into the engine for a head nothing is decided on.
    struct CarryRule: Equatable, Sendable {
        /// The smallest segment of the file (``shape(of:minimumSize:)``'s).
        let minimumSize: Int64

        /// True when `head` may share the file: the machine decides on it.
        func mayShare(_ head: ResponseHead) -> Bool {
            if case .success = SplitRules.shape(of: head, minimumSize: minimumSize) { true } else { false }
        }
    }

    /// What `head`, the first connection's final head, says of the file: continuing `resumed` (a split part on disk),
    /// a 206 must be the same file (its validator and length); a revalidated file (`revalidates`) may be unchanged;
    /// otherwise ``shape(of:minimumSize:)`` decides.
    static func firstAnswer(
        to head: ResponseHead, resumed: PartSegments?, revalidates: Bool, minimumSize: Int64
    ) -> FirstAnswer {
        if let resumed, head.statusCode == 206 {
            // Its server has another file now (it ignored If-Range): the bytes on disk are not its, and the part is
            // fetched anew, as a part of one connection starts over.
            let problem = continuationProblem(with: head, resumed: resumed)
            if problem == nil,
                let length = RangeRules.contentRange(head.value(forHTTPHeaderField: "Content-Range"))?.total
            {
                let shape = Shape(length: length, validator: resumed.validator)
                let continuing = continuingHead(head, onDisk: resumed.onDisk, length: length)
                return .begin(shape, done: resumed.done, head: continuing, isWhole: false)
            }
            return .startOver(problem ?? "it cannot be continued")
        }
        switch shape(of: head, minimumSize: minimumSize) {
        case .failure(.status(304)) where revalidates: return .unchanged
        case .success(let shape): return .begin(shape, done: [], head: head, isWhole: true)
        case .failure(.status(let code)) where !(200..<300).contains(code): return .status(code)
        case .failure(let refusal): return .oneConnection(refusal.text)
        }
    }

    /// The first connection's request to a location (`base`, its `Range` and `If-Range` dropped), with the last byte
    /// it asks for plus one (`asked`, nil: to the end) and the offset of its server's first byte (`position`).
    /// Continuing `resumed`, it asks for the first segment the plan of `connections` connections of at least
    /// `minimumSize` bytes will give it, so that its server sends no byte past it (open only for a part of one
    /// connection, whose length is not known yet), under the part's validator; otherwise the file as it is, with a
    /// revalidated file's `conditionalFields`.
    static func firstRequest(
        _ base: URLRequest, resumed: PartSegments?, conditionalFields: [(name: String, value: String)],
        connections: Int, minimumSize: Int64
    ) -> (request: URLRequest, asked: Int64?, position: Int64) {
        var request = base
        guard let resumed else {
            for (name, value) in conditionalFields { request.setValue(value, forHTTPHeaderField: name) }
            return (request, nil, 0)
        }
        let first = resumed.length.flatMap {
            SegmentPlan(length: $0, connections: connections, minimumSize: minimumSize, done: resumed.done).waiting
                .first
        }
        let hole = first ?? resumed.firstHole
        let open = hole.upperBound == resumed.length ?? Int64.max && first == nil
        for (name, value) in headers(for: hole, open: open, validator: resumed.validator) {
            request.setValue(value, forHTTPHeaderField: name)
        }
        return (request, open ? nil : hole.upperBound, hole.lowerBound)
    }

    /// While the first connection's pace is judged, its cursor reaches this far ahead of its next byte in the first
    /// window, and at least this far in the later ones (``judgingStep(received:elapsed:)``).
    static let judgingStep: Int64 = 64 << 10

    /// How far ahead of its next byte the first connection's cursor reaches while its pace is judged in a window after
    /// the first: the machine hears its bytes about twice a window (`received` bytes in `elapsed` seconds of this
    /// window), at least every ``judgingStep`` bytes, so that the pace is judged when its window ends, not when a long
    /// engine pass's notices come.
    static func judgingStep(received: Int64, elapsed: Double) -> Int64 {
        guard received > 0, elapsed > 0 else { return judgingStep }
        let halfWindow = Double(received) / elapsed * probeSeconds / 2
        return max(judgingStep, Int64(min(halfWindow, Double(Int64.max / 4))))
    }

    /// What the first connection's pace says once `received` bytes were kept in `elapsed` seconds of its window, with
    /// `remaining` bytes of the file to come.
    enum PaceVerdict: Equatable {
        /// The window is not over: it goes on.
        case judging
        /// One connection would take too long: the rest is shared.
        case share
        /// One connection is enough for now: a new window begins. `seconds`: what the rest would take on it.
        case alone(seconds: Double)
    }

    /// Judges the first connection's pace over its window (``probeSeconds``): a window is judged on its own, so that a
    /// server's first burst (such as nginx's second's worth of its cap at once) does not hide the pace that follows.
    static func pace(received: Int64, elapsed: Double, remaining: Int64) -> PaceVerdict {
        guard elapsed >= probeSeconds else { return .judging }
        if isWorthSharing(remaining: remaining, received: received, elapsed: elapsed) { return .share }
        return .alone(seconds: Double(remaining) * elapsed / Double(received))
    }
}
