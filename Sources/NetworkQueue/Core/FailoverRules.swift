/// When a file leaves one of its sources (its URL, then its mirrors) for the others (issues 36, 50, 51): one rule,
/// whether the source failed at the HEAD preflight, at the first GET's head or in the middle of a range. Pure.
///
/// A source is left for the next when another is live; the last one is never left: its failure is the attempt's,
/// and the request's retry policy decides what follows. A source whose answer to a range is wrong while its stream
/// of the whole file is good only takes no more ranges (splitting is an optimisation, never a reason to fail).
enum FailoverRules {
    /// Why a source is judged.
    enum Cause: Equatable, Sendable {
        /// Its connection broke or could not be made.
        case broke
        /// Its first answer was this status, not a success.
        case status(Int)
        /// Its answer to a range was not that range of the file.
        case wrongRange
        /// Its answer was not the file (another length, validator or coding).
        case wrongAnswer
        /// It sent nothing for ``SplitRules/stallSeconds`` at the end of the file while others moved on.
        case stalled
    }

    /// What becomes of the source.
    enum Verdict: Equatable, Sendable {
        /// Left: the next live source is asked (its connections stop; what they received stays).
        case nextSource
        /// Kept for its stream of the file, asked for no more ranges.
        case noMoreRanges
        /// It is the last: the attempt fails as it did.
        case fail
    }

    /// The verdict on `source` among `sources` after `cause` (`hasStream`: its stream of the whole file is good).
    static func verdict(after cause: Cause, of source: Int, among sources: SourceList, hasStream: Bool = false)
        -> Verdict
    {
        if cause == .wrongRange, hasStream { return .noMoreRanges }
        return sources.isLast(source) ? .fail : .nextSource
    }

    /// The verdict on the HEAD preflight's `source` (of `count`, asked in their order) after it failed: the next is
    /// asked while one is left.
    static func verdict(afterHeadOf source: Int, count: Int) -> Verdict {
        source + 1 < count ? .nextSource : .fail
    }

    /// The log's line for a source left: "dropped <source>: <reason>".
    static func message(_ source: String, _ reason: String) -> String { "dropped \(source): \(reason)" }
}
