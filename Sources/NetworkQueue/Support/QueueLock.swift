import Synchronization

/// A queue's one lock (``Locked``), whose acquisitions are counted while ``LockCounter`` counts: the benchmark's
/// measure of how often a queue's transfers reach its engine.
struct QueueLock<Value>: @unchecked Sendable {
    private let locked: Locked<Value>

    init(_ value: Value) { locked = Locked(value) }

    @inline(__always)
    func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        if LockCounter.isCounting.load(ordering: .relaxed) { LockCounter.acquisitions.add(1, ordering: .relaxed) }
        return try locked.withLock(body)
    }
}

/// Counts, process-wide, the acquisitions of every queue's lock and the engine passes that handed notices to a queue,
/// for the benchmarks (off unless started: a relaxed load per acquisition).
@_spi(Benchmarks) public enum LockCounter {
    static let isCounting = Atomic(false)
    static let acquisitions = Atomic(0)
    static let passes = Atomic(0)
    static let pieces = Atomic(0)
    static let pieceAsks = Atomic(0)
    /// The acquisitions counted when bytes were first counted (applied to a queue's ledger), -1 before.
    static let firstCounted = Atomic(-1)

    /// Notes that a queue's lock was just taken to count bytes: the first time, how many acquisitions it took.
    static func counting() {
        guard isCounting.load(ordering: .relaxed) else { return }
        _ = firstCounted.compareExchange(
            expected: -1, desired: acquisitions.load(ordering: .relaxed), ordering: .relaxed)
    }

    /// The queue-lock acquisitions since ``start()`` before the one that first counted bytes (nil: none was counted).
    public static var acquisitionsBeforeFirstCount: Int? {
        let value = firstCounted.load(ordering: .relaxed)
        return value < 0 ? nil : value - 1
    }

    /// Starts counting from zero.
    public static func start() {
        firstCounted.store(-1, ordering: .relaxed)
        acquisitions.store(0, ordering: .relaxed)
        passes.store(0, ordering: .relaxed)
        pieces.store(0, ordering: .relaxed)
        pieceAsks.store(0, ordering: .relaxed)
        isCounting.store(true, ordering: .relaxed)
    }

    /// Stops counting, and returns what was counted since ``start()``: the queue-lock acquisitions, the engine passes
    /// that handed notices to a queue, the body pieces of split files, and the pieces the engine was asked about (each
    /// one acquisition: a piece past its cursor, or a connection's written bytes heard before its end).
    public static func stop() -> (acquisitions: Int, passes: Int, pieces: Int, pieceAsks: Int) {
        isCounting.store(false, ordering: .relaxed)
        return (
            acquisitions.load(ordering: .relaxed), passes.load(ordering: .relaxed), pieces.load(ordering: .relaxed),
            pieceAsks.load(ordering: .relaxed)
        )
    }
}
