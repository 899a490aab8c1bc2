/// Pending ids in insertion order, with O(1) append, O(1) amortized pop from either end and O(1) removal
/// by id.
///
/// Removal leaves a tombstone in the slot array instead of shifting it; pops skip tombstones, so every
/// slot is visited at most once. Positions are absolute (`base` + slot index) so that compaction never has
/// to rewrite the index.
struct PendingList<ID: Hashable> {
    private var slots: [ID?] = []
    /// Slots before `head` are consumed.
    private var head = 0
    /// The absolute position of `slots[0]`.
    private var base = 0
    private var positions: [ID: Int] = [:]

    /// The number of ids in the list.
    var count: Int { positions.count }
    var isEmpty: Bool { positions.isEmpty }

    func contains(_ id: ID) -> Bool { positions[id] != nil }

    /// Appends `id`; returns false (and changes nothing) if it is already present.
    @discardableResult
    mutating func append(_ id: ID) -> Bool {
        guard positions[id] == nil else { return false }
        positions[id] = base + slots.count
        slots.append(id)
        return true
    }

    /// Removes `id`; returns false if it was not present.
    @discardableResult
    mutating func remove(_ id: ID) -> Bool {
        guard let position = positions.removeValue(forKey: id) else { return false }
        slots[position - base] = nil
        compactIfNeeded()
        return true
    }

    /// Removes and returns the oldest id.
    mutating func popFirst() -> ID? {
        while head < slots.count {
            let slot = slots[head]
            slots[head] = nil
            head += 1
            if let id = slot {
                positions[id] = nil
                compactIfNeeded()
                return id
            }
        }
        return nil
    }

    /// Removes and returns the newest id.
    mutating func popLast() -> ID? {
        while slots.count > head {
            if let id = slots.removeLast() {
                positions[id] = nil
                compactIfNeeded()
                return id
            }
        }
        return nil
    }

    /// Removes every id, returning them oldest first.
    mutating func removeAll() -> [ID] {
        let ids = slots[head...].compactMap { $0 }
        self = PendingList()
        return ids
    }

    private mutating func compactIfNeeded() {
        if positions.isEmpty {
            // Keep the capacity: a queue that drains usually fills again.
            base += slots.count
            slots.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 1024 && head * 2 > slots.count {
            slots.removeFirst(head)
            base += head
            head = 0
        }
    }
}
