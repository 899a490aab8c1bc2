import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Streamed sources: requests read only as the queue needs them, so that a batch of millions costs what its
/// window costs.
extension NetworkQueue {
    /// Adds the requests of `source`, read only as the queue needs them: a batch of any length in the memory
    /// of its window.
    ///
    /// The queue reads while the requests not yet ended leave room within its look-ahead: 32 per slot of
    /// ``maxConcurrentRequestCount``, at least 256 and at most 16,384. So at most that many requests are read and
    /// not yet ended (running ones included), whatever the source's length and the limit. Reads are granted in
    /// batches of up to half of it, and each request is added as soon as it is read, so a slow source's requests
    /// start as they come. A request read from a source is added as
    /// ``add(_:)-(NetworkRequest)`` adds it, and then behaves as any other: ``order`` and priorities apply to
    /// the requests read so far, and with ``showsAccurateProgress`` on it gets its HEAD before its GET, also
    /// when it is read after ``go()``.
    ///
    /// - The queue reads while suspended too (up to the look-ahead), so that ``go()`` finds work waiting.
    /// - Several sources may be added, to one drain or over time; each is read by one task, one request at a
    ///   time, and their requests interleave as they are read.
    /// - The drain (``run()``, `queueDidFinish`) waits for every source to end. Until then
    ///   ``QueueProgress/isTotalFinal`` is false and the fraction stays below 1.0; see
    ///   ``add(contentsOf:expectedCount:)`` to have it count the requests still to come.
    /// - A source that throws is read no further: the delegate hears ``NetworkQueueDelegate/networkQueue(_:sourceDidFail:)``
    ///   with ``NetworkQueueError/sourceFailed(_:)``, and with ``cancelsAllOnFailure`` on every request ends with
    ///   ``NetworkQueueError/cancelledBecauseSourceFailed`` and the other sources stop. A request that was added
    ///   before (`alreadyAdded`) fails the source the same way; one whose file another request is writing
    ///   fails alone with ``NetworkQueueError/InvalidRequestReason/destinationInUse(_:)``.
    /// - Nothing of a source is reported before the first ``go()`` of the drain: a source that ends or throws while
    ///   the queue has not been started is heard at `go()` (its ``NetworkQueueDelegate/networkQueue(_:sourceDidFail:)``,
    ///   then `queueDidFinish`), so a listener that subscribes after adding hears every event. (A ``cancelAll()``
    ///   or ``reset()`` that empties the queue before then ends the drain at once, with those events.)
    /// - ``cancelAll()`` and ``reset()`` stop every source: its `next()` is not called again, and every request
    ///   it gave ends with one event. A `next()` under way is cancelled, and so is one its reader was starting on
    ///   another thread as the stop came (it may begin just after the stop returns); a request either still returns
    ///   was never read by the queue: it is not added and shows ``NetworkRequest/State/cancelled``.
    /// - The queue holds the source until it ends or is stopped.
    /// - Each source is read by a task of the queue's own, not on the cooperative pool: an app that computes there
    ///   does not hold the reading back, and a `next()` that blocks (a pipe read) holds only its own source.
    ///
    /// ```swift
    /// // Made one at a time, as the queue reads them: a million requests never exist at once.
    /// queue.add(contentsOf: (1...1_000_000).lazy.map { NetworkRequest(url: URL(string: "https://cdn.example/img/\($0).jpg")!) })
    /// queue.go()
    /// await queue.run()
    /// ```
    public func add<Source: AsyncSequence & Sendable>(contentsOf source: Source)
    where Source.Element == NetworkRequest {
        add(contentsOf: source, expectedCount: 0)
    }

    /// Adds the requests of `source` as ``add(contentsOf:)-(Source)`` does, announcing that it will give about
    /// `expectedCount` of them (the lines of a list counted beforehand, say).
    ///
    /// Until they are read, the announced requests count in ``QueueProgress/estimatedRequestCount`` and in the
    /// fraction's remaining work (each weighing the mean size learned so far), so that the fraction of a long
    /// source moves at the pace of the whole batch. The count is a hint: a source that gives more or fewer
    /// is read to its end all the same. Zero or less announces nothing.
    public func add<Source: AsyncSequence & Sendable>(contentsOf source: Source, expectedCount: Int)
    where Source.Element == NetworkRequest {
        startReading(source, expectedCount: expectedCount)
    }

    /// Adds the requests of a synchronous sequence as ``add(contentsOf:)-(Source)`` adds an asynchronous one: read only
    /// as the queue needs them.
    ///
    /// The sequence is handed over (`sending`), not required to be `Sendable`: a lazy sequence such as
    /// `(1...n).lazy.map { … }`, whose closure makes each request, is read as it is, one request made per read.
    /// (With a `Sendable` requirement Swift would pick the eager `map` for such a line, and build every request
    /// before the call.) Its `underestimatedCount` is announced as ``add(contentsOf:expectedCount:)`` does.
    public func add<Requests: Sequence>(contentsOf requests: sending Requests)
    where Requests.Element == NetworkRequest {
        let expected = requests.underestimatedCount
        startReading(SynchronousSource(base: requests), expectedCount: expected)
    }

