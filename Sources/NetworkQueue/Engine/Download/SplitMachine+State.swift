import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a ``SplitMachine`` holds: its connections, its mode (first, running, ended) with each mode's own state, and the
/// shared state of a split file. The machine's decisions are in `SplitMachine.swift` and its facets; its actions and
/// events in `SplitActions.swift`.
extension SplitMachine {
    /// One connection of the file.
    struct Connection {
        let cell: TransferCell
        let location: Int
        /// The segment it fetches, while it runs one.
        var segment: Int?
        /// The last byte it asked for plus one (nil: to the end of the file, or its server sends the whole file).
        var asked: Int64?
        /// True once its head was accepted.
        var isAccepted = false
        /// The offset in the file of the next byte its server sends (bytes below its segment's next are on disk
        /// already, and dropped: see ``SegmentPlan/follow(from:upTo:maxGap:takingOver:)``).
        var position: Int64 = 0
        /// When it last received a byte, or its head was accepted (queue clock); nil before its head.
        var lastByteAt: Double?
        /// Bytes of the file it received (kept).
        var received: Int64 = 0
        /// When it was started (queue clock).
        var startedAt: Double = 0
        /// When its head was accepted (queue clock); nil before.
        var acceptedAt: Double?
        /// While another connection races it for the rest of its range (the end game): the offset its server sends
        /// next. It keeps that range if it brings its first bytes before the other answers, else it stops.
        var racingFrom: Int64?
    }

    /// Where the download is. Each mode carries what only it has, as the request's phases do.
    enum Mode {
        /// The first connection's head has not come.
        case first
        /// The file runs over its connections, one to N (N = 1: nothing is shared, no loan asked for, no end game).
        case running(Sharing)
        /// It ended: whole, failed, or released with its attempt; or the first head was not one to share on, and its
        /// connection carries the file as it comes (the shell's pipeline, as any transfer's), the machine hearing
        /// nothing more of it.
        case ended

        /// The mode's name, for tests and failures.
        var name: String {
            switch self {
            case .first: "first"
            case .running: "running"
            case .ended: "ended"
            }
        }
    }

    /// How the file is shared.
    enum Pace {
        /// The first connection runs alone: the window its pace is measured over (when it began, and the bytes kept
        /// since), and whether the log said it runs alone for now.
        case judging(since: Double, received: Int64, saidAlone: Bool)
        /// The file is shared among connections (they are asked for again as slots come free).
        case shared
    }

    /// What a file has while its connections share it. A class, as a request's `Attempt` is: changed in place by
    /// every piece of every connection, and never copied (the machine is held by reference in its attempt).
    final class Sharing {
        let shape: SplitRules.Shape
        /// The head the engine heard (the first response's, or its continuing form).
        let head: ResponseHead
        var plan: SegmentPlan
        var pace: Pace
        var loans: [QueueStateMachine.ConnectionLoan] = []
        /// Events whose writes have not been answered yet: the ending waits for them.
        var writesInFlight = 0
        /// The first figures a connection reported (its connect, its first byte).
        var metrics: TransferMetrics?
        var sinceLoanAsked: Int64 = 0
        /// When the record beside the part was last saved (queue clock).
        var recordedAt = -Double.infinity
        /// Bytes written through cursors and counted since the record was last saved.
        var unrecorded: Int64 = 0
        /// When the next look at the end game is due, while one is scheduled (queue clock).
        var recheckAt: Double?
        /// The longest a connection of the file took from its start to its accepted head, in seconds.
        var startDelay = 0.0
        /// The best pace a stopped connection of the file kept, in bytes a second, and its location (nil: none).
        var keptPace: (rate: Double, location: Int)?
        /// When each location last brought bytes of the file (queue clock), by location.
        var servedAt: [Int: Double] = [:]
        /// The offsets a race was started from: a range whose racer stalls at the same offset is not raced again (the
        /// server, or the file, stalls there; the idle timeout decides).
        var racedFrom: Set<Int64> = []
        /// The last location, when its ranges failed and a stream of the whole file is to carry the file on (it
        /// starts as soon as the first missing range is not behind another connection's).
        var streamWanted: Int?
        /// Connections of the last location started again after one broke having received bytes (bounded).
        var restarts = 0

        init(shape: SplitRules.Shape, head: ResponseHead, plan: SegmentPlan, pace: Pace) {
            self.shape = shape
            self.head = head
            self.plan = plan
            self.pace = pace
        }

        /// How long a connection runs after its head before its pace is judged: four times the longest any took to
        /// its head, at least 0.1 s.
        var settleTime: Double { max(0.1, 4 * startDelay) }
    }
}
