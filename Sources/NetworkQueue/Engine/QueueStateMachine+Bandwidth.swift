/// The queue-wide receive-rate cap (``NetworkQueue/maximumBytesPerSecond``), shared equally among the
/// running transfers through each transfer's own cap (``TransferHandle/setMaximumReceiveRate(_:)``).
struct BandwidthShare {
    /// Bytes per second for the whole queue; nil: none.
    var cap: Int?
    /// The running main transfers, by slot, while a cap is set (stale entries are dropped at the next share).
    var transfers: [Int: TransferCell] = [:]
    /// Transfers started since the last share: they get the current share even when it did not change.
    var fresh: [TransferCell] = []
    /// The share last given, and to how many transfers.
    var given: (share: Int?, count: Int) = (nil, 0)
    /// The cap was removed: the transfers it capped must be told once.
    var mustClear = false
}

extension QueueStateMachine {
    /// Sets the queue-wide cap (nil or ≤ 0: none); running transfers get their new share at once.
    mutating func setMaximumBytesPerSecond(_ cap: Int?, now: Double) -> QueueActions {
        let cap = cap.flatMap { $0 > 0 ? $0 : nil }
        if bandwidth.cap == nil, cap != nil {
            // Transfers already running join the share.
            for (slot, record) in table.records where record.phase == .running {
                if let cell = record.transfer { bandwidth.transfers[slot] = cell }
            }
        }
        if cap == nil, bandwidth.cap != nil { bandwidth.mustClear = true }
        bandwidth.cap = cap
        bandwidth.given = (nil, -1)
        return finishEvent(now)
    }

    /// Gives every running transfer an equal share of the cap when the transfers or the cap changed.
    mutating func shareBandwidth() {
        for (slot, cell) in bandwidth.transfers {
            let record = table.record(at: slot)
            if record?.transfer !== cell || record?.phase != .running { bandwidth.transfers[slot] = nil }
        }
        let cells = Array(bandwidth.transfers.values)
        guard let cap = bandwidth.cap else {
            if bandwidth.mustClear { actions.list.append(.limitRate(cells, nil)) }
            bandwidth = BandwidthShare()
            return
        }
        let share = max(1, cap / max(1, cells.count))
        let fresh = bandwidth.fresh
        bandwidth.fresh = []
        if bandwidth.given.share != share || bandwidth.given.count != cells.count {
            bandwidth.given = (share, cells.count)
            if !cells.isEmpty { actions.list.append(.limitRate(cells, share)) }
        } else if !fresh.isEmpty {
            actions.list.append(.limitRate(fresh, share))
        }
    }
}
