import Foundation

extension NetworkQueue {
    /// One delivery pass on the delivery queue: everything posted so far, in order. For each event the
    /// request's own handler runs first, then the delegate, then the ``events()`` subscribers.
    func deliver() {
        let (items, runs, delegate, subscribers, ignores, logHandler) = core.withLock { core in
            let items = core.machine.takeDeliveries()
            var resumed = 0
            for case .resumeRuns(let count, _) in items { resumed += count }
            let runs = Array(core.waiters.prefix(resumed))
            core.waiters.removeFirst(resumed)
            let ignores = Ignored(heads: core.delegateIgnoresHeads, metrics: core.delegateIgnoresMetrics)
            return (items, runs, core.delegate, Array(core.subscribers.values), ignores, core.logHandler)
        }
        var nextRun = runs.startIndex
        var ignored = ignores
        for item in items {
            switch item {
            case .event(let event):
                deliver(event, to: delegate, ignoring: &ignored)
                for subscriber in subscribers { subscriber.yield(event) }
            case .downloadProgress(let request, let progress):
                request.downloadProgressHandler?(progress)
            case .uploadProgress(let request, let progress):
                request.uploadProgressHandler?(progress)
            case .settle(let status, let request, let sink, let claim, let observed):
                // Usually done already by the thread that ended the request; repeated here (idempotent)
                // so that nothing about the end is delivered before its status, file and claim are final.
                request.publish(status)
                sink?.discard()
                claim?.endRequest()
                // Only a decoded request has an observer: no second lock per request for the others.
                if observed, let result = status.result { request.takeEndObserver()?(result) }
            case .settleAll(let requests, let error, let claims, let observed):
                for request in requests {
                    request.publishEnd(error)
                    if observed { request.takeEndObserver()?(.failure(error)) }
                }
                for claim in claims { claim.endRequest() }
            case .resumeRuns(let count, let progress):
                for run in runs[nextRun..<nextRun + count] { run.resume(returning: progress) }
                nextRun += count
            case .log(let record):
                logHandler?(record)
            }
        }
    }

    /// Hands a head to the delegate, and notes when both head methods turned out to be the defaults: such a
    /// delegate reads no head, and gets none from then on (see ``Core/delegateIgnoresHeads``). Returns
    /// whether that is so.
    private func deliverHead(_ head: ResponseHead, of request: NetworkRequest, to delegate: any NetworkQueueDelegate) -> Bool {
        headDefaultsRan.withLock { $0 = (false, false) }
        delegate.networkQueue(self, didReceiveHead: head, for: request)
        guard headDefaultsRan.withLock({ $0.head && $0.headers }) else { return false }
        core.withLock { core in
            if core.delegate === delegate { core.delegateIgnoresHeads = true }
        }
        return true
    }

    /// Hands metrics to the delegate, and notes when its method turned out to be the default: such a
    /// delegate reads no metrics, and the queue stops collecting them for it (see ``Core/delegateIgnoresMetrics``).
    /// Returns whether that is so.
    private func deliverMetrics(_ metrics: TransferMetrics, of request: NetworkRequest, to delegate: any NetworkQueueDelegate) -> Bool {
        metricsDefaultRan.withLock { $0 = false }
        delegate.networkQueue(self, didCollectMetrics: metrics, for: request)
        guard metricsDefaultRan.withLock({ $0 }) else { return false }
        core.withLock { core in
            guard core.delegate === delegate else { return }
            core.delegateIgnoresMetrics = true
            core.updateListeners()
        }
        return true
    }

    /// What the delegate was found not to read (in an earlier pass, or in this one).
    struct Ignored {
        var heads: Bool
        var metrics: Bool
    }

    private func deliver(_ event: NetworkQueueEvent, to delegate: (any NetworkQueueDelegate)?, ignoring: inout Ignored) {
        switch event {
        case .didStart(let request):
            delegate?.networkQueue(self, didStart: request)
        case .didReceiveHeaders(let request, let head):
            if let delegate, !ignoring.heads { ignoring.heads = deliverHead(head, of: request, to: delegate) }
        case .didCollectMetrics(let request, let metrics):
            if let delegate, !ignoring.metrics { ignoring.metrics = deliverMetrics(metrics, of: request, to: delegate) }
        case .didFinish(let request, let response):
            request.completionHandler?(.success(response))
            delegate?.networkQueue(self, didFinish: request, response: response)
        case .didFail(let request, let error):
            request.completionHandler?(.failure(error))
            delegate?.networkQueue(self, didFail: request, error: error)
        case .willRetry(let request, let delay, let error):
            delegate?.networkQueue(self, willRetry: request, after: delay, error: error)
        case .didPause(let request):
            delegate?.networkQueue(self, didPause: request)
        case .didResume(let request):
            delegate?.networkQueue(self, didResume: request)
        case .progress(let progress):
            updateFoundationProgress(progress)
            delegate?.networkQueue(self, didUpdateProgress: progress)
        case .queueDidFinish:
            delegate?.networkQueueDidFinish(self)
        }
    }
}
