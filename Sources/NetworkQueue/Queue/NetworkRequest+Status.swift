import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a request shows of its life: the status the queue publishes, and its public readers.
extension NetworkRequest {
    /// What the queue publishes about the request. Versioned: a publication older than the one shown is
    /// dropped, so publications performed out of order never move the state backwards. A terminal
    /// status has the highest version: nothing replaces it.
    struct Status {
        /// The status of a request nothing was published about yet.
        static let initial = Status()
        var version: UInt64 = 0
        var state = State.pending
        var head: ResponseHead?
        var result: Result<NetworkResponse, NetworkQueueError>?
        var download = TransferProgress(completedBytes: 0, expectedBytes: nil)
        var upload = TransferProgress(completedBytes: 0, expectedBytes: 0)
        var attemptCount = 0
        var metrics: RequestMetrics?
    }

    /// The request's place in the queue it was added to, for `cancel(_:)`.
    struct Membership {
        let queue: ObjectIdentifier
        let slot: Int
    }

    struct Shared {
        /// The published status; nil while it is the initial one (a waiting request holds no copy).
        private var published: PublishedStatus?
        /// The status shown (read in place: a field read does not copy the whole status).
        var status: Status {
            _read {
                if let published { yield published.status } else { yield Status.initial }
            }
        }

        /// Shows `status` before anything is published (a request with a body to send shows its size from the
        /// start).
        mutating func showFirst(_ status: Status) { published = PublishedStatus(status) }

        /// Shows the status `published` holds unless a newer one is shown already, keeping the object itself (a
        /// status is published as one reference, never copied). Returns the object replaced, for the caller to
        /// release after the lock.
        mutating func publish(_ newer: PublishedStatus) -> PublishedStatus? {
            guard newer.status.version > (published?.status.version ?? 0) else { return nil }
            let replaced = published
            published = newer
            return replaced
        }

        var isAdded = false
        var priority = Priority.normal
        var membership: Membership?
        /// Called once with the result when the request's end is delivered (a decoded value waits for it).
        var endObserver: (@Sendable (Result<NetworkResponse, NetworkQueueError>) -> Void)?
    }

    /// A status as the queue publishes it: made once by the engine and handed on as one reference (by its
    /// action, by the delivery that settles the request, into the request's ``Shared``). Immutable: the object
    /// may be shown by the request and still held by a delivery.
    final class PublishedStatus: @unchecked Sendable {
        let status: Status
        init(_ status: Status) { self.status = status }
    }

    /// Takes the end observer, so that it is called at most once.
    func takeEndObserver() -> (@Sendable (Result<NetworkResponse, NetworkQueueError>) -> Void)? {
        shared.withLock { shared in
            defer { shared.endObserver = nil }
            return shared.endObserver
        }
    }

    /// Shows the request ended with `error`, its byte counts unchanged (it never moved a byte).
    func publishEnd(_ error: NetworkQueueError) {
        let replaced = shared.withLock { shared -> PublishedStatus? in
            guard shared.status.version != .max else { return nil }
            var status = shared.status
            status.version = .max
            status.state = error.isCancellation ? .cancelled : .failed
            status.result = .failure(error)
            return shared.publish(PublishedStatus(status))
        }
        withExtendedLifetime(replaced) {}
    }

    /// Shows the status `published` holds unless a newer one is shown already.
    func publish(_ published: PublishedStatus) {
        // The status replaced is released here, after the lock.
        let replaced = shared.withLock { $0.publish(published) }
        withExtendedLifetime(replaced) {}
    }

    /// Where the request is in its life.
    public var state: State { shared.withLock { $0.status.state } }
    /// The final response head, once received (its ``ResponseHead/httpURLResponse`` is built on first read).
    public var head: ResponseHead? { shared.withLock { $0.status.head } }
    /// The response of a request that finished: its head, its body or file, its metrics. Nil until then, and
    /// for a request that failed (see ``result``).
    public var response: NetworkResponse? { try? result?.get() }
    /// The outcome, once the request has ended.
    public var result: Result<NetworkResponse, NetworkQueueError>? { shared.withLock { $0.status.result } }
    /// Download progress of the current transfer.
    public var downloadProgress: TransferProgress { shared.withLock { $0.status.download } }
    /// Upload progress of the current transfer.
    public var uploadProgress: TransferProgress { shared.withLock { $0.status.upload } }
    /// Its priority: the one it was created with, or the last one ``NetworkQueue/setPriority(_:for:)`` gave it.
    public var priority: Priority { shared.withLock { $0.priority } }
    /// How many times its transfer was started, retries included (0 until it starts; the HEAD preflight
    /// does not count).
    public var attemptCount: Int { shared.withLock { $0.status.attemptCount } }

    /// What the request's attempts measured so far, one ``TransferMetrics`` per ended attempt (see
    /// ``RequestMetrics``); nil before one ended, or when its queue collects no metrics (see
    /// ``NetworkQueue/collectsMetrics``). Final once the request has ended.
    public var metrics: RequestMetrics? { shared.withLock { $0.status.metrics } }
}
