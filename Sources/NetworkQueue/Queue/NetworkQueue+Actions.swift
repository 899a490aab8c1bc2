import Dispatch
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension NetworkQueue {
    /// Performs the actions of one machine event, outside the lock.
    ///
    /// `inline` says the caller is one of the queue's own threads (a transport's events, the timer): it may
    /// start transfers itself. A user's call never does: its starts go to the launcher's thread, so
    /// `go()`, `add()` and the rest return at once whatever the transport's start costs.
    func perform(_ actions: consuming QueueActions, inline: Bool = false) {
        if actions.countedBytes { LockCounter.counting() }
        var cancels: [any TransferHandle] = []
        var startCount = 0
        // Each action is moved out of the list in order rather than copied (a status or a start payload is handed on
        // without a retain of each of its references), its place refilled with a payload-free action so that the
        // list's end frees nothing twice. Reversing the list to pop from its end cost 800 instructions a request.
        // Starts stay in the list for a second pass, after the others: no array of their own per event.
        var list: [QueueAction] = []
        swap(&list, &actions.list)
        list.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            for index in 0..<buffer.count {
                if case .start = base[index] {
                    startCount += 1
                    continue
                }
                let action = (base + index).move()
                (base + index).initialize(to: .moved)
                perform(action, cancels: &cancels)
            }
        }
        if !cancels.isEmpty {
            // URLSession's cancel can block for a while on Linux: never on the caller's thread.
            DispatchQueue.global(qos: .userInitiated).async { [cancels] in
                for transfer in cancels { transfer.cancel() }
            }
        }
        if startCount > 0 {
            let runsInline = inline && launcher.mayRunInline()
            var starts: [QueueAction.Start] = []
            if !runsInline { starts.reserveCapacity(startCount) }
            list.withUnsafeMutableBufferPointer { buffer in
                guard let base = buffer.baseAddress else { return }
                for index in 0..<buffer.count {
                    guard case .start = base[index] else { continue }
                    // Moved out, not copied (a copy retains each of a start's references, and the list's end releases
                    // them again).
                    let action = (base + index).move()
                    (base + index).initialize(to: .moved)
                    guard case .start(let start) = consume action else { continue }
                    if runsInline { launch(start) } else { starts.append(start) }
                }
            }
            if !starts.isEmpty { launcher.submit(starts, on: self) }
        }
        // The timer before the delivery: whoever hears an event (a willRetry) finds its timer armed.
        if let deadline = actions.armTimer {
            clock.schedule(at: deadline) { [weak self] in self?.send(inline: true) { $0.timerFired(now: $1) } }
        }
        if let delay = actions.deliverAfter {
            if delay > 0 {
                deliveryQueue.asyncAfter(deadline: .now() + delay) { self.deliver() }
            } else {
                deliveryQueue.async { self.deliver() }
            }
        }
    }

    /// Performs one action of ``perform(_:inline:)`` but a start (launched after the others); cancels are
    /// gathered, to go after the others.
    private func perform(_ action: consuming QueueAction, cancels: inout [any TransferHandle]) {
        switch consume action {
        case .moved: break
        case .connections(let batch):
            batch.shell.perform(batch.work)
        case .publish(let request, let status):
            request.publish(status)
        case .publishEnd(let requests, let error):
            for request in requests { request.publishEnd(error) }
        case .start:
            preconditionFailure("a start is launched after the other actions of its event")
        case .cancel(let cell):
            if let handle = cell.cancel() { cancels.append(handle) }
        case .keep(let sink):
            sink.close(keeping: true)
        case .discard(let sink):
            // A cancelled file request has no partial file left when cancel() returns. Only running
            // requests have one, so this is bounded by the concurrency limit.
            sink.discard()
        case .discardPart(let claim):
            FileSink.removePart(of: claim)
        case .release(let claim):
            claim.endRequest()
        case .commit(let slot, let token, let sink):
            // Only a transport's completion asks for a commit: this is its thread.
            let error = sink.commit()
            let placed = sink.mayPlaceElsewhere ? sink.committedPath : nil
            // With the pass's other notices when this is an engine's thread that batches: the request is committing
            // until this is heard, and nothing of its transfers can change it.
            tell(
                TransferNotice(slot: slot, token: token, kind: .file(.committed(error, placedAt: placed))),
                batching: true)
        case .free(let records):
            // Moved into the background queue's closure, so that the freeing is that queue's work.
            let garbage = Locked(records)
            DispatchQueue.global(qos: .background).async { garbage.withLock { $0 = [] } }
        case .adapt(let adapt):
            runHooks(adapt)
        case .readSource(let id, let count):
            locked.withLock { $0.readers.removeValue(forKey: id) }?.resume(returning: count)
        case .stopSource(let id):
            let (reader, task) = locked.withLock {
                ($0.readers.removeValue(forKey: id), $0.readerTasks.removeValue(forKey: id))
            }
            reader?.resume(returning: 0)
            task?.cancel()
        case .decide(let decide):
            QueueTasks.start {
                let decision = await decide.decide(decide.request, decide.error, decide.attempts)
                self.send(inline: true) {
                    $0.perform(.retryDecided(slot: decide.slot, token: decide.token, decision), now: $1).actions
                }
            }
        }
    }

    /// Runs an attempt's adapt hooks in order, each on the request the previous one returned, then reports
    /// the result. The task holds the queue (as a transfer does) until the hooks return.
    private func runHooks(_ adapt: QueueAction.Adapt) {
        QueueTasks.start {
            var urlRequest = adapt.urlRequest
            let outcome: Result<URLRequest, NetworkQueueError.UnderlyingError>
            do {
                for hook in adapt.hooks { urlRequest = try await hook(urlRequest) }
                outcome = .success(urlRequest)
            } catch {
                outcome = .failure(.init(error))
            }
            self.send(inline: true) {
                $0.perform(.adapted(slot: adapt.slot, token: adapt.token, outcome), now: $1).actions
            }
        }
    }

    /// Starts one transfer: opens its file (file destination), starts it on the transport through its
    /// pipeline and hands the machine its handle. Runs outside the lock, on the launcher's or a transport's
    /// thread.
    func launch(_ start: consuming QueueAction.Start) {
        let (slot, token) = (start.slot, start.token)
        var outgoing = start.outgoing
        let pipeline: TransferPipeline
        var shared: NetworkRequest.FileOptions?
        var options = TransferOptions(collectsMetrics: start.collectsMetrics, connectTimeout: start.connectTimeout)
        switch start.body {
        case .preflight:
            pipeline = TransferPipeline(owner: self, slot: slot, token: token, request: nil, sink: nil)
        case .checked(let request, let claim, let continuesPart, let revalidation, let splits, let carrying):
            options.endsAtHead = request.validation.endsAtHead
            var sink: FileSink?
            var revalidates = false
            if let claim {
                guard
                    let opened = openPart(
                        claim, continuing: continuesPart, segmented: splits,
                        namesFromResponse: request.fileOptions.namesFileFromResponse,
                        revalidating: revalidation != nil, slot: slot, token: token)
                else { return }
                if splits { shared = request.fileOptions }
                if !splits, opened.continuedFrom > 0, let validator = opened.validator {
                    for (name, value) in RangeRules.headers(offset: opened.continuedFrom, validator: validator) {
                        outgoing.setValue(value, forHTTPHeaderField: name)
                    }
                }
                if let revalidation, opened.continuedFrom == 0, opened.resumed == nil {
                    // The file there is asked for only if it changed; a part continued means it did.
                    let field = revalidation.field
                    outgoing.setValue(field.value, forHTTPHeaderField: field.name)
                    revalidates = true
                }
                sink = opened
            }
            // Main transfers draw from the queue's cap; a HEAD moves no body.
            options.rateCap = rateCap
            // A file that may be shared: the attempt's connections, as its split machine decides, run on the pipeline.
            let connections = shared.map {
                TransferPipeline.Connections(
                    transport: transport, lender: lender, options: options, fileOptions: $0, outgoing: outgoing)
            }
            // A file that may be shared whose download has nothing to decide before its first head, and no part to
            // continue: the pipeline starts its first connection itself, and begins the download only at a head that
            // may share it.
            let firstRule = sink?.resumed == nil ? carrying : nil
            pipeline = TransferPipeline(
                owner: self, slot: slot, token: token, request: request, sink: sink, revalidates: revalidates,
                connections: connections, firstRule: firstRule)
            // One entry into the engine: the file opened, and the download of a file that may be shared begun (its
            // first connection started by its work), unless the pipeline starts that connection.
            if let sink {
                let begin = firstRule == nil ? pipeline.beginning() : nil
                let (isCurrent, actions) = locked.withLock { core in
                    let now = clock.now()
                    var actions = core.machine.notice(
                        TransferNotice(slot: slot, token: token, kind: .file(.opened(sink))), now: now)
                    let isCurrent = core.machine.table.isCurrent(slot, token: token)
                    if isCurrent, let begin {
                        actions.append(
                            core.machine.notice(TransferNotice(slot: slot, token: token, kind: .split(begin)), now: now)
                        )
                    }
                    return (isCurrent, actions)
                }
                perform(actions, inline: true)
                guard isCurrent, begin == nil else { return }
            }
            // The first connection of a file whose download begins at its head: the pipeline's own transfer, read by
            // its rule (``TransferPipeline/firstEvent(_:)``).
            if pipeline.firstRule != nil { pipeline.firstCell = start.cell }
        }
        // Each callback captures the pipeline alone (no context of its own); the pipeline holds the queue strongly.
        // File I/O and hashing happen in it, outside the lock; a transfer's events are serial.
        let isFirst = pipeline.firstRule != nil
        let events: @Sendable (TransferEvent) -> Void
        if isFirst {
            events = { event in pipeline.firstEvent(event) }
        } else {
            events = { event in pipeline.receive(event) }
        }
        let handle: any TransferHandle
        if let lending = lender {
            // The transport takes the URL's text as it is. For a file, the pipeline writes and hashes each piece
            // before it returns: the transport may lend it.
            var body: LentBodyReceiver?
            if isFirst {
                body = { piece in pipeline.firstLent(piece) }
            } else if pipeline.sink != nil {
                body = { piece in pipeline.lend(piece) }
            }
            handle = lending.startTransfer(outgoing, options: options, lendingBodyTo: body, events: events)
        } else {
            handle = transport.startTransfer(outgoing.urlRequest, options: options, events: events)
        }
        if !start.cell.attach(handle) {
            // It ended while starting (cancelled, or failed by a sibling): stop what was just started.
            DispatchQueue.global(qos: .userInitiated).async { handle.cancel() }
        }
    }

    /// Opens the part file of a transfer about to start; nil when the transfer must not start (the request ended
    /// meanwhile, or the file could not be opened: the machine was told). The caller tells the machine it opened.
    private func openPart(
        _ claim: DestinationClaim, continuing: Bool, segmented: Bool, namesFromResponse: Bool, revalidating: Bool,
        slot: Int, token: UInt64
    ) -> FileSink? {
        let sink: FileSink
        do {
            // Nil means the request ended while starting: nothing to open or send.
            guard
                let opened = try FileSink(
                    claim: claim, continuing: continuing, segmented: segmented, namesFromResponse: namesFromResponse,
                    revalidating: revalidating)
            else {
                return nil
            }
            sink = opened
        } catch let error {
            send(inline: true) {
                $0.notice(TransferNotice(slot: slot, token: token, kind: .file(.failed(error))), now: $1)
            }
            return nil
        }
        return sink
    }
}

