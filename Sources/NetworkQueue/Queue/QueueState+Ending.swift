import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension QueueState {
    // MARK: Ending a request

    /// Ends a request exactly once: frees its slot, stops its transfer (unless `transferEnded`: the
    /// transport reported its completion), updates progress and posts its final progress and its
    /// didFinish / didFail.
    ///
    /// Callers follow it with ``finishStep(_:)``. `inBulk` says cancelAll already took the request out of
    /// the scheduler, the ledger and the records in bulk, which saves the lookups.
    mutating func end(
        _ id: ID, _ result: Result<NetworkResponse, NetworkQueueError>, transferEnded: Bool = false,
        _ fx: inout Effects
    ) {
        guard let record = records.removeValue(forKey: id) else { return }
        end(record, result, transferEnded: transferEnded, &fx)
    }

    mutating func end(
        _ record: Record, _ result: Result<NetworkResponse, NetworkQueueError>, transferEnded: Bool = false,
        inBulk: Bool = false, _ fx: inout Effects
    ) {
        let id = ID(record.request)
        record.hasEnded = true
        if !inBulk {
            let preflight = scheduler.remove(Job(id: id, lane: .preflight))
            let main = scheduler.remove(Job(id: id, lane: .main))
            if !transferEnded, preflight == .wasActive || main == .wasActive, let handle = record.handle {
                fx.cancels.append(handle)
            }
        }
        let request = record.request
        // Deleting a partial file here keeps "didFail delivered" meaning "no partial file left". It is a
        // close and an unlink, on failures only.
        if case .failure = result { record.sink?.discard() }
        record.claim?.endRequest()
        let state: NetworkRequest.State
        switch result {
        case .success:
            state = .finished
            ledger.finish(id, .succeeded)
        case .failure(let error):
            state = error.isCancellation ? .cancelled : .failed
            if !inBulk { ledger.finish(id, error.isCancellation ? .cancelled : .failed) }
        }
        let (upload, download) = record.publishProgress()
        request.status.withLock { status in
            status.state = state
            status.result = result
        }
        if record.uploadDirty, request.uploadProgressHandler != nil { post(.uploadProgress(request, upload), &fx) }
        if record.downloadDirty, request.downloadProgressHandler != nil {
            post(.downloadProgress(request, download), &fx)
        }
        switch result {
        case .success(let response): postEvent(.didFinish(request, response), for: request, &fx)
        case .failure(let error): postEvent(.didFail(request, error), for: request, &fx)
        }
    }

    /// Ends a request with a failure, and its siblings too when cancel-all-on-failure is on.
    mutating func fail(_ id: ID, _ error: NetworkQueueError, transferEnded: Bool = false, _ fx: inout Effects) {
        // A request that already ended cannot fail again, nor cancel its siblings.
        guard let url = records[id].map({ $0.request.url }) else { return }
        end(id, .failure(error), transferEnded: transferEnded, &fx)
        if cancelsAllOnFailure, !error.isCancellation {
            cancelAll(.cancelledBecauseSiblingFailed(sibling: url), &fx)
        } else {
            finishStep(&fx)
        }
    }
}
