/// Deadlines of running transfers in a min-heap, so one timer per queue can serve every timeout.
///
/// Pure: times are passed in. Entries are never removed early; an entry whose transfer has ended is
/// recognised as stale by its token when it comes due, which keeps every operation O(log n).
struct DeadlineHeap<ID: Hashable> {
    struct Entry: Equatable {
        var deadline: Double
        var id: ID
        var token: UInt64
    }

    private var entries: [Entry] = []

    var count: Int { entries.count }
    /// The earliest deadline, or nil when empty.
    var earliest: Double? { entries.first?.deadline }

    mutating func insert(_ entry: Entry) {
        entries.append(entry)
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].deadline < entries[parent].deadline else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns every entry due at `now`, earliest first.
    mutating func popDue(at now: Double) -> [Entry] {
        var due: [Entry] = []
        while let first = entries.first, first.deadline <= now { due.append(removeFirst()) }
        return due
    }

    private mutating func removeFirst() -> Entry {
        let first = entries[0]
        let last = entries.removeLast()
        guard !entries.isEmpty else { return first }
        entries[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < entries.count, entries[left].deadline < entries[smallest].deadline { smallest = left }
            if right < entries.count, entries[right].deadline < entries[smallest].deadline { smallest = right }
            guard smallest != parent else { return first }
            entries.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
