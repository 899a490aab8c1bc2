import Foundation

/// `--shard K/N`: the share of a list that run K of N takes, with no coordinator.
///
/// An entry belongs to the shard its URL's fingerprint (FNV-1a of the URL's text) picks, modulo N: every run
/// of the same list agrees without talking, the shares are disjoint and together the whole list, each gets
/// about 1/N of it, and an entry keeps its shard when other lines are added to or removed from the list.
public struct Shard: Sendable, Equatable, CustomStringConvertible {
    /// This run's index, from 0 to `count` − 1 (as Kubernetes' `JOB_COMPLETION_INDEX`).
    public let index: Int
    /// How many runs share the list.
    public let count: Int

    /// The whole list.
    public static let whole = Shard(index: 0, count: 1)

    public init(index: Int, count: Int) {
        precondition(count > 0 && (0..<count).contains(index), "a shard is K/N with 0 <= K < N")
        self.index = index
        self.count = count
    }

    /// `K/N`, or nil when it is not two whole numbers with 0 <= K < N (N at most 1,000,000).
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]), (1...1_000_000).contains(count),
            (0..<count).contains(index)
        else { return nil }
        self.init(index: index, count: count)
    }

    /// True when the entry for `url` is this shard's.
    public func contains(_ url: URL) -> Bool {
        count == 1 || Int(Fingerprint.of(url.absoluteString) % UInt64(count)) == index
    }

    public var description: String { "\(index)/\(count)" }
}
