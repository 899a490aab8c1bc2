extension QueueStateMachine {
    // MARK: Progress coalescing

    /// A request's bytes moved. Its counters and handlers are published at the next flush (or at its end),
    /// not per chunk: it is listed for that flush once, and the queue's progress is marked due.
    mutating func noteProgress(_ slot: Int, download: Bool, at now: Double) {
        listForFlush(slot)
        if download { table[slot].downloadDirty = true } else { table[slot].uploadDirty = true }
        markProgressDirty(at: now)
    }

    /// Lists a request for the next flush, which publishes its status.
    mutating func listForFlush(_ slot: Int) {
        guard !table[slot].isListedDirty else { return }
        table[slot].isListedDirty = true
        dirtySlots.append(slot)
    }

    /// The queue's progress changed: make sure a flush is due, no sooner than the throttle allows.
    mutating func markProgressDirty(at now: Double) {
        progressDirty = true
        guard flushDue == nil, let delay = throttle.change(at: now) else { return }
        flushDue = now + delay
    }

    /// Publishes each request with unreported bytes and posts its handlers' updates, then the queue's.
    mutating func flushProgress(at now: Double) {
        flushDue = nil
        throttle.flushed(at: now)
        for slot in dirtySlots where table.isOccupied(slot) && table[slot].isListedDirty {
            let record = table[slot]
            record.isListedDirty = false
            let status = record.status()
            actions.list.append(.publish(record.request, status))
            if record.uploadDirty, record.request.uploadProgressHandler != nil {
                post(.uploadProgress(record.request, status.upload))
            }
            if record.downloadDirty, record.request.downloadProgressHandler != nil {
                post(.downloadProgress(record.request, status.download))
            }
            record.uploadDirty = false
            record.downloadDirty = false
        }
        dirtySlots.removeAll(keepingCapacity: true)
        if progressDirty, inDrain {
            progressDirty = false
            postEvent(.didUpdateProgress(ledger.snapshot(at: now)))
        }
    }
}
