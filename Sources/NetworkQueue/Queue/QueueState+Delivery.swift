import Foundation

extension QueueState {
    /// Appends an item to the ordered outbox, asking for a delivery pass if none is pending.
    mutating func post(_ item: Delivery, _ fx: inout Effects) {
        outbox.append(item)
        if !deliveryScheduled {
            deliveryScheduled = true
            fx.deliver = true
        }
    }

    /// Posts a queue event, unless nobody can receive it: no delegate, no ``NetworkQueue/events()``
    /// subscriber and, for a request's completion, no handler. Skipping saves a delivery pass per event
    /// for headless queues; a delegate hears the events that happen while it is set. Progress always goes
    /// out (already coalesced), since ``NetworkQueue/foundationProgress`` follows it.
    mutating func postEvent(_ event: NetworkQueueEvent, for request: NetworkRequest? = nil, _ fx: inout Effects) {
        let hasHandler: Bool
        switch event {
        case .didFinish, .didFail: hasHandler = request?.completionHandler != nil
        case .progress: hasHandler = true
        case .didStart, .didReceiveHeaders, .queueDidFinish: hasHandler = false
        }
        guard hasHandler || delegate != nil || !subscribers.isEmpty else { return }
        post(.event(event), &fx)
    }

    /// Takes everything posted so far, for one delivery pass.
    mutating func takeOutbox() -> [Delivery] {
        deliveryScheduled = false
        defer { outbox = [] }
        return outbox
    }

    /// A request's bytes moved. Its counters and handlers are published at the next flush (or at its end),
    /// not per chunk: it is listed for that flush once, and the queue's progress is marked due.
    mutating func noteProgress(_ record: Record, download: Bool, at now: Double, _ fx: inout Effects) {
        if !record.uploadDirty, !record.downloadDirty { dirtyRecords.append(ID(record.request)) }
        if download { record.downloadDirty = true } else { record.uploadDirty = true }
        markProgressDirty(at: now, &fx)
    }

    /// The queue's progress changed: make sure a flush is scheduled, no sooner than the throttle allows.
    mutating func markProgressDirty(at now: Double? = nil, _ fx: inout Effects) {
        progressDirty = true
        guard !progressThrottle.isScheduled else { return }
        if let delay = progressThrottle.change(at: now ?? Self.now()) { fx.progressFlush = delay }
    }

    /// Posts one coalesced update per request with unreported bytes, then one for the queue.
    mutating func flushProgress(_ fx: inout Effects) {
        let now = Self.now()
        progressThrottle.flushed(at: now)
        for id in dirtyRecords {
            guard let record = records[id], record.uploadDirty || record.downloadDirty else { continue }
            let (upload, download) = record.publishProgress()
            if record.uploadDirty, record.request.uploadProgressHandler != nil {
                post(.uploadProgress(record.request, upload), &fx)
            }
            if record.downloadDirty, record.request.downloadProgressHandler != nil {
                post(.downloadProgress(record.request, download), &fx)
            }
            record.uploadDirty = false
            record.downloadDirty = false
        }
        dirtyRecords.removeAll(keepingCapacity: true)
        if progressDirty, inDrain {
            progressDirty = false
            postEvent(.progress(ledger.snapshot(at: now)), &fx)
        }
    }
}
