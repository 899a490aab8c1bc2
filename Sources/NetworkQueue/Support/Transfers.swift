/// The transfers one request runs at once, for its HEAD or its attempt: one today; the segments and mirrors of
/// one file will be several transfers of one attempt, with one start, one head and one ending. The first is kept
/// inline, so a set of one allocates nothing.
struct Transfers: Sequence {
    /// The first transfer, nil in an empty set.
    private(set) var first: TransferCell?
    private var others: [TransferCell] = []

    /// An empty set, or a set of `cell`.
    init(_ cell: TransferCell? = nil) { first = cell }

    /// Adds a transfer.
    mutating func insert(_ cell: TransferCell) {
        if first == nil { first = cell } else { others.append(cell) }
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
