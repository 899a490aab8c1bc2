#if os(Linux)
    import CurlShim
    import Foundation
    import FoundationNetworking
    import Glibc

    extension CurlEngine {
        // MARK: The rate cap (engine thread)

        /// Notes a transfer whose write callback was refused tokens (libcurl now holds its bytes).
        func starve(_ transfer: CurlTransfer) {
            if !starved.contains(where: { $0 === transfer }) { starved.append(transfer) }
        }

        /// Resumes held transfers that may draw now, first refused first, and returns how long the loop may
        /// wait before it looks again (at most 0.1 s, so a cap raised or removed is seen soon).
        func feedStarved() -> Double {
            for transfer in starved {
                guard transfer.isStarved, let easy = transfer.easy, !transfer.isCancelled else {
                    starved.removeAll { $0 === transfer }
                    continue
                }
                guard let limiter = transfer.limiter else { continue }
                if transfer.shared.withLock({ $0.isPaused }) {
                    // Paused by its owner: it holds up nobody in the limiter's line.
                    limiter.leave(transfer.consumer)
                    continue
                }
                guard limiter.delayUntilAvailable(for: transfer.consumer) == 0 else { continue }
                starved.removeAll { $0 === transfer }
                transfer.isStarved = false
                // libcurl delivers the bytes it held from inside this call; the transfer may be refused again.
                _ = library.easyPause(easy, 0)
            }
            // Those still held (or held again just now) say when the next tokens come.
            var wait = 0.1
            for transfer in starved {
                guard let limiter = transfer.limiter, !transfer.shared.withLock({ $0.isPaused }) else { continue }
                wait = min(wait, limiter.delayUntilAvailable(for: transfer.consumer))
            }
            return max(wait, 0.001)
        }
    }
#endif
