/// Deadlines of running transfers in a min-heap, so one timer per queue can serve every timeout.
///
/// Pure: times are passed in. An entry whose transfer has ended is not removed at once: it is recognised as
/// stale by its stamp when it comes due, or dropped by a bulk ``removeAll(where:)`` when stale entries
/// pile up, which keeps every operation O(log n) amortized.
struct DeadlineHeap<ID: Hashable> {
    struct Entry: Equatable {
        var deadline: Double
        var id: ID
        /// What the entry is valid for: the token of what a request waits for (idle checks, retry times), or the
        /// request's sequence number (its deadline).
        var stamp: UInt64
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

    /// Removes every entry that `isStale` says is no longer needed, then restores the heap order.
    mutating func removeAll(where isStale: (Entry) -> Bool) {
        entries.removeAll(where: isStale)
        for index in stride(from: entries.count / 2 - 1, through: 0, by: -1) { siftDown(from: index) }
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
        siftDown(from: 0)
        return first
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < entries.count, entries[left].deadline < entries[smallest].deadline { smallest = left }
            if right < entries.count, entries[right].deadline < entries[smallest].deadline { smallest = right }
            guard smallest != parent else { return }
            entries.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
