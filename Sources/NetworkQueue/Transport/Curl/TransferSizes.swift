#if os(Linux)
    import Foundation
    import Synchronization

    /// The size of the bodies a transport's transfers received lately, as an average that weighs the latest
    /// an eighth: whether its transfers are small (cheapest on one engine thread) or big (faster spread over
    /// several). Written by engine threads when a transfer succeeds, read when one starts; lock-free.
    final class TransferSizes: Sendable {
        /// Below this average, transfers are kept on the first engine.
        static let smallLimit = 256 << 10
        /// -1 until a transfer has succeeded.
        private let average = Atomic<Int>(-1)

        /// True when transfers have been small lately; false before any has succeeded.
        var areSmall: Bool {
            let average = average.load(ordering: .relaxed)
            return average >= 0 && average < Self.smallLimit
        }

        /// Adds a successful transfer's body size (a lost update under a race only delays the average).
        func record(_ bytes: Int) {
            let old = average.load(ordering: .relaxed)
            average.store(old < 0 ? bytes : old - old / 8 + bytes / 8, ordering: .relaxed)
        }
    }
#endif
