import Dispatch
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension QueueState {
    /// Stores the handle of a transfer just started. Returns false if the request ended meanwhile, in
    /// which case the caller must cancel the handle.
    mutating func attach(_ handle: any TransferHandle, to id: ID, token: UInt64) -> Bool {
        guard let record = records[id], record.token == token else { return false }
        record.handle = handle
        return true
    }

    /// Stores the file of a transfer about to start, before any of its events can arrive. Returns false
    /// if the request ended meanwhile, in which case the caller must discard the file.
    mutating func attach(_ sink: FileSink, to id: ID, token: UInt64) -> Bool {
        guard let record = records[id], record.token == token else { return false }
        record.sink = sink
        return true
    }


    /// Fails the request if `token` is still its current transfer (a file error seen outside the lock).
    mutating func fail(_ id: ID, token: UInt64, _ error: NetworkQueueError, _ fx: inout Effects) {
        guard records[id]?.token == token else { return }
        fail(id, error, &fx)
    }

    /// Applies one transport event. Events of a transfer that is no longer current (ended, cancelled,
    /// timed out) are dropped here: the queue's own state is the truth, not the transport's.
    mutating func handle(
        _ event: TransferEvent, id: ID, token: UInt64, lane: Scheduler<ID>.Lane, _ fx: inout Effects
    ) {
        guard let record = records[id], record.token == token else { return }
        // One clock read per event serves the idle timer, the throughput meter and the throttle.
        let nanoseconds = DispatchTime.now().uptimeNanoseconds
        record.lastActivity = nanoseconds
        switch lane {
        case .preflight: handlePreflight(event, record, &fx)
        case .main: handleMain(event, record, at: Double(nanoseconds) / 1e9, &fx)
        }
    }

    private mutating func handlePreflight(_ event: TransferEvent, _ record: Record, _ fx: inout Effects) {
        let id = ID(record.request)
        switch event {
        case .response(let response) where ResponseRules.isInterim(response):
            break
        case .response(let response):
            if (200..<300).contains(response.statusCode) {
                ledger.setExpectedDownload(id, ResponseRules.knownLength(of: response))
            }
        case .data, .sent:
            break
        case .completed(let error?):
            fail(id, .preflightFailed(error), transferEnded: true, &fx)
        case .completed(nil):
            scheduler.finish(Job(id: id, lane: .preflight))
            record.preflight = .done
            record.handle = nil
            record.token = 0
            record.request.status.withLock { $0.state = .pending }
            startAvailable(&fx)
        }
    }

    private mutating func handleMain(_ event: TransferEvent, _ record: Record, at now: Double, _ fx: inout Effects) {
        let request = record.request
        let id = ID(request)
        switch event {
        case .response(let response) where ResponseRules.isInterim(response):
            // 100 Continue, 103 Early Hints: never the final response.
            break
        case .response(let response):
            if record.response != nil {
                // A second response means the transfer restarted: its earlier bytes no longer count.
                ledger.restart(id)
                record.body = Data()
                record.received = 0
                record.sent = 0
            }
            record.response = response
            let encoded = ResponseRules.isEncoded(response)
            let length = ResponseRules.knownLength(of: response, encoded: encoded)
            if length != nil || encoded { ledger.setExpectedDownload(id, length) }
            request.status.withLock {
                $0.response = response
                $0.download = TransferProgress(completedBytes: 0, expectedBytes: length)
            }
            postEvent(.didReceiveHeaders(request, response), for: request, &fx)
            let problem = ResponseRules.check(
                response, url: request.url, acceptableStatusCodes: request.acceptableStatusCodes,
                acceptableContentTypes: request.acceptableContentTypes, maximumResponseSize: request.maximumResponseSize,
                expectedLength: length)
            if let problem { fail(id, problem, &fx) }
        case .data(let data):
            if case .memory = request.destination { record.body.append(data) }
            record.received += Int64(data.count)
            ledger.receive(id, bytes: Int64(data.count), at: now)
            if let limit = request.maximumResponseSize, record.received > limit {
                fail(id, .responseTooLarge(limit: limit, url: request.url), &fx)
                return
            }
            noteProgress(record, download: true, at: now, &fx)
        case .sent(let sent, let expected):
            record.sent = sent
            if let expected { record.expectedToSend = expected }
            ledger.send(id, totalSent: sent, expected: expected, at: now)
            noteProgress(record, download: false, at: now, &fx)
        case .completed(let error?):
            fail(id, .transport(error), transferEnded: true, &fx)
        case .completed(nil):
            guard let response = record.response else {
                fail(id, .transport(URLError(.badServerResponse)), transferEnded: true, &fx)
                return
            }
            if ResponseRules.isShort(response, method: request.urlRequest.httpMethod, received: record.received) {
                fail(id, .transport(URLError(.networkConnectionLost)), transferEnded: true, &fx)
                return
            }
            // The file moves into place here, under the lock, as success is decided: no cancel can
            // come between, so a finished request always has its file and a cancelled one never does.
            if let error = record.sink?.commit() {
                fail(id, error, transferEnded: true, &fx)
                return
            }
            let result = NetworkResponse(httpResponse: response, body: record.body, fileURL: record.sink?.destination)
            end(id, .success(result), transferEnded: true, &fx)
            finishStep(&fx)
        }
    }

    // MARK: Timeouts

    /// Adds a transfer's idle deadline, re-arming the queue's one timer if it is now the earliest.
    mutating func scheduleDeadline(_ entry: DeadlineHeap<ID>.Entry, _ fx: inout Effects) {
        deadlines.insert(entry)
        if armedDeadline.map({ entry.deadline < $0 }) ?? true {
            armedDeadline = entry.deadline
            fx.rearmDeadlineTimer = true
        }
    }

    /// The deadline timer fired: fails every transfer idle for its whole timeout and pushes the others'
    /// deadlines to their last activity plus their timeout.
    mutating func expireDeadlines(_ fx: inout Effects) {
        let now = Self.now()
        armedDeadline = nil
        for entry in deadlines.popDue(at: now) {
            guard let record = records[entry.id], record.token == entry.token else { continue }
            let timeout = record.request.urlRequest.timeoutInterval
            let lastActivity = Double(record.lastActivity) / 1e9
            if now - lastActivity >= timeout {
                let error = URLError(.timedOut)
                fail(entry.id, record.preflight == .active ? .preflightFailed(error) : .transport(error), &fx)
            } else {
                deadlines.insert(.init(deadline: lastActivity + timeout, id: entry.id, token: entry.token))
            }
        }
        armedDeadline = deadlines.earliest
        fx.rearmDeadlineTimer = armedDeadline != nil
    }
}
