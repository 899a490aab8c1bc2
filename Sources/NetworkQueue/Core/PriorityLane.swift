/// Pending ids by priority: one ``PendingList`` per priority in use, highest first. Within one priority,
/// ids keep the order they were added in.
///
/// Almost every queue uses one priority, so a lane usually holds a single list and costs what that list
/// costs; each further priority adds a list (and a short scan of the levels when popping).
struct PriorityLane {
    private struct Level {
        let priority: Int
        var list = PendingList()
    }

    /// Highest priority first.
    private var levels: [Level] = []
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// The index of `priority`'s level, inserting an empty one if needed.
    private mutating func level(_ priority: Int) -> Int {
        if let index = levels.firstIndex(where: { $0.priority <= priority }) {
            if levels[index].priority == priority { return index }
            levels.insert(Level(priority: priority), at: index)
            return index
        }
        levels.append(Level(priority: priority))
        return levels.count - 1
    }

    /// Appends `id` behind the others of `priority`; false (and nothing changes) when it is there already.
    @discardableResult
    mutating func append(_ id: Int, priority: Int) -> Bool {
        let index = level(priority)
        guard levels[index].list.append(id) else { return false }
        count += 1
        return true
    }

    /// True when `id`, added with `priority`, is in the lane.
    func contains(_ id: Int, priority: Int) -> Bool {
        levels.first { $0.priority == priority }?.list.contains(id) ?? false
    }

    /// Removes `id`, which was added with `priority`; false when it is not there.
    @discardableResult
    mutating func remove(_ id: Int, priority: Int) -> Bool {
        guard let index = levels.firstIndex(where: { $0.priority == priority }), levels[index].list.remove(id) else {
            return false
        }
        count -= 1
        return true
    }

    /// Removes and returns the first id of the highest priority: its oldest (`fifo`) or newest.
    mutating func pop(_ order: SchedulingOrder) -> Int? {
        for index in levels.indices where !levels[index].list.isEmpty {
            count -= 1
            return order == .fifo ? levels[index].list.popFirst() : levels[index].list.popLast()
        }
        return nil
    }

    /// As ``pop(_:)``, but the first id for which `isEligible` is true; the others stay in place.
    mutating func pop(_ order: SchedulingOrder, where isEligible: (Int) -> Bool) -> Int? {
        for index in levels.indices where !levels[index].list.isEmpty {
            if let id = levels[index].list.remove(first: order == .fifo, where: isEligible) {
                count -= 1
                return id
            }
        }
        return nil
    }

    /// Removes every id: highest priority first, each priority oldest first.
    mutating func removeAll() -> [Int] {
        defer {
            levels = []
            count = 0
        }
        return levels.flatMap { level in
            var list = level.list
            return list.removeAll()
        }
    }
}
