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
                guard let rateCap = transfer.rateCap else { continue }
                if transfer.isPaused {
                    // Paused by its owner: it holds up nobody in the rate cap's line.
                    rateCap.leave(transfer.consumer)
                    continue
                }
                guard rateCap.delayUntilAvailable(for: transfer.consumer) == 0 else { continue }
                starved.removeAll { $0 === transfer }
                transfer.isStarved = false
                // libcurl delivers the bytes it held from inside this call; the transfer may be refused again.
                _ = library.easyPause(easy, 0)
            }
            // Those still held (or held again just now) say when the next tokens come.
            var wait = 0.1
            for transfer in starved {
                guard let rateCap = transfer.rateCap, !transfer.isPaused else { continue }
                wait = min(wait, rateCap.delayUntilAvailable(for: transfer.consumer))
            }
            return max(wait, 0.001)
        }
    }
#endif
