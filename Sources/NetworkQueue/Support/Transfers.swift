/// The transfers one request runs at once, for its HEAD or its attempt: one, or the connections of a split download
/// (``SplitMachine``), several transfers of one attempt with one start, one head and one ending. The first is kept
/// inline, so a set of one allocates nothing.
struct Transfers: Sequence {
    /// The first transfer, nil in an empty set.
    private(set) var first: TransferCell?
    private var others: [TransferCell] = []

    /// An empty set, or a set of `cell`.
    init(_ cell: TransferCell? = nil) { first = cell }

    /// Adds a transfer (once).
    mutating func insert(_ cell: TransferCell) {
        if contains(cell) { return }
        if first == nil { first = cell } else { others.append(cell) }
    }

    /// Removes a transfer (stopped, or ended).
    mutating func remove(_ cell: TransferCell) {
        if first === cell {
            first = others.isEmpty ? nil : others.removeFirst()
        } else {
            others.removeAll { $0 === cell }
        }
    }

    /// True when `cell` is one of the set.
    func contains(_ cell: TransferCell) -> Bool { first === cell || others.contains { $0 === cell } }

    func makeIterator() -> Iterator { Iterator(transfers: self) }

    /// The first transfer, then the others in the order they were added.
    struct Iterator: IteratorProtocol {
        let transfers: Transfers
        private var position = -1

        init(transfers: Transfers) { self.transfers = transfers }

        mutating func next() -> TransferCell? {
            defer { position += 1 }
            if position < 0 { return transfers.first }
            return position < transfers.others.count ? transfers.others[position] : nil
        }
    }
}