/// Runs transfer starts in order on its own serial queue, off the threads of the queue's callers.
final class Launcher: Sendable {
    private let queue = DispatchQueue(label: "NetworkQueue.launcher", qos: .userInitiated)
    private let pending = Locked((starts: [QueueAction.Start](), isDraining: false))

    /// True when nothing waits for the launcher's thread: a queue's own thread (a transport's, the timer's) may then
    /// start its event's transfers itself, and the order stays the machine's.
    func mayRunInline() -> Bool { pending.withLock { !$0.isDraining } }

    /// Queues `starts` for the launcher's thread, after those queued before them.
    func submit(_ starts: [QueueAction.Start], on queue: NetworkQueue) {
        let mustSchedule = pending.withLock { pending -> Bool in
            pending.starts.append(contentsOf: starts)
            defer { pending.isDraining = true }
            return !pending.isDraining
        }
        if mustSchedule { self.queue.async { self.drain(queue) } }
    }

    private func drain(_ owner: NetworkQueue) {
        while true {
            let batch = pending.withLock { pending in
                defer { pending.starts.removeAll(keepingCapacity: true) }
                if pending.starts.isEmpty { pending.isDraining = false }
                return pending.starts
            }
            if batch.isEmpty { return }
            for start in batch { owner.launch(start) }
        }
    }
}
