import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The session delegate of a ``URLSessionTransport``: routes callbacks to transfers by task identifier.
///
/// `@unchecked Sendable` is safe: its only state is the `Locked` map, and URLSession calls it on the
/// transport's serial delegate queue.
final class SessionBridge: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private struct Routes {
        var transfers: [Int: SessionTransfer] = [:]
        var isInvalidated = false
    }

    private let routes = Locked(Routes())
    static let maximumRedirects = 20

    /// Creates, registers and resumes a task for `transfer` (registration first, so no callback is lost).
    func start(_ transfer: SessionTransfer, on session: URLSession, request: URLRequest? = nil) {
        var request = request ?? transfer.request
        request.timeoutInterval = URLSessionTransport.sessionTimeout(for: request.timeoutInterval)
        let task: URLSessionDataTask? = routes.withLock { routes in
            // Creating a task on an invalidated session crashes on Linux.
            guard !routes.isInvalidated else { return nil }
            let task = session.dataTask(with: request)
            routes.transfers[task.taskIdentifier] = transfer
            return task
        }
        guard let task else {
            DispatchQueue.global().async { transfer.events(.completed(URLError(.cancelled))) }
            return
        }
        let cancelled = transfer.state.withLock { state in
            state.task = task
            return state.isCancelled
        }
        if cancelled { task.cancel() }
        task.resume()
    }

    func invalidate() { routes.withLock { $0.isInvalidated = true } }

    /// The live transfer of a task; nil once it was cancelled (its later callbacks are dropped).
    private func transfer(for task: URLSessionTask) -> SessionTransfer? {
        guard let transfer = routes.withLock({ $0.transfers[task.taskIdentifier] }), !transfer.isCancelled else {
            return nil
        }
        return transfer
    }

    /// The transfer of a task, if it is live and not waiting to replay a redirect: the per-chunk check,
    /// with one lock on the transfer's state.
    private func streamingTransfer(for task: URLSessionTask) -> SessionTransfer? {
        guard let transfer = routes.withLock({ $0.transfers[task.taskIdentifier] }),
            transfer.state.withLock({ !$0.isCancelled && $0.replay == nil })
        else { return nil }
        return transfer
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        // Linux ignores `.cancel` here: always allow, and reject by cancelling instead.
        completionHandler(.allow)
        guard let transfer = transfer(for: dataTask), let http = response as? HTTPURLResponse else { return }
        let isReplaying = transfer.state.withLock { state in
            if state.replay == nil { state.hasResponse = true }
            return state.replay != nil
        }
        guard !isReplaying else { return }
        transfer.events(.response(http))
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        streamingTransfer(for: dataTask)?.events(.data(data))
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        guard let transfer = transfer(for: task) else { return }
        transfer.events(.sent(totalBytesSent: totalBytesSent, totalBytesExpectedToSend: totalBytesExpectedToSend >= 0 ? totalBytesExpectedToSend : nil))
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        // Linux keeps the method of a 307/308 but drops the body: stop here and replay with the body.
        if let transfer = transfer(for: task), [307, 308].contains(response.statusCode),
            let body = transfer.request.httpBody
        {
            var replay = request
            replay.httpMethod = transfer.request.httpMethod
            replay.httpBody = body
            transfer.state.withLock { $0.replay = replay }
            completionHandler(nil)
            return
        }
        completionHandler(request)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let transfer = routes.withLock { $0.transfers.removeValue(forKey: task.taskIdentifier) }
        guard let transfer else { return }
        // One read of the transfer's state decides everything below.
        let (isCancelled, replay, redirectCount, midBody) = transfer.state.withLock { state in
            defer { state.replay = nil }
            if state.replay != nil { state.redirectCount += 1 }
            return (state.isCancelled, state.replay, state.redirectCount, state.hasResponse)
        }
        guard !isCancelled else { return }
        if let replay, error == nil {
            guard redirectCount <= Self.maximumRedirects else {
                return transfer.events(.completed(URLError(.httpTooManyRedirects)))
            }
            return start(transfer, on: session, request: replay)
        }
        transfer.events(.completed(error.map { Self.urlError($0, afterResponse: midBody) }))
    }

    /// Maps any session error to a `URLError`. Linux reports a connection closed mid-body as -1
    /// (`.unknown`, "transfer closed with N bytes remaining") where Apple reports connection lost.
    static func urlError(_ error: any Error, afterResponse: Bool) -> URLError {
        let nsError = error as NSError
        guard nsError.domain == NSURLErrorDomain else {
            return URLError(.unknown, userInfo: [NSUnderlyingErrorKey: nsError])
        }
        // Failable on Linux, not on Apple platforms: the annotation serves both.
        let code: URLError.Code? = URLError.Code(rawValue: nsError.code)
        if code == nil || code == .unknown, afterResponse {
            return URLError(.networkConnectionLost, userInfo: nsError.userInfo)
        }
        return (error as? URLError) ?? URLError(code ?? .unknown, userInfo: nsError.userInfo)
    }
}
