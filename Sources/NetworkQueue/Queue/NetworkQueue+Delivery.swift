import Foundation

extension NetworkQueue {
    /// One delivery pass on the delivery queue: everything posted so far, in order. For each event the
    /// request's own handler runs first, then the delegate, then the ``events()`` subscribers.
    func deliver() {
        let (items, delegate, subscribers) = state.withLock { state in
            (state.takeOutbox(), state.delegate, Array(state.subscribers.values))
        }
        for item in items {
            switch item {
            case .event(let event):
                deliver(event, to: delegate)
                for subscriber in subscribers { subscriber.yield(event) }
            case .downloadProgress(let request, let progress):
                request.downloadProgressHandler?(progress)
            case .uploadProgress(let request, let progress):
                request.uploadProgressHandler?(progress)
            case .resume(let waiters, let progress):
                for waiter in waiters { waiter.resume(returning: progress) }
            }
        }
    }

    private func deliver(_ event: NetworkQueueEvent, to delegate: (any NetworkQueueDelegate)?) {
        switch event {
        case .didStart(let request):
            delegate?.networkQueue(self, didStart: request)
        case .didReceiveHeaders(let request, let response):
            delegate?.networkQueue(self, didReceiveHeaders: response, for: request)
        case .didFinish(let request, let response):
            request.completionHandler?(.success(response))
            delegate?.networkQueue(self, didFinish: request, response: response)
        case .didFail(let request, let error):
            request.completionHandler?(.failure(error))
            delegate?.networkQueue(self, didFail: request, error: error)
        case .progress(let progress):
            updateFoundationProgress(progress)
            delegate?.networkQueue(self, didUpdateProgress: progress)
        case .queueDidFinish:
            delegate?.networkQueueDidFinish(self)
        }
    }
}
