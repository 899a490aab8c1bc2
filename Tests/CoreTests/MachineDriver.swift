import Foundation
import TestSupport

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Drives a ``QueueStateMachine`` alone: tracks the transfers its actions start and cancel, keeps every
/// delivery it posts, and describes actions and deliveries as short strings for exact comparisons.
/// Requests are named by their `tag`.
struct MachineDriver {
    /// A started transfer and the tag of its request.
    struct Transfer {
        let start: QueueAction.Start
        let tag: Int
    }

    var machine: QueueStateMachine
    var now: Double = 0
    /// Transfers started and not yet completed or cancelled, in start order.
    var transfers: [Transfer] = []
    var deliveries: [String] = []
    var requests: [Int: NetworkRequest] = [:]
    var slots: [Int: Int] = [:]
    /// In flight just before each start, for the limit invariant.
    var inFlightAtStarts: [Int] = []
    /// Adapt actions asked for, oldest first.
    var adapts: [QueueAction.Adapt] = []
    /// Slots whose adapt was answered: their start was counted against the limit at the adapt.
    var adaptedSlots: Set<Int> = []
    /// Retry decisions asked for, oldest first.
    var decisions: [QueueAction.Decide] = []

    init(limit: Int, ceiling: Int = 4_096, listening: Bool = true, retryPolicy: RetryPolicy = .never) {
        machine = QueueStateMachine(limit: limit, ceiling: ceiling)
        machine.hasListeners = listening
        machine.retryPolicy = retryPolicy
    }

    static func request(_ tag: Int, timeout: TimeInterval = 60, url: String? = nil) -> NetworkRequest {
        var urlRequest = URLRequest(url: URL(string: url ?? "http://example.test/\(tag)")!)
        urlRequest.timeoutInterval = timeout
        return NetworkRequest(urlRequest, tag: tag)
    }

    // MARK: Events

    @discardableResult
    mutating func add(_ tag: Int, timeout: TimeInterval = 60, url: String? = nil) -> [String] {
        add(Self.request(tag, timeout: timeout, url: url))
    }

    /// Adds a request made by the test (named by its tag).
    @discardableResult
    mutating func add(_ request: NetworkRequest) -> [String] {
        let tag = request.tag
        requests[tag] = request
        let (slot, actions) = machine.add(request, claim: nil, now: now)
        slots[tag] = slot
        return apply(actions)
    }

    // MARK: Sources

    /// Reads granted to each open source and not yet used, by source id (as a reader would hold them).
    var grants: [Int: Int] = [:]
    /// Grants made while the look-ahead was already full: must stay empty.
    var grantsOverLookAhead = 0

    /// Opens a source announcing `expected` requests; its reader asks at once, as a real one does.
    @discardableResult
    mutating func openSource(announcing expected: Int = 0) -> Int {
        let (id, actions) = machine.openSource(announcing: expected, now: now)
        grants[id] = 0
        _ = apply(actions)
        ask(id)
        return id
    }

    /// The reader of source `id` asks for reads (after its last batch was added).
    mutating func ask(_ id: Int) {
        if case .read(let count) = machine.askToRead(id) { granted(count, to: id) }
    }

    private mutating func granted(_ count: Int, to id: Int) {
        grants[id, default: 0] += count
        if machine.scheduler.mainPendingCount + machine.sources.reserved > machine.readAhead {
            grantsOverLookAhead += 1
        }
    }

    /// Source `id` gives `tags` (at most its grant), then ends (`ending` true) or throws (`failing` true), as
    /// one batch; its reader asks again unless the source is over.
    @discardableResult
    mutating func read(_ tags: [Int], from id: Int, ending: Bool = false, failing: Bool = false) -> [String] {
        precondition(tags.count <= grants[id] ?? 0, "read more than granted")
        grants[id] = 0
        guard machine.sources.isOpen(id) else {
            grants[id] = nil
            return []
        }
        machine.sourceRead(id, count: .max)
        for tag in tags {
            let request = Self.request(tag)
            requests[tag] = request
            slots[tag] = machine.insert(request, claim: nil, source: id, now: now)
        }
        if ending || failing {
            machine.closeSource(id, failure: failing ? .init(URLError(.cannotOpenFile)) : nil, now: now)
            grants[id] = nil
        }
        let lines = apply(machine.finishEvent(now))
        if !ending, !failing, machine.sources.isOpen(id) { ask(id) }
        return lines
    }

