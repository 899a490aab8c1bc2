import Dispatch

/// Where the tasks a queue starts run: a source's reader, an attempt's adapt hooks, a retry decision.
///
/// Not the cooperative pool, which has one thread per core and is the app's: an app that computes there without
/// suspending (a parser, a model, a test) would hold these back, and every request waiting on one with them. Measured
/// before they moved: a queue whose app held both threads of a 2-core pool for a minute sent nothing for that minute
/// (`HeldPoolTests`); now it drains in milliseconds. Each task runs on an executor of its own (a serial dispatch queue),
/// whose threads the pool's work never takes. Code a hook awaits on an actor (the main actor included) still runs
/// there; a hook's child tasks run on its executor, one job at a time.
enum QueueTasks {
    /// Starts `operation` as a task on the library's executor (before macOS 15 and its kin, which have no task
    /// executors, on the pool).
    @discardableResult
    static func start(_ operation: sending @escaping () async -> Void) -> Task<Void, Never> {
        if #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) {
            return Task(executorPreference: QueueTaskExecutor(), operation: operation)
        }
        return Task(operation: operation)
    }
}

/// The executor of one task of ``QueueTasks``: its jobs, in order, on a serial dispatch queue of its own. A serial
/// queue is served by dispatch's overcommitting threads, made when none is free: a concurrent one waits for a free core
/// (with the pool's two threads held, a drain of 20 requests took 9 s where it takes milliseconds), and one serial
/// queue for every task would let a source whose reads block (a pipe) hold every hook back.
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
final class QueueTaskExecutor: TaskExecutor {
    private let queue = DispatchQueue(label: "NetworkQueue.task")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
