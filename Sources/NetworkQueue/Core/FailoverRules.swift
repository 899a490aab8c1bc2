/// When a file leaves one of its locations (its URL, then its mirrors) for the others (51): one rule,
/// whether the location failed at the HEAD preflight, at the first GET's head or in the middle of a range. Pure.
///
/// A location is left for the next when another is live; the last one is never left: its failure is the attempt's,
/// and the request's retry policy decides what follows. A location whose answer to a range is wrong while its stream
/// of the whole file is good only takes no more ranges (splitting is an optimisation, never a reason to fail).
enum FailoverRules {
    /// Why a location is judged.
    enum Cause: Equatable, Sendable {
        /// Its connection broke or could not be made.
        case broke
        /// Its first answer was this status, not a success.
        case status(Int)
        /// Its answer to a range was not that range of the file.
        case wrongRange
        /// Its answer was not the file (another length, validator or coding).
        case wrongAnswer
    }

    /// What becomes of the location.
    enum Verdict: Equatable, Sendable {
        /// Left: the next live location is asked (its connections stop; what they received stays).
        case nextLocation
        /// Kept for its stream of the file, asked for no more ranges.
        case noMoreRanges
        /// It is the last: the attempt fails as it did.
        case fail
    }

    /// The verdict on `location` among `locations` after `cause` (`hasStream`: its stream of the whole file is good).
    static func verdict(after cause: Cause, of location: Int, among locations: LocationList, hasStream: Bool = false)
        -> Verdict
    {
        if cause == .wrongRange, hasStream { return .noMoreRanges }
        return locations.isLast(location) ? .fail : .nextLocation
    }

    /// The verdict on the HEAD preflight's `location` (of `count`, asked in their order) after it failed: the next is
    /// asked while one is left.
    static func verdict(afterHeadOf location: Int, count: Int) -> Verdict {
        location + 1 < count ? .nextLocation : .fail
    }

    /// The log's line for a location left: "dropped <location>: <reason>".
    static func message(_ location: String, _ reason: String) -> String { "dropped \(location): \(reason)" }
}
