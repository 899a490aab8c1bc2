import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Settings and operations for batches of downloads: per-host limits and groups of requests.
extension NetworkQueue {
    /// The most transfers in flight at once to one server (scheme, host and port; HEAD preflights count);
    /// 0 means no per-host limit, only ``maxConcurrentRequestCount``. Default 0.
    ///
    /// A request held back by its server's limit does not hold back requests to other servers behind it:
    /// the next request in ``order`` whose server has room starts. Takes effect at once; negative values
    /// are clamped to 0.
    public var maxConcurrentRequestsPerHost: Int {
        get { core.withLock { $0.machine.perHostLimit } }
        set { send { $0.setPerHostLimit(newValue, now: $1) } }
    }

    /// What ``add(_:)`` does with a request whose method, URL and destination match a request still in the
    /// queue (pending, running or waiting to retry); default ``DuplicatePolicy/allow``. Applies to requests
    /// added after it is set.
    public var duplicatePolicy: DuplicatePolicy {
        get { core.withLock { $0.machine.duplicatePolicy } }
        set {
            core.withLock { core in
                core.machine.duplicatePolicy = newValue
                if newValue == .allow { core.machine.leaders.removeAll() }
            }
        }
    }

    /// A cap on the queue's total receive rate, in bytes per second; nil (the default) for none.
    ///
    /// The cap is shared equally among the running transfers, each capped by its transport
    /// (``TransferHandle/setMaximumReceiveRate(_:)``: ``CurlTransport`` does, with libcurl's own rate
    /// limit), and shared again whenever a transfer starts or ends. It can be changed while transfers run.
    /// A transport that cannot cap a transfer (``URLSessionTransport``: Foundation has no such control)
    /// leaves its transfers uncapped. Zero or negative values mean no cap.
    public var maximumBytesPerSecond: Int? {
        get { core.withLock { $0.machine.bandwidth.cap } }
        set { send { $0.setMaximumBytesPerSecond(newValue, now: $1) } }
    }

    /// The requests in the queue for which `predicate` is true, in the order they were added. The
    /// predicate runs outside the queue's lock, on the caller's thread; the ``NetworkRequest/tag`` and
    /// ``NetworkRequest/userInfo`` you set serve as groups.
    public func requests(where predicate: (NetworkRequest) throws -> Bool) rethrows -> [NetworkRequest] {
        try requests.filter(predicate)
    }

    /// Cancels every request in the queue for which `predicate` is true (each ends with `.cancelled`, as
    /// with ``cancel(_:)``), in one step: none of them starts after this returns. Returns the requests the
    /// predicate chose, in the order they were added. The predicate runs outside the queue's lock; a
    /// chosen request that ended meanwhile (or whose file is being moved into place) keeps its own end.
    ///
    /// ```swift
    /// queue.cancel { $0.tag == album7 }
    /// ```
    @discardableResult
    public func cancel(where predicate: (NetworkRequest) throws -> Bool) rethrows -> [NetworkRequest] {
        let chosen = try requests.filter(predicate)
        let targets = chosen.compactMap { request in slot(of: request).map { (request: request, slot: $0) } }
        if !targets.isEmpty { send { $0.cancel(targets, now: $1) } }
        return chosen
    }
}
