import Foundation
import Testing

/// Admits each test function into one of the run's test slots before it starts, runs it on its slot's own thread,
/// and records how long each waited and ran.
///
/// Swift Testing starts every test of a run at once, and a test's time limit runs from its start: with 800 tests on two
/// cores, a test that waited behind the others reached its limit before it had run a second. Here a test function
/// waits for its slot before its time limit starts (the limit is set on each test case, inside this scope), so the
/// wait counts in no test's limit. Once admitted it runs on its slot's thread, which no other test uses: it shares the
/// cores with at most ``testSlots`` − 1 other tests (the kernel shares them fairly between the slots' threads),
/// whatever the run's size or the machine's speed, and never waits behind another test's jobs in a queue. (Swift
/// Testing's own "passed after" line counts from the moment it started the test, the wait for a slot included: the
/// record below gives the two apart.)
///
/// - The slots: `NQ_TEST_SLOTS`, default ``defaultSlotsPerCore`` for each core the process may run on; 0 means no limit (every test at
///   once, on the Swift concurrency pool). The cases of a parameterized test share its slot and run at once.
/// - The record: with `NQ_TEST_TIMES` naming a file, each test function appends a line when it ends: the seconds it
///   waited for its slot, the seconds it ran, and its name (`.ci/stress` prints the slowest).
///
/// The library's own tasks (a source's reader, a hook, a retry decision) run on executors of its own, not on a test's
/// thread or the pool: a test that computes holds no queue back.
public struct AdmissionTrait: SuiteTrait, TestTrait, TestScoping {
    /// How many tests a run admits at once for each core, by default.
    public static let defaultSlotsPerCore = 2

    /// How many tests may run at once: `NQ_TEST_SLOTS`, else ``defaultSlotsPerCore`` for each core the process may run
    /// on (``TestEnvironment/cores``).
    public static let testSlots = TestEnvironment.integer(
        "NQ_TEST_SLOTS", default: defaultSlotsPerCore * TestEnvironment.cores)

    /// The slots, each a thread of its own.
    static let slots = SlotPool((0..<max(0, testSlots)).map { TestThread(name: "test slot \($0)") })

    /// The slots' threads.
    static let threads = slots.all

    /// True when the calling thread is one of the slots' (false with no slots).
    public static var isOnASlotsThread: Bool { threads.contains { $0.isCurrent } }

    /// How many tests hold a slot now.
    public static var admittedCount: Int { get async { await slots.busy } }

    /// Every test of the suite and of the suites inside it.
    public var isRecursive: Bool { true }

    /// Each test function as a whole (its slot and its record); not a suite, and not a test case, whose scope runs
    /// inside the time limit.
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil && !test.isSuite ? self : nil
    }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        let asked = ContinuousClock.now
        guard Self.testSlots > 0 else { return try await run(test, asked: asked, function) }
        try await Self.slots.holding { thread in
            try await withTaskExecutorPreference(thread) {
                // The preference holds from the task's next enqueue, not at once: a yield moves it onto the thread
                // (again if a run under the thread sanitizer finds it elsewhere, a bounded number of times).
                for _ in 0..<100 {
                    await Task.yield()
                    if thread.isCurrent { break }
                }
                try await run(test, asked: asked, function)
            }
        }
    }

    private func run(_ test: Test, asked: ContinuousClock.Instant, _ function: () async throws -> Void) async throws {
        let started = ContinuousClock.now
        defer {
            TestTimes.record(
                test, waited: seconds(asked.duration(to: started)), ran: seconds(started.duration(to: .now)))
        }
        try await function()
    }

    private func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

extension Trait where Self == AdmissionTrait {
    /// Each test of the suite waits for one of the run's test slots and runs on its thread (see ``AdmissionTrait``).
    public static var admitted: Self { AdmissionTrait() }
}

/// The file `NQ_TEST_TIMES` names, if any: a line a test function, `waited ran name`, appended as each ends (one
/// `write` a line, to a file opened to append: lines from tests ending at once never mix).
enum TestTimes {
    private static let descriptor: Int32? = {
        guard let path = ProcessInfo.processInfo.environment["NQ_TEST_TIMES"], !path.isEmpty else { return nil }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        return descriptor >= 0 ? descriptor : nil
    }()

    static func record(_ test: Test, waited: Double, ran: Double) {
        guard let descriptor else { return }
        let name = "\(test.id.moduleName).\(test.id.nameComponents.joined(separator: "."))"
        let line = String(format: "%.3f %.3f ", waited, ran) + name + "\n"
        _ = line.utf8CString.withUnsafeBufferPointer { write(descriptor, $0.baseAddress, $0.count - 1) }
    }
}

/// Slots handed to one task at a time, first come first served: the test slots (a thread each) and the heavy tests'
/// one-at-a-time gate (``HeavyTests``).
actor SlotPool<Slot: Sendable> {
    /// Every slot, held or free.
    nonisolated let all: [Slot]
    private var free: [Slot]
    private var waiting: [CheckedContinuation<Slot, Never>] = []

    init(_ slots: [Slot]) {
        all = slots
        free = slots
    }

    /// How many slots are held now.
    var busy: Int { all.count - free.count }

    /// Runs `body` with a slot, waiting for one first.
    nonisolated func holding<Result>(_ body: (Slot) async throws -> Result) async throws -> Result {
        let slot = await acquire()
        do {
            let result = try await body(slot)
            await release(slot)
            return result
        } catch {
            await release(slot)
            throw error
        }
    }

    private func acquire() async -> Slot {
        if let slot = free.popLast() { return slot }
        // Handed over by `release`.
        return await withCheckedContinuation { waiting.append($0) }
    }

    private func release(_ slot: Slot) {
        if waiting.isEmpty { free.append(slot) } else { waiting.removeFirst().resume(returning: slot) }
    }
}

/// A thread of its own as a task executor: the jobs of the task that prefers it, in the order they came.
final class TestThread: TaskExecutor, @unchecked Sendable {
    // Unchecked: `jobs`, `first` and `thread` are read and written only under `condition`.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var first = 0
    private var thread: pthread_t?

    init(name: String) {
        // Named from inside: on Linux a thread named before it starts keeps its creator's name.
        Thread { [self] in
            Thread.current.name = name
            condition.lock()
            thread = pthread_self()
            condition.unlock()
            work()
        }.start()
    }

    /// True when the calling thread is this executor's.
    var isCurrent: Bool {
        condition.lock()
        defer { condition.unlock() }
        return thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false
    }

    func enqueue(_ job: consuming ExecutorJob) {
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
