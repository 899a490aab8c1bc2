import Foundation
import Testing

/// Runs a suite on the test lane (threads of the tests' own, one per core as the Swift concurrency pool has, but not
/// the pool) and, when the run says so, within its suite slots.
///
/// - **The lane.** The pool has one thread per core (two on CI), and every task of the process shares it: the
///   tests' bodies, and what the library runs there (a source's reader, a retry decision, an adapt hook). A test
///   that computes without suspending holds a pool thread for that time, and under load that time stretches: at
///   the CI run that failed at 728a00e, under the thread sanitizer, a scheduler test and a list test held both pool
///   threads for over a minute, each needing about a second alone. A lazy source then waited at its first grant
///   for 60 s, and three tests with 60 s limits ran out. On the lane, the tests' own work waits for the tests' own
///   threads, and the pool is left to the library. As many threads as the pool, so that the tests compute no more
///   at once than they did on it: eight made the timed tests (a rate cap's every second) miss their marks, and a
///   thread per test, hundreds at once, made them miss by far.
/// - **The slots.** `NQ_SUITE_SLOTS` (unset or 0: no limit) bounds how many suites run at once. The sanitizers
///   make every step ten times dearer, and the whole suite at once on two cores then stretched single tests past
///   their time windows (a gated transfer past the default 60 s timeout). A suite waits for its slot before its
///   tests start, so the wait counts in no test's time limit.
///
/// The suite's tests run on the lane (their structured child tasks mostly do too, but not always: a run under the
/// thread sanitizer found a task group's children on the pool); unstructured tasks (`Task { }`, the
/// library's own) run on the pool. A test on the lane may block its thread only briefly (waiting for a program or
/// a port is done on a thread of its own, as `LocalServer` does).
public struct TestLaneTrait: SuiteTrait, TestTrait, TestScoping {
    /// How many suites may run at once: `NQ_SUITE_SLOTS`, or no limit when it is unset or 0.
    static let suiteSlots = Slots(count: TestEnvironment.integer("NQ_SUITE_SLOTS", default: 0))
    /// Set while a task holds a suite slot.
    @TaskLocal static var isHoldingSlot = false

    /// Every test of the suite and of the suites inside it.
    public var isRecursive: Bool { true }

    /// The suite itself (its slot) and each test case (the lane); not a test function as a whole.
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        test.isSuite || testCase != nil ? self : nil
    }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        if testCase == nil {
            // A suite inside one that holds a slot (or a suite scoped twice) takes no second one.
            guard !Self.isHoldingSlot else { return try await function() }
            try await Self.suiteSlots.holding { try await Self.$isHoldingSlot.withValue(true) { try await function() } }
        } else {
            try await withTaskExecutorPreference(TestLane.shared) {
                // The preference holds from the task's next enqueue, not at once: without this the test began on
                // the pool thread it was started from, and a test that never suspends ran there whole (a run under
                // the thread sanitizer found the first check of `TestLaneTests` off the lane). A yield enqueues it,
                // so it starts on the lane.
                // Under the thread sanitizer one yield was seen to leave a test on the pool now and then (1 run in 5 of
                // `TestLaneTests` alone): it yields again, a bounded number of times, until it runs on the lane.
                for _ in 0..<100 {
                    await Task.yield()
                    if TestLane.isCurrentThreadOnLane { break }
                }
                try await function()
            }
        }
    }
}

extension Trait where Self == TestLaneTrait {
    /// The suite on the test lane, within the run's suite slots (see ``TestLaneTrait``).
    public static var testLane: Self { TestLaneTrait() }
}

/// At most `count` tasks at once run a body through ``holding(_:)`` (0: no limit); the others wait, first come first
/// served. The suite slots and the heavy tests' one-at-a-time gate (``HeavyTests``) are both made of it.
actor Slots {
    private let count: Int
    private var busy = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(count: Int) { self.count = count }

    /// Runs `body` in a slot, waiting for one first.
    nonisolated func holding<Result>(_ body: () async throws -> Result) async throws -> Result {
        guard count > 0 else { return try await body() }
        await acquire()
        do {
            let result = try await body()
            await release()
            return result
        } catch {
            await release()
            throw error
        }
    }

    private func acquire() async {
        if busy < count {
            busy += 1
        } else {
            // The slot is handed over by `release`, which keeps `busy` as it is.
            await withCheckedContinuation { waiting.append($0) }
        }
    }

    private func release() {
        if waiting.isEmpty { busy -= 1 } else { waiting.removeFirst().resume() }
    }
}

/// The lane's executor: a fixed set of threads taking jobs in the order they came.
public final class TestLane: TaskExecutor, @unchecked Sendable {
    /// The lane every suite's tests run on.
    public static let shared = TestLane(threads: max(2, ProcessInfo.processInfo.activeProcessorCount))
    /// The prefix of the lane's thread names (`test lane 0`, …).
    public static let threadNamePrefix = "test lane"

    /// True when the calling thread is one of the lane's.
    ///
    /// Told by the thread's id, which the lane's threads record as they start, not by its name: in three clean-clone
    /// CI runs under the thread sanitizer, a test that ran on the lane read another name (or none) from
    /// `Thread.current`, and every check of `TestLaneTests` failed, the first included.
    public static var isCurrentThreadOnLane: Bool {
        let current = pthread_self()
        laneThreads.lock.lock()
        defer { laneThreads.lock.unlock() }
        return laneThreads.ids.contains { pthread_equal($0, current) != 0 }
    }

    /// The ids of the lane's threads, each added by the thread itself before it takes a job.
    private static let laneThreads = ThreadIDs()

    /// Unchecked: `ids` is read and written only under `lock`.
    private final class ThreadIDs: @unchecked Sendable {
        let lock = NSLock()
        var ids: [pthread_t] = []
    }

    // Unchecked: `jobs` and `first` are read and written only under `condition`.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var first = 0

    private init(threads: Int) {
        for index in 0..<threads {
            // Named from inside: on Linux a thread named before it starts keeps its creator's name.
            Thread { [self] in
                Thread.current.name = "\(Self.threadNamePrefix) \(index)"
                Self.laneThreads.lock.lock()
                Self.laneThreads.ids.append(pthread_self())
                Self.laneThreads.lock.unlock()
                work()
            }.start()
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func work() {
        while true {
            condition.lock()
            while first == jobs.count { condition.wait() }
            let job = jobs[first]
            first += 1
            if first == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                first = 0
            }
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
