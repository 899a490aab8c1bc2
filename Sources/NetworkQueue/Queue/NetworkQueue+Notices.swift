/// How a transfer's notices reach the queue's machine: at once, or, on an engine thread that batches its events
/// (``EngineWake``), kept until the engine's pass ends and then applied together, under one acquisition of the lock.
extension NetworkQueue {
    /// The notices one engine pass owes a queue (its ``EngineWake/Sink/owner``). Only the engine's thread touches it.
    final class PassNotices: EngineWake.Sink {
        // Unchecked: one thread only (the engine's).
        @exclusivity(unchecked) private var notices: [TransferNotice] = []

        required init() {
            super.init()
            notices.reserveCapacity(16)
        }

        /// Keeps `notice`; body counts of one transfer in a row are kept as one, and so are a split file's connection's
        /// writes through its cursor.
        func keep(_ notice: consuming TransferNotice) {
            if case .reached(let id, let through, let segment) = notice.kind,
                let index = notices.indices.last, notices[index].token == notice.token,
                notices[index].slot == notice.slot,
                case .reached(id, let before, segment) = notices[index].kind
            {
                notices[index].kind = .reached(
                    connection: id, through: max(before, through), segment: segment)
                return
            }
            if case .body(let count) = notice.kind, let index = notices.indices.last,
                notices[index].token == notice.token,
                notices[index].slot == notice.slot, case .body(let before) = notices[index].kind
            {
                notices[index].kind = .body(before + count)
                return
            }
            notices.append(notice)
        }

        /// Hands in the notices kept, and any that handing them in caused (a file's commit), until none is left.
        override func flush() {
            guard let owner else { return }
            let queue = unsafeDowncast(owner, to: NetworkQueue.self)
            if LockCounter.isCounting.load(ordering: .relaxed), !notices.isEmpty {
                LockCounter.passes.add(1, ordering: .relaxed)
            }
            while !notices.isEmpty {
                let actions = queue.locked.withLock { $0.machine.notices(&notices, now: queue.clock.now()) }
                // Moved out by the machine: what is left holds nothing, and its room is kept for the next pass.
                notices.removeAll(keepingCapacity: true)
                queue.perform(actions, inline: true)
            }
        }
    }

    /// Tells the machine of a transfer's `notice`. `batching`: the notice may wait for the end of the calling engine
    /// thread's pass (when the thread is one: other threads' notices go in at once). A split download's connections
    /// never batch: its shell asks the machine directly, and its notices must not overtake what it asked.
    func tell(_ notice: consuming TransferNotice, batching: Bool) {
        if batching, let wake = EngineWake.current {
            wake.sink(of: self, PassNotices.self).keep(notice)
        } else {
            let notice = notice
            send(inline: true) { $0.notice(notice, now: $1) }
        }
    }
}
