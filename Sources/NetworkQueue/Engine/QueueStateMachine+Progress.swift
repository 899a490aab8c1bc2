extension QueueStateMachine {
    // MARK: Progress coalescing: a request's counters and handlers are published at the next flush (or at its
    // end), not per chunk (see ProgressFlush).

    /// Publishes each request with unreported bytes and posts its handlers' updates, then the queue's.
    mutating func flushProgress(at now: Double) {
        for slot in flush.flush(at: now) where table.isOccupied(slot) && table[slot].isListedDirty {
            let record = table[slot]
            record.isListedDirty = false
            // Made once and read from where it is published: no second copy of the status.
            let published = NetworkRequest.PublishedStatus(record.status())
            actions.list.append(.publish(record.request, published))
            if record.uploadDirty, record.request.uploadProgressHandler != nil {
                outbox.post(.uploadProgress(record.request, published.status.upload))
            }
            if record.downloadDirty, record.request.downloadProgressHandler != nil {
                outbox.post(.downloadProgress(record.request, published.status.download))
            }
            record.uploadDirty = false
            record.downloadDirty = false
        }
        if flush.queueChanged, inDrain {
            flush.queueChanged = false
            outbox.post(.didUpdateProgress(ledger.snapshot(at: now)))
        }
    }
}