    @discardableResult
    mutating func go() -> [String] { apply(machine.go(now: now)) }

    @discardableResult
    mutating func setLimit(_ limit: Int) -> [String] { apply(machine.setLimit(limit, now: now)) }

    @discardableResult
    mutating func cancel(_ tag: Int) -> [String] {
        apply(machine.cancel(requests[tag]!, slot: slots[tag]!, now: now))
    }

    @discardableResult
    mutating func cancelAll() -> [String] { apply(machine.cancelAll(now: now)) }

    @discardableResult
    mutating func pause(_ tag: Int) -> [String] {
        apply(machine.pause([(requests[tag]!, slots[tag]!)], now: now).actions)
    }

    @discardableResult
    mutating func resume(_ tag: Int) -> [String] {
        apply(machine.resume([(requests[tag]!, slots[tag]!)], now: now).actions)
    }

    @discardableResult
    mutating func setPriority(_ priority: Int, of tag: Int) -> [String] {
        apply(machine.setPriority(priority, for: requests[tag]!, slot: slots[tag]!, now: now).actions)
    }

    /// Answers the oldest adapt action asked for.
    @discardableResult
    mutating func answerAdapt(_ outcome: Result<URLRequest, NetworkQueueError.UnderlyingError>) -> [String] {
        let adapt = adapts.removeFirst()
        adaptedSlots.insert(adapt.slot)
        defer { adaptedSlots.remove(adapt.slot) }
        return apply(machine.adapted(slot: adapt.slot, token: adapt.token, outcome, now: now))
    }

    /// Answers the oldest retry decision asked for.
    @discardableResult
    mutating func answerDecision(_ decision: RetryPolicy.Decision) -> [String] {
        let decide = decisions.removeFirst()
        return apply(machine.retryDecided(slot: decide.slot, token: decide.token, decision, now: now))
    }

    @discardableResult
    mutating func timer(at time: Double) -> [String] {
        now = time
        return apply(machine.timerFired(now: now))
    }

    /// Sends `event` to the transfer of `tag` (its newest one).
    @discardableResult
    mutating func send(_ event: TransferEvent, to tag: Int) -> [String] {
        let transfer = transfers.last { $0.tag == tag }!
        return send(event, to: transfer)
    }

    @discardableResult
    mutating func send(_ event: TransferEvent, to transfer: Transfer) -> [String] {
        if case .completed = event { transfers.removeAll { $0.start.token == transfer.start.token } }
        let notice = TransferNotice(slot: transfer.start.slot, token: transfer.start.token, kind: .event(event))
        return apply(machine.notice(notice, now: now))
    }

    static func head(_ status: Int = 200, length: Int? = 3, headers extra: [String: String] = [:]) -> TransferEvent {
        var headers = extra
        if let length { headers["Content-Length"] = "\(length)" }
        return .head(
            ResponseHead(
                HTTPURLResponse(
                    url: URL(string: "http://example.test/")!, statusCode: status, httpVersion: "HTTP/1.1",
                    headerFields: headers)!))
    }

    // MARK: Describing

    func tag(_ request: NetworkRequest) -> Int { request.tag }

    /// Hands `event` of the split attempt `token` in `slot` to the machine at `time` (the driver's now when nil), applies
    /// its actions, and returns the shell's work among them (its ``QueueAction/connections(_:)``), in order.
    mutating func split(
        _ event: RequestMachine.SplitEvent, slot: Int, token: UInt64, at time: Double? = nil
    ) -> [ConnectionWork] {
        if let time { now = time }
        let actions = machine.notice(TransferNotice(slot: slot, token: token, kind: .split(event)), now: now)
        let work = actions.list.flatMap { action -> [ConnectionWork] in
            if case .connections(let batch) = action { batch.work } else { [] }
        }
        _ = apply(actions)
        return work
    }

