import Foundation

/// What a transfer's final response head means, read once by the transfer's pipeline and handed to the
/// file, the verifier and the engine alike: none of them decides it again.
struct HeadReading: Sendable {
    /// The head itself.
    let head: ResponseHead
    /// What the head means for the part file the transfer continues; nil when it continues none.
    let continuation: RangeRules.Outcome?
    /// True when the body is the resource's: an acceptable status (``NetworkRequest/Validation-swift.struct/acceptableStatusCodes``;
    /// any status when that is nil), or a 206 that continues the part (standing for the whole resource's 200).
    let isAcceptable: Bool

    /// Reads `head` for a transfer continuing a part of `continuedFrom` bytes (0: none) of a request that
    /// accepts `acceptableStatusCodes`.
    init(_ head: ResponseHead, continuedFrom: Int64, acceptableStatusCodes: Range<Int>?) {
        self.head = head
        continuation = continuedFrom > 0 ? RangeRules.outcome(of: head, offset: continuedFrom) : nil
        switch continuation {
        case .append?: isAcceptable = true
        case .restartWithoutRange?: isAcceptable = false
        case .startOver?, .unrelated?, nil: isAcceptable = acceptableStatusCodes?.contains(head.statusCode) ?? true
        }
    }
}
