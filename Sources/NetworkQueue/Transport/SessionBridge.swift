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
    let redirects: RedirectPolicy
    /// The transport's own cookies (``URLSessionTransport/CookiePolicy/ephemeral``); nil when Foundation's
    /// store or none is used.
    private let cookieJar: Locked<CookieJar>?
    static let maximumRedirects = 20

    /// The proxies of the environment (Foundation's libcurl reads the same variables), to keep their credentials
    /// out of every error and to tell an unusable proxy setting apart.
    let proxies = ProxyRoutes(ProcessInfo.processInfo.environment)

    init(redirects: RedirectPolicy, cookieJar: Locked<CookieJar>?) {
        self.redirects = redirects
        self.cookieJar = cookieJar
    }

    /// Adds the jar's cookies for the request's URL to `request`, after any `Cookie` header of its own.
    private func addCookies(to request: inout URLRequest, own: String?) {
        guard let cookieJar, let url = request.url,
            let cookies = cookieJar.withLock({ $0.header(for: url, now: Date()) })
        else { return request.setValue(own, forHTTPHeaderField: "Cookie") }
        request.setValue(own.map { "\($0); \(cookies)" } ?? cookies, forHTTPHeaderField: "Cookie")
    }

    /// Stores the cookies of a response head that passed every check.
    private func storeCookies(of response: HTTPURLResponse) {
        guard let cookieJar, let url = response.url, let value = response.value(forHTTPHeaderField: "Set-Cookie") else {
            return
        }
        cookieJar.withLock { $0.store(CookieJar.splitJoined(value), from: url, now: Date()) }
    }

    /// Creates, registers and resumes a task for `transfer` (registration first, so no callback is lost).
    func start(_ transfer: SessionTransfer, on session: URLSession, request: URLRequest? = nil) {
        var request = request ?? transfer.request
        request.timeoutInterval = URLSessionTransport.sessionTimeout(for: request.timeoutInterval)
        if request.value(forHTTPHeaderField: "Accept-Encoding") == nil {
            request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        }
        // Foundation would send it to the server (through a tunnel too): proxy credentials belong to the proxy's
        // setting.
        request.setValue(nil, forHTTPHeaderField: "Proxy-Authorization")
        addCookies(to: &request, own: transfer.ownCookie(for: request.url))
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

    /// The transfer of a task, if it is live and not stopped at a redirect: the per-chunk check, with one
    /// lock on the transfer's state (which counts the chunk's `bytes` when the transfer measures).
    private func streamingTransfer(for task: URLSessionTask, bytes: Int) -> SessionTransfer? {
        guard let transfer = routes.withLock({ $0.transfers[task.taskIdentifier] }),
            transfer.state.withLock({ state in
                state.measure?.bodyReceived += Int64(bytes)
                return !state.isCancelled && state.interruption == nil
            })
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
        let head = ResponseHead(http)
        guard !ResponseRules.isInterim(head) else { return }
        // A head framed two ways (differing lengths) or by a transfer coding that cannot be read is refused
        // before anything of it is reported.
        // A 407 for an `https` URL is the proxy's answer to the tunnel (Foundation shows it as the response): the
        // transfer fails as CurlTransport's does, never as the server's status.
        let hasBody = ResponseRules.hasBody(statusCode: head.statusCode, method: dataTask.originalRequest?.httpMethod)
        let violation =
            head.statusCode == 407 && head.url.scheme?.lowercased() == "https"
            ? URLError(
                .userAuthenticationRequired, userInfo: [NSLocalizedDescriptionKey: "the proxy refused the tunnel (407)"]
            )
            : FramingRules.violation(in: head, hasBody: hasBody)
        let endsHere = violation == nil && transfer.endsAtHead && hasBody
        // After a stopped redirect, URLSession reports the redirect itself as the response: not ours.
        let isInterrupted = transfer.state.withLock { state in
            guard state.interruption == nil else { return true }
            if let violation {
                state.interruption = .refused(violation)
            } else {
                state.hasResponse = true
                state.measure?.firstByteAt = DispatchTime.now().uptimeNanoseconds
                // Asked to end at its head: no body byte is reported from here, and the completion is a success.
                if endsHere { state.interruption = .endedAtHead }
            }
            return false
        }
        guard !isInterrupted else { return }
        // The task ends as cancelled; its completion reports the refusal.
        guard violation == nil else {
            SessionTransfer.cancel(dataTask, on: session.delegateQueue)
            return
        }
        storeCookies(of: http)
        transfer.events(.head(head))
        guard endsHere else { return }
        // Ended here, as asked: the transfer completes now, not when its task does (Foundation on Linux may lose the
        // cancel and read on, LINUX-URLSESSION.md), and every later callback of its task is dropped.
        let measure = transfer.state.withLock { state in
            state.isCancelled = true
            state.measure?.taskEnded()
            return state.measure
        }
        if let measure { transfer.events(.metrics(measure.metrics(endedAt: DispatchTime.now().uptimeNanoseconds))) }
        transfer.events(.completed(nil))
        routes.withLock { _ = $0.transfers.removeValue(forKey: dataTask.taskIdentifier) }
        SessionTransfer.cancel(dataTask, on: session.delegateQueue)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        streamingTransfer(for: dataTask, bytes: data.count)?.events(.data(data))
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        guard let transfer = transfer(for: task) else { return }
        transfer.state.withLock { $0.measure?.bodySent = totalBytesSent }
        transfer.events(
            .sent(
                totalBytesSent: totalBytesSent,
                totalBytesExpectedToSend: totalBytesExpectedToSend >= 0 ? totalBytesExpectedToSend : nil))
    }

    /// Answers exactly once, and never once the transfer is cancelled: Foundation on Linux traps when an
    /// answer reaches a task that a cancel has moved on ("Received callback for HTTP redirection, but
    /// we're not waiting for it"). The answer is given under the transfer's lock, and `cancel()` sets its
    /// flag under the same lock before it cancels the task, so an answer is always queued ahead of the
    /// cancel on the task's work queue, or not given at all.
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        guard let transfer = routes.withLock({ $0.transfers[task.taskIdentifier] }) else {
            // Not ours (already completed): nothing is waiting on the answer.
            return
        }
        var decision = redirects.decide(
            from: response.url ?? task.currentRequest?.url, to: request,
            location: response.value(forHTTPHeaderField: "Location"))
        if FramingRules.violation(in: ResponseHead(response)) != nil {
            decision = .refuse(URLError(.badServerResponse))
        } else if response.value(forHTTPHeaderField: "Location")?.contains(", ") == true {
            // Foundation joins repeated fields with ", ", which no URL holds (a space is not allowed in one): two
            // Location fields, naming two places. The redirect is refused, as the curl transport refuses it.
            decision = .refuse(
                URLError(
                    .badServerResponse,
                    userInfo: [NSLocalizedDescriptionKey: "more than one Location field in a redirect"]))
        } else if case .follow(var next) = decision {
            storeCookies(of: response)
            addCookies(to: &next, own: transfer.ownCookie(for: next.url))
            decision = .follow(next)
        }
        let from = response.url ?? task.currentRequest?.url ?? transfer.request.url
        let answered = transfer.state.withLock { state -> TransferRedirect? in
            guard !state.isCancelled else { return nil }
            switch decision {
            case .refuse(let error):
                state.interruption = .refused(error)
                completionHandler(nil)
                return from.map {
                    TransferRedirect(statusCode: response.statusCode, from: $0, to: request.url, refusal: error)
                }
            case .follow(var next):
                state.measure?.redirects += 1
                // Linux keeps the method of a 307/308 but drops the body: stop here and replay with it.
                if [307, 308].contains(response.statusCode), let body = transfer.request.httpBody {
                    next.httpMethod = transfer.request.httpMethod
                    next.httpBody = body
                    state.interruption = .replay(next)
                    completionHandler(nil)
                } else {
                    completionHandler(next)
                }
                return from.map { TransferRedirect(statusCode: response.statusCode, from: $0, to: next.url) }
            }
        }
        // On the session's serial delegate queue, as every event of the transfer.
        if let answered { transfer.events(.redirect(answered)) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics) {
        routes.withLock { $0.transfers[task.taskIdentifier] }?.state.withLock { $0.measure?.platform = metrics }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let transfer = routes.withLock { $0.transfers.removeValue(forKey: task.taskIdentifier) }
        guard let transfer else { return }
        // One read of the transfer's state decides everything below.
        let (isCancelled, interruption, redirectCount, midBody, measure) = transfer.state.withLock { state in
            defer { state.interruption = nil }
            switch state.interruption {
            case .replay?, .refused?: state.redirectCount += 1
            case .endedAtHead?, nil: break
            }
            state.measure?.taskEnded()
            return (state.isCancelled, state.interruption, state.redirectCount, state.hasResponse, state.measure)
        }
        guard !isCancelled else { return }
        let ended = { (error: URLError?) in
            if let measure { transfer.events(.metrics(measure.metrics(endedAt: DispatchTime.now().uptimeNanoseconds))) }
            transfer.events(.completed(error))
        }
        switch interruption {
        case .refused(let refusal)?:
            ended(refusal)
        case .endedAtHead?:
            // Completed at its head already (the transfer is marked cancelled then: not reached).
            break
        case .replay(let replay)? where error == nil:
            guard redirectCount <= Self.maximumRedirects else { return ended(URLError(.httpTooManyRedirects)) }
            start(transfer, on: session, request: replay)
        case .replay?, nil:
            let url = task.currentRequest?.url ?? transfer.request.url
            ended(error.map { refined(Self.urlError($0, afterResponse: midBody, url: url), url: url) })
        }
    }

    /// `error` without proxy credentials in its text; a failure that Foundation left as `.unknown` and whose
    /// words name a proxy is the proxy's (see ``ProxyRoutes/refine(_:url:isProxyFailure:)``).
    private func refined(_ error: URLError, url: URL?) -> URLError {
        let words = (error.userInfo[NSLocalizedDescriptionKey] as? String)?.lowercased() ?? ""
        return proxies.refine(error, url: url, isProxyFailure: error.code == .unknown && words.contains("proxy"))
    }

    /// Maps any session error of a transfer to `url` to a `URLError`, giving the codes Apple gives where
    /// Linux reports -1 (`.unknown`) or a misleading code. Foundation on Linux keeps libcurl's words and drops
    /// its `CURLcode`, so a -1 is told by when it came:
    /// - before the final head: by libcurl's words (``LibcurlWords/codeBeforeResponse(_:)``): a head that could
    ///   not be read → `.badServerResponse`, never retried; more codings than libcurl takes →
    ///   `.cannotDecodeContentData`; a tunnel the proxy refused → `.userAuthenticationRequired` (407) or
    ///   `.cannotConnectToHost`; a server certificate that expired, is not yet valid or is not trusted (or not
    ///   for this host) → `.serverCertificateHasBadDate`, `.serverCertificateNotYetValid`,
    ///   `.serverCertificateUntrusted`; any other TLS failure → `.secureConnectionFailed`; else `.unknown`;
    /// - after it: the body ended early ("transfer closed with N bytes remaining") → `.networkConnectionLost`,
    ///   unless it is one of libcurl's deterministic body failures, which only its words tell apart here (read
    ///   without regard to case): a body coding that cannot be decoded → `.cannotDecodeContentData`, broken
    ///   chunk framing → `.badServerResponse`;
    /// - `.unsupportedURL` for an HTTP(S) URL, which Linux reports for a malformed status line ("Received
    ///   HTTP/0.9") → `.badServerResponse`. Redirects to other schemes are refused before URLSession
    ///   sees them, so the URL is always the one that was sent.
    static func urlError(_ error: any Error, afterResponse: Bool, url: URL?) -> URLError {
        let nsError = error as NSError
        guard nsError.domain == NSURLErrorDomain else {
            return URLError(.unknown, userInfo: [NSUnderlyingErrorKey: nsError])
        }
        // Failable on Linux, not on Apple platforms: the annotation serves both.
        let code: URLError.Code? = URLError.Code(rawValue: nsError.code)
        let scheme = url?.scheme?.lowercased()
        if code == nil || code == .unknown {
            let text = nsError.localizedDescription.lowercased()
            guard afterResponse else {
                return URLError(LibcurlWords.codeBeforeResponse(text) ?? .unknown, userInfo: nsError.userInfo)
            }
            if text.contains("unencoding") || text.contains("content encoding") || text.contains("decompress") {
                return URLError(.cannotDecodeContentData, userInfo: nsError.userInfo)
            }
            if text.contains("chunk") { return URLError(.badServerResponse, userInfo: nsError.userInfo) }
            return URLError(.networkConnectionLost, userInfo: nsError.userInfo)
        }
        if code == .unsupportedURL, scheme == "http" || scheme == "https" {
            return URLError(.badServerResponse, userInfo: nsError.userInfo)
        }
        // Foundation calls libcurl's code 52 (a connection closed before any answer) a bad response: its words say
        // which failure it was, as CurlTransport's code does (a lost connection, retried alike).
        if code == .badServerResponse, !afterResponse,
            let said = LibcurlWords.codeBeforeResponse(nsError.localizedDescription.lowercased())
        {
            return URLError(said, userInfo: nsError.userInfo)
        }
        return (error as? URLError) ?? URLError(code ?? .unknown, userInfo: nsError.userInfo)
    }
}
