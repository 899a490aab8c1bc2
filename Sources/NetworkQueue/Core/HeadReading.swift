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
    /// True when the transfer asked for its existing file only if it changed (``NetworkRequest/ExistingFile/revalidate``)
    /// and the answer is 304 Not Modified: the file there is kept, and the response has no body for the file.
    let isNotModified: Bool

    /// This reading, of the same response told with `head` instead (a continued split part's head in the continuing
    /// form its request hears).
    func replacingHead(with head: ResponseHead) -> HeadReading {
        HeadReading(head: head, continuation: continuation, isAcceptable: isAcceptable, isNotModified: isNotModified)
    }

    private init(head: ResponseHead, continuation: RangeRules.Outcome?, isAcceptable: Bool, isNotModified: Bool) {
        self.head = head
        self.continuation = continuation
        self.isAcceptable = isAcceptable
        self.isNotModified = isNotModified
    }

    /// Reads `head` for a transfer continuing a part of `continuedFrom` bytes (0: none) of a request that
    /// accepts `acceptableStatusCodes`; `revalidates`: the transfer sent its file's validator.
    init(_ head: ResponseHead, continuedFrom: Int64, acceptableStatusCodes: Range<Int>?, revalidates: Bool = false) {
        self.head = head
        continuation = continuedFrom > 0 ? RangeRules.outcome(of: head, offset: continuedFrom) : nil
        isNotModified = revalidates && continuedFrom == 0 && ExistingFileRules.isNotModified(head)
        switch continuation {
        case .append?: isAcceptable = true
        case .restartWithoutRange?: isAcceptable = false
        case .startOver?, .unrelated?, nil:
            isAcceptable = !isNotModified && (acceptableStatusCodes?.contains(head.statusCode) ?? true)
        }
    }
}