    mutating func apply(_ actions: QueueActions) -> [String] {
        var lines: [String] = []
        for action in actions.list {
            switch action {
            case .publish(let request, let status): lines.append("publish \(tag(request)) \(status.status.state)")
            case .publishEnd(let requests, let error):
                lines.append("publishEnd \(requests.map(tag)) \(error.isCancellation ? "cancelled" : "failed")")
            case .start(let start):
                let tag = tag(machine.table[start.slot].request)
                if !adaptedSlots.contains(start.slot) { inFlightAtStarts.append(transfers.count) }
                transfers.append(Transfer(start: start, tag: tag))
                let lane = if case .preflight = start.body { "preflight" } else { "main" }
                lines.append("start \(tag) \(lane)")
            case .cancel(let cell):
                let tags = transfers.filter { $0.start.cell === cell }.map(\.tag)
                transfers.removeAll { $0.start.cell === cell }
                lines.append("cancel \(tags.map(String.init).joined())")
            case .discard: lines.append("discard")
            case .keep: lines.append("keep")
            case .release: lines.append("release")
            case .discardPart: lines.append("discardPart")
            case .commit(let slot, _, _): lines.append("commit \(tag(machine.table[slot].request))")
            case .free: lines.append("free")
            case .adapt(let adapt):
                // The slot is taken here, before the hooks run: slots held are transfers plus adapting requests
                // (each adapt of this event counted once, itself excluded).
                let adapting = machine.table.records.filter { $0.record.machine.phase.name.hasPrefix("adapting") }.count
                inFlightAtStarts.append(transfers.count + adapting - 1)
                adapts.append(adapt)
                lines.append("adapt \(tag(machine.table[adapt.slot].request))")
            case .decide(let decide):
                decisions.append(decide)
                lines.append("decide \(decide.request.tag)")
            case .readSource(let id, let count):
                granted(count, to: id)
                lines.append("read source \(id) \(count)")
            case .stopSource(let id):
                grants[id] = nil
                lines.append("stop source \(id)")
            case .moved: lines.append("moved")
            case .connections(let batch): lines.append("connections \(batch.work.count)")
            }
        }
        if actions.deliver { lines.append("deliver") }
        if let time = actions.armTimer { lines.append("timer \(time)") }
        for item in machine.takeDeliveries() { deliveries.append(Self.describe(item)) }
        return lines
    }

    static func describe(_ item: Delivery) -> String {
        switch item {
        case .event(.didStart(let request)): "didStart \(request.tag)"
        case .event(.didReceiveHeaders(let request, let response)): "headers \(request.tag) \(response.statusCode)"
        case .event(.didCollectMetrics(let request, let metrics)): "metrics \(request.tag) \(metrics.attempt)"
        case .event(.didFinish(let request, _)): "didFinish \(request.tag)"
        case .event(.didFail(let request, .transport(let error))):
            "didFail \(request.tag) transport \(error.code.rawValue)"
        case .event(.didFail(let request, let error)):
            "didFail \(request.tag) \(error.isCancellation ? "cancelled" : "\(error)")"
        case .event(.willRetry(let request, let delay, _)): "willRetry \(request.tag) \(delay)"
        case .event(.didPause(let request)): "didPause \(request.tag)"
        case .event(.didResume(let request)): "didResume \(request.tag)"
        case .event(.didUpdateProgress(let progress)): "progress \(progress.fractionCompleted)"
        case .event(.sourceDidFail(let error)): "sourceDidFail \(error)"
        case .event(.serverHoldChanged(let hold)):
            "server \(hold.change) \(hold.server) after \(hold.heldFor) s, \(hold.failures) failures"
        case .event(.queueDidFinish): "queueDidFinish"
        case .downloadProgress(let request, let progress): "download \(request.tag) \(progress.completedBytes)"
        case .uploadProgress(let request, let progress): "upload \(request.tag) \(progress.completedBytes)"
        case .settle(let status, let request, _, _, _): "settle \(request.tag) \(status.status.state)"
        case .settleAll(let requests, _, _, _): "settleAll \(requests.map(\.tag))"
        case .wakeRuns(let count, _): "wake \(count)"
        case .log(let record): "log \(record.request.tag) \(record.event.rawValue)"
        }
    }

    /// The deliveries so far, then forgets them.
    mutating func takeDeliveries() -> [String] {
        defer { deliveries = [] }
        return deliveries
    }
}
