/// The sources being read (``NetworkQueue/add(contentsOf:)-(Source)``), by id.
///
/// A source is read in batches, and only while the queue has room: the requests not ended plus the reads granted
/// stay within the queue's look-ahead (``Room/readAhead``). Its reader asks before each batch (``ask(_:room:)``)
/// and is granted a number of reads; a reader told to wait is granted its batch later (``grantWaiting(room:)``).
/// A pure book: the queue's machine keeps the progress and the actions.
struct SourceBook {
    struct Source {
        /// Reads granted and not yet given back (by adding what was read).
        var granted = 0
        /// Requests it announced and has not given yet.
        var unread: Int
    }

    /// What the queue holds now, which the reads granted must fit beside.
    struct Room {
        /// The most requests read from sources and not yet ended, reads granted included.
        var readAhead: Int
        /// The requests in the queue, whatever their phase.
        var requests: Int
        /// The requests waiting for a slot.
        var pending: Int
    }

    /// What a source's reader does next.
    enum ReadDecision: Equatable {
        /// Read up to this many requests now, then add them.
        case read(Int)
        /// Wait: a `.readSource` action grants the reads when there is room.
        case wait
        /// Stop: the source was stopped (``NetworkQueue/cancelAll()``, ``NetworkQueue/reset()``, a failure
        /// with cancel-all-on-failure). Its `next()` is never called again.
        case stop
    }

    private(set) var open: [Int: Source] = [:]
    private var nextID = 0
    /// Sources whose readers wait for room, first come first served: a source that read does not pass
    /// one that waits.
    private(set) var line: [Int] = []
    /// Reads granted to every source and not given back: room the queue keeps for them.
    private(set) var reserved = 0
    /// Failures of sources that ended before the drain was started, in order: heard when it starts.
    var heldFailures: [NetworkQueueError.UnderlyingError] = []

    var isEmpty: Bool { open.isEmpty && heldFailures.isEmpty }
    func isOpen(_ id: Int) -> Bool { open[id] != nil }

    /// How many reads may be granted in `room` (0: none): a full batch (half the look-ahead, so that a reader
    /// wakes once per batch), or whatever room is left when the queue is about to run dry.
    private func grantable(_ room: Room) -> Int {
        let batch = max(1, room.readAhead / 2)
        // Every request not ended counts (running, waiting to retry, paused): counting only those waiting for a
        // slot, a queue that starts whatever it reads would read on without end.
        let left = room.readAhead - room.requests - reserved
        guard left >= batch || (left > 0 && room.pending < batch) else { return 0 }
        return min(left, batch)
    }

    /// Opens a source that announced `expected` requests (0: unknown). Returns its id.
    mutating func open(announcing expected: Int) -> Int {
        defer { nextID += 1 }
        // Its reader asks before its first read.
        open[nextID] = Source(unread: max(0, expected))
        return nextID
    }

    /// The reader of source `id` asks how many requests it may read. It waits behind the sources waiting
    /// already, so that several sources take turns.
    mutating func ask(_ id: Int, room: Room) -> ReadDecision {
        guard open[id] != nil else { return .stop }
        let count = grantable(room)
        if let place = line.firstIndex(of: id) {
            // Asked again while in line: its turn only at the head.
            guard place == 0, count > 0 else { return .wait }
            line.removeFirst()
        } else if !line.isEmpty || count == 0 {
            line.append(id)
            return .wait
        }
        grant(count, to: id)
        return .read(count)
    }

    private mutating func grant(_ count: Int, to id: Int) {
        open[id]?.granted += count
        reserved += count
    }

    /// Source `id` read `count` of its granted requests, which the caller adds now: that much of its grant is
    /// given back.
    mutating func read(_ id: Int, count: Int) {
        guard let source = open[id] else { return }
        let given = min(count, source.granted)
        reserved -= given
        open[id]?.granted -= given
    }

    /// A request of source `id` joined the queue. Returns true when it was one it announced.
    mutating func gave(_ id: Int) -> Bool {
        guard let source = open[id], source.unread > 0 else { return false }
        open[id]?.unread -= 1
        return true
    }

    /// Closes source `id`. Returns it, if it was open.
    mutating func close(_ id: Int) -> Source? {
        guard let source = open.removeValue(forKey: id) else { return nil }
        line.removeAll { $0 == id }
        reserved -= source.granted
        return source
    }

    /// Stops every source. Returns them, each with what it had still to give.
    mutating func stopAll() -> [(id: Int, unread: Int)] {
        defer {
            open.removeAll()
            line.removeAll()
            reserved = 0
        }
        return open.map { ($0.key, $0.value.unread) }
    }

    /// Grants reads to waiting sources while there is `room`, in the order they began to wait. Returns each
    /// grant (`room` counts the queue's requests, which the reads do not change).
    mutating func grantWaiting(room: Room) -> [(id: Int, count: Int)] {
        var grants: [(id: Int, count: Int)] = []
        while let id = line.first {
            let count = grantable(room)
            guard count > 0 else { break }
            line.removeFirst()
            guard open[id] != nil else { continue }
            grant(count, to: id)
            grants.append((id, count))
        }
        return grants
    }
}
