import Foundation

extension NetworkQueue {
    /// One delivery pass on the delivery queue: everything posted so far, in order. For each event the
    /// request's own handler runs first, then the delegate, then the ``events()`` subscribers.
    func deliver() {
        let (items, runs, delegate, subscribers, logHandler) = locked.withLock { core in
            let items = core.machine.outbox.take(now: clock.now())
            var woken = 0
            for case .wakeRuns(let count, _) in items { woken += count }
            let runs = Array(core.waiters.prefix(woken))
            core.waiters.removeFirst(woken)
            return (items, runs, core.delegate, Array(core.subscribers.values), core.logHandler)
        }
        var nextRun = runs.startIndex
        for item in items {
            switch item {
            case .event(let event):
                deliver(event, to: delegate)
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
                if observed, let result = status.status.result { request.takeEndObserver()?(result) }
            case .settleAll(let requests, let error, let claims, let observed):
                for request in requests {
                    request.publishEnd(error)
                    if observed { request.takeEndObserver()?(.failure(error)) }
                }
                for claim in claims { claim.endRequest() }
            case .wakeRuns(let count, let progress):
                for run in runs[nextRun..<nextRun + count] { run.resume(returning: progress) }
                nextRun += count
            case .log(let record):
                logHandler?(record)
            }
        }
    }

    private func deliver(_ event: NetworkQueueEvent, to delegate: (any NetworkQueueDelegate)?) {
        switch event {
        case .didStart(let request):
            delegate?.networkQueue(self, didStart: request)
        case .didReceiveHeaders(let request, let head):
            delegate?.networkQueue(self, didReceiveHeaders: request, head: head)
        case .didCollectMetrics(let request, let metrics):
            delegate?.networkQueue(self, didCollectMetrics: request, metrics: metrics)
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
        case .didUpdateProgress(let progress):
            updateFoundationProgress(progress)
            delegate?.networkQueue(self, didUpdateProgress: progress)
        case .sourceDidFail(let error):
            delegate?.networkQueue(self, sourceDidFail: error)
        case .serverHoldChanged(let hold):
            delegate?.networkQueue(self, serverHoldChanged: hold)
        case .queueDidFinish:
            delegate?.networkQueueDidFinish(self)
        }
    }
}
