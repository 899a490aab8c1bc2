/// Pending ids in insertion order, with O(1) append, O(1) amortized pop from either end and O(1) removal
/// by id.
///
/// Ids are small non-negative integers (the queue's request slots, which are reused), so the position of
/// each id lives in an array indexed by the id: no hashing. Removal leaves a tombstone in the slot array
/// instead of shifting it; pops skip tombstones, so every slot is visited at most once. Positions are
/// absolute (`base` + slot index) so that compaction never has to rewrite them.
struct PendingList {
    private var slots: [Int] = []
    /// Slots before `head` are consumed.
    private var head = 0
    /// The absolute position of `slots[0]`.
    private var base = 0
    /// `positions[id]` is the absolute position of `id`, or -1 when absent.
    private var positions: [Int] = []
    private(set) var count = 0

    private static let tombstone = -1

    var isEmpty: Bool { count == 0 }

    func contains(_ id: Int) -> Bool { position(of: id) != nil }

    private func position(of id: Int) -> Int? {
        guard id >= 0, id < positions.count, positions[id] >= 0 else { return nil }
        return positions[id]
    }

    /// Appends `id` (non-negative); returns false (and changes nothing) if it is already present.
    @discardableResult
    mutating func append(_ id: Int) -> Bool {
        precondition(id >= 0, "pending ids are non-negative")
        guard position(of: id) == nil else { return false }
        if id >= positions.count { positions.append(contentsOf: repeatElement(-1, count: id + 1 - positions.count)) }
        positions[id] = base + slots.count
        slots.append(id)
        count += 1
        return true
    }

    /// Removes `id`; returns false if it was not present.
    @discardableResult
    mutating func remove(_ id: Int) -> Bool {
        guard let position = position(of: id) else { return false }
        positions[id] = -1
        slots[position - base] = Self.tombstone
        count -= 1
        compactIfNeeded()
        return true
    }

    /// Removes and returns the oldest id.
    mutating func popFirst() -> Int? {
        while head < slots.count {
            let id = slots[head]
            slots[head] = Self.tombstone
            head += 1
            if id != Self.tombstone { return taken(id) }
        }
        return nil
    }

    /// Removes and returns the newest id.
    mutating func popLast() -> Int? {
        while slots.count > head {
            let id = slots.removeLast()
            if id != Self.tombstone { return taken(id) }
        }
        return nil
    }

    /// Removes and returns the oldest (`first`) or newest id for which `isEligible` is true, skipping the
    /// others, which stay in place. O(ids skipped).
    mutating func remove(first: Bool, where isEligible: (Int) -> Bool) -> Int? {
        // Tombstones at the ends (left by earlier removals) are dropped first, so that a lane popped only this
        // way does not scan them again on every pop.
        while head < slots.count, slots[head] == Self.tombstone { head += 1 }
        while slots.count > head, slots[slots.count - 1] == Self.tombstone { slots.removeLast() }
        var index = first ? head : slots.count - 1
        while index >= head && index < slots.count {
            let id = slots[index]
            if id != Self.tombstone, isEligible(id) {
                remove(id)
                return id
            }
            index += first ? 1 : -1
        }
        return nil
    }

    /// Removes every id, returning them oldest first.
    mutating func removeAll() -> [Int] {
        let ids = slots[head...].filter { $0 != Self.tombstone }
        self = PendingList()
        return ids
    }

    private mutating func taken(_ id: Int) -> Int {
        positions[id] = -1
        count -= 1
        compactIfNeeded()
        return id
    }

    private mutating func compactIfNeeded() {
        if count == 0 {
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