    /// Opens a source in the machine and starts its reader task, which owns `source` from then on.
    private func startReading<Source: AsyncSequence>(_ source: sending Source, expectedCount: Int)
    where Source.Element == NetworkRequest {
        let id = send(.openSource(announcing: expectedCount)).sourceID ?? 0
        // Its type erased here, so that the task (which owns it from now on) captures no generic type.
        var iterator = source.makeAsyncIterator()
        let next: () async throws -> NetworkRequest? = { try await iterator.next() }
        let task = QueueTasks.start { await self.read(next, id: id) }
        let isOpen = locked.withLock { core in
            guard core.machine.sources.isOpen(id) else { return false }
            core.readerTasks[id] = task
            return true
        }
        // Stopped before the task was recorded: it stops at its first ask, or at once if it is reading.
        if !isOpen { task.cancel() }
    }

    /// How a source ended, if it did.
    private enum Ending {
        case finished
        case failed(any Error)
    }

    /// Reads the source `id` (its `next()`) while the queue lets it: a grant of reads at a time, each request
    /// added as soon as it is read, so that a slow source's requests start at once and none waits in the
    /// reader for the rest of its grant.
    private func read(_ next: () async throws -> NetworkRequest?, id: Int) async {
        while true {
            var count = await grantedReads(id)
            guard count > 0 else {
                // Stopped: the machine has closed the source.
                _ = locked.withLock { $0.readerTasks.removeValue(forKey: id) }
                return
            }
            // Stopped meanwhile (the task is cancelled then): no further `next()`.
            while count > 0, !Task.isCancelled {
                let request: NetworkRequest?
                do {
                    request = try await next()
                } catch {
                    _ = admit(nil, from: id, ending: .failed(error))
                    return
                }
                guard let request else {
                    _ = admit(nil, from: id, ending: .finished)
                    return
                }
                guard admit(request, from: id, ending: nil) else { return }
                count -= 1
            }
            // A source that never suspends (a synchronous sequence, a file read in chunks) would hold its thread from
            // grant to grant: other tasks, other sources' readers among them, get a turn.
            await Task.yield()
        }
    }

    /// Waits until source `id` may read: returns how many requests, or 0 when it is stopped.
    private func grantedReads(_ id: Int) async -> Int {
        await withCheckedContinuation { (reader: CheckedContinuation<Int, Never>) in
            // Stored under the lock that decides the wait: the grant (an action of a later event) finds it.
            let decision = locked.withLock { core in
                let decision = core.machine.sources.ask(id, room: core.machine.readRoom)
                if decision == .wait { core.readers[id] = reader }
                return decision
            }
            switch decision {
            case .read(let count): reader.resume(returning: count)
            case .stop: reader.resume(returning: 0)
            case .wait: break
            }
        }
    }

    /// Adds `request`, just read from source `id`, in one event, and closes the source when `ending` says it
    /// ended. Returns false when the source is over (stopped, or failed here).
    private func admit(_ request: NetworkRequest?, from id: Int, ending: Ending?) -> Bool {
        var request = request
        var ending = ending
        if let added = request {
            do {
                try markAdded(added)
            } catch {
                // A request added before cannot join: the source fails before it.
                request = nil
                ending = .failed(error)
            }
        }
        let found = request.map(destinationAtAdd(of:)) ?? DestinationAtAdd()
        let added = locked.withLock { core -> (slot: Int?, actions: QueueActions)? in
            guard core.machine.sources.isOpen(id) else { return nil }
            let now = clock.now()
            var slot: Int?
            if let request {
                core.machine.sources.read(id, count: 1)
                // A file another request writes: the request joins and fails alone (an add would throw).
                let (claim, rejection) = Self.claimDestination(of: request, in: core.machine, found: found)
                slot = core.machine.insert(
                    request, claim: claim, existingFile: found.existingFile, source: id, rejection: rejection, now: now)
            }
            switch ending {
            case nil: break
            case .finished?: _ = core.machine.perform(.closeSource(id, failure: nil), now: now)
            case .failed(let error)?: _ = core.machine.perform(.closeSource(id, failure: .init(error)), now: now)
            }
            if ending != nil { core.readerTasks[id] = nil }
            return (slot, core.machine.finishEvent(now))
        }
        guard let (slot, actions) = added else {
            // Returned by a `next()` that was under way when the source was stopped: never added.
            request?.publishEnd(.cancelled)
            _ = locked.withLock { $0.readerTasks.removeValue(forKey: id) }
            return false
        }
        if let request, let slot { join(request, slot: slot) }
        perform(actions)
        return ending == nil
    }
}

/// A synchronous sequence read as an asynchronous one.
struct SynchronousSource<Base: Sequence>: AsyncSequence {
    let base: Base

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: Base.Iterator
        mutating func next() async -> Base.Element? { base.next() }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: base.makeIterator()) }
}
