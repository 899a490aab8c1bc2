/// Records in slots: lookups by slot are array reads, freed slots are reused (the queue's requests, by the
/// slot the scheduler knows them by).
struct SlotTable<Record: AnyObject> {
    private var slots: [Record?] = []
    private var free: [Int] = []
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// Stores `record` and returns its slot.
    mutating func insert(_ record: Record) -> Int {
        count += 1
        if let slot = free.popLast() {
            slots[slot] = record
            return slot
        }
        slots.append(record)
        return slots.count - 1
    }

    /// The record in `slot`; the slot must be occupied.
    subscript(slot: Int) -> Record { slots[slot]! }

    /// The record in `slot`, if any.
    func record(at slot: Int) -> Record? { slot >= 0 && slot < slots.count ? slots[slot] : nil }

    /// True when `slot` holds a record.
    func isOccupied(_ slot: Int) -> Bool { record(at: slot) != nil }

    /// Removes and returns the record in `slot`.
    mutating func remove(_ slot: Int) -> Record {
        let record = slots[slot].take()!
        count -= 1
        if count == 0 {
            slots.removeAll(keepingCapacity: true)
            free.removeAll(keepingCapacity: true)
        } else {
            free.append(slot)
        }
        return record
    }

    /// Removes every record, returning the storage so that the caller can free it elsewhere.
    mutating func removeAll() -> [Record?] {
        defer {
            slots = []
            free = []
            count = 0
        }
        return slots
    }

    /// The occupied slots with their records, in slot order.
    var records: some Sequence<(slot: Int, record: Record)> {
        slots.enumerated().lazy.compactMap { slot, record in record.map { (slot, $0) } }
    }
}
