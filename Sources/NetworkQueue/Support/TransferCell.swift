/// Where a started transfer's handle goes once the transport returns it, and whether the request was
/// ended first. The machine creates one per transfer it starts and names it in its actions; only the
/// shell calls its methods.
final class TransferCell: Sendable {
    private let state = Locked((handle: (any TransferHandle)?.none, isCancelled: false))

    /// Stores the transport's handle. Returns false when the transfer was cancelled before: the caller
    /// must then cancel `handle` itself.
    func attach(_ handle: any TransferHandle) -> Bool {
        state.withLock { state in
            guard !state.isCancelled else { return false }
            state.handle = handle
            return true
        }
    }

    /// Marks the transfer cancelled and returns its handle if it was attached (to be cancelled by the
    /// caller, off the lock); a handle attached later is refused by ``attach(_:)``.
    func cancel() -> (any TransferHandle)? {
        state.withLock { state in
            state.isCancelled = true
            defer { state.handle = nil }
            return state.handle
        }
    }
}
