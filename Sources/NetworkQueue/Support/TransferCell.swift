/// Where a started transfer's handle goes once the transport returns it, and whether the request was
/// ended first. The machine creates one per transfer it starts (``LockedStorage/makeCell()``) and names it in its
/// actions; only the shell calls its methods.
///
/// The state and its lock in one allocation (a ``LockedStorage``), as a ``Locked`` value is: a cell is made for
/// every transfer.
typealias TransferCell = LockedStorage<TransferCellState>

/// What a ``TransferCell`` holds.
struct TransferCellState {
    /// The transport's handle, once attached (and until cancelled).
    var handle: (any TransferHandle)?
    /// True once the transfer was cancelled: a handle attached later is refused.
    var isCancelled = false
}

extension LockedStorage where Value == TransferCellState {
    /// A cell for a transfer about to start: no handle, not cancelled.
    static func makeCell() -> TransferCell { make(TransferCellState()) }

    /// Stores the transport's handle. Returns false when the transfer was cancelled before: the caller
    /// must then cancel `handle` itself.
    func attach(_ handle: any TransferHandle) -> Bool {
        withLock { state in
            guard !state.isCancelled else { return false }
            state.handle = handle
            return true
        }
    }

    /// Marks the transfer cancelled and returns its handle if it was attached (to be cancelled by the
    /// caller, off the lock); a handle attached later is refused by ``attach(_:)``.
    func cancel() -> (any TransferHandle)? {
        withLock { state in
            state.isCancelled = true
            defer { state.handle = nil }
            return state.handle
        }
    }
}
