import Dispatch
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension QueueState {
    /// Stores the handle of a transfer just started. Returns false if the request ended meanwhile, in
    /// which case the caller must cancel the handle.
    mutating func attach(
        _ handle: any TransferHandle, timer: (any DispatchSourceTimer)?, to id: ID, token: UInt64
    ) -> Bool {
        guard records[id]?.token == token else { return false }
        records[id]?.handle = handle
        records[id]?.timer = timer
        return true
    }

    /// Applies one transport event. Events of a transfer that is no longer current (ended, cancelled,
    /// timed out) are dropped here: the queue's own state is the truth, not the transport's.
    mutating func handle(
        _ event: TransferEvent, id: ID, token: UInt64, lane: Scheduler<ID>.Lane, _ fx: inout Effects
    ) {
        guard let request = records[id]?.request, records[id]?.token == token else { return }
        records[id]?.lastActivity = DispatchTime.now().uptimeNanoseconds
        switch lane {
        case .preflight: handlePreflight(event, id: id, request: request, &fx)
        case .main: handleMain(event, id: id, request: request, &fx)
        }
    }

    private mutating func handlePreflight(
        _ event: TransferEvent, id: ID, request: NetworkRequest, _ fx: inout Effects
    ) {
        switch event {
        case .response(let response):
            if (200..<300).contains(response.statusCode) {
                ledger.setExpectedDownload(id, Self.knownLength(of: response))
            }
        case .data, .sent:
            break
        case .completed(let error?):
            fail(id, .preflightFailed(error), &fx)
        case .completed(nil):
            scheduler.finish(Job(id: id, lane: .preflight))
            records[id]?.preflight = .done
            records[id]?.handle = nil
            records[id]?.timer?.cancel()
            records[id]?.timer = nil
            request.status.withLock { $0.state = .pending }
            startAvailable(&fx)
        }
    }

    // Records are mutated in place (`records[id]?.…`): a local copy would make `body.append` copy the
    // whole body on every chunk.
    private mutating func handleMain(_ event: TransferEvent, id: ID, request: NetworkRequest, _ fx: inout Effects) {
        switch event {
        case .response(let response):
            if records[id]?.response != nil {
                // A second response means the transfer restarted: its earlier bytes no longer count.
                ledger.restart(id)
                records[id]?.body = Data()
            }
            records[id]?.response = response
            let length = Self.knownLength(of: response)
            if length != nil || Self.isEncoded(response) { ledger.setExpectedDownload(id, length) }
            request.status.withLock {
                $0.response = response
                $0.download = TransferProgress(completedBytes: 0, expectedBytes: length)
            }
            post(.event(.didReceiveHeaders(request, response)), &fx)
            if let error = Self.check(response, for: request, expectedLength: length) { fail(id, error, &fx) }
        case .data(let data):
            records[id]?.body.append(data)
            records[id]?.downloadDirty = true
            let received = Int64(records[id]?.body.count ?? 0)
            ledger.receive(id, bytes: Int64(data.count), at: Self.now())
            request.status.withLock { $0.download.completedBytes = received }
            if let limit = request.maximumResponseSize, received > limit {
                fail(id, .responseTooLarge(limit: limit, url: request.url), &fx)
                return
            }
            noteProgress(id, &fx)
        case .sent(let sent, let expected):
            records[id]?.uploadDirty = true
            ledger.send(id, totalSent: sent, expected: expected, at: Self.now())
            request.status.withLock {
                $0.upload.completedBytes = sent
                if let expected { $0.upload.expectedBytes = expected }
            }
            noteProgress(id, &fx)
        case .completed(let error?):
            fail(id, .transport(error), &fx)
        case .completed(nil):
            guard let response = records[id]?.response, let body = records[id]?.body else {
                fail(id, .transport(URLError(.badServerResponse)), &fx)
                return
            }
            end(id, .success(NetworkResponse(httpResponse: response, body: body)), &fx)
            finishStep(&fx)
        }
    }

    /// Called by the transfer's idle timer. Fails the transfer if it has been idle for its whole
    /// timeout; otherwise returns the seconds left, for the timer to wait again.
    mutating func checkTimeout(id: ID, token: UInt64, timeout: Double, _ fx: inout Effects) -> Double? {
        guard let record = records[id], record.token == token else { return nil }
        let idle = Double(DispatchTime.now().uptimeNanoseconds &- record.lastActivity) / 1e9
        guard idle >= timeout else { return timeout - idle }
        let error = URLError(.timedOut)
        fail(id, record.preflight == .active ? .preflightFailed(error) : .transport(error), &fx)
        return nil
    }

    // MARK: Response rules

    /// The body length a response announces, or nil when unknown or not a count of delivered bytes.
    static func knownLength(of response: HTTPURLResponse) -> Int64? {
        guard !isEncoded(response), response.expectedContentLength >= 0 else { return nil }
        return response.expectedContentLength
    }

    /// True when a Content-Encoding other than identity makes Content-Length a count of encoded bytes.
    static func isEncoded(_ response: HTTPURLResponse) -> Bool {
        guard let encoding = response.value(forHTTPHeaderField: "Content-Encoding") else { return false }
        let trimmed = encoding.trimmingCharacters(in: .whitespaces).lowercased()
        return !trimmed.isEmpty && trimmed != "identity"
    }

    static func check(
        _ response: HTTPURLResponse, for request: NetworkRequest, expectedLength: Int64?
    ) -> NetworkQueueError? {
        let url = response.url ?? request.url
        if let codes = request.acceptableStatusCodes, !codes.contains(response.statusCode) {
            return .unacceptableStatus(code: response.statusCode, url: url)
        }
        if let types = request.acceptableContentTypes {
            let type = response.mimeType?.lowercased()
            if type.map(types.contains) != true { return .unacceptableContentType(response.mimeType, url: url) }
        }
        if let limit = request.maximumResponseSize, let length = expectedLength, length > limit {
            return .responseTooLarge(limit: limit, url: url)
        }
        return nil
    }
}
