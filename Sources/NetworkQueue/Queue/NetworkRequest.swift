import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One HTTP request run by a ``NetworkQueue``, with its validation rules, handlers and observable state.
///
/// Configuration is fixed at creation. The state properties (``state``, ``response``, ``result``, …)
/// may be read from any thread at any time. A request can be added to one queue, once.
public final class NetworkRequest: Sendable, Identifiable {
    /// The life of a request.
    public enum State: Sendable, Hashable {
        /// Added, waiting for a slot (or for `go()`).
        case pending
        /// Its HEAD request for accurate progress is running.
        case preflighting
        /// Its transfer is running.
        case running
        /// An attempt failed and it waits (holding no slot) to be sent again; see ``RetryPolicy``.
        case waitingToRetry
        /// Paused by ``NetworkQueue/pause(_:)``: it holds no slot and waits for ``NetworkQueue/resume(_:)``.
        case paused
        /// It succeeded.
        case finished
        /// It failed (see ``NetworkRequest/result``).
        case failed
        /// It was cancelled.
        case cancelled

        /// True for `.finished`, `.failed` and `.cancelled`.
        public var isTerminal: Bool {
            switch self {
            case .finished, .failed, .cancelled: true
            case .pending, .preflighting, .running, .waitingToRetry, .paused: false
            }
        }
    }

    /// Where a response body goes.
    public enum Destination: Sendable, Hashable {
        /// Into ``NetworkResponse/body``. The default.
        case memory
        /// Streamed to `<url>.part` (written in chunks of about 1 MiB), then renamed to `url` when the
        /// request succeeds, atomically replacing a file there (never a directory: that fails with
        /// ``NetworkQueueError/fileError(path:reason:)``). A request reported finished always leaves its
        /// file; one reported failed or cancelled never leaves one at `url` and deletes its `.part`.
        /// Two requests may not write the same file at once (``NetworkQueueError/InvalidRequestReason/destinationInUse(_:)``).
        /// ``NetworkResponse/fileURL`` is `url` and ``NetworkResponse/body`` is empty.
        ///
        /// If the process is killed mid-transfer, the `.part` file stays behind and may hold up to 1 MiB
        /// less than had arrived (the unwritten buffer).
        case file(URL)
    }

    /// The largest response body a request accepts. An integer literal means ``bytes(_:)``.
    public enum ResponseSizeLimit: Sendable, Hashable, ExpressibleByIntegerLiteral {
        /// ``defaultMemoryLimit`` (64 MiB) for the memory destination; no limit for a file destination.
        case automatic
        /// At most this many bytes (decoded), whatever the destination.
        case bytes(Int64)
        /// No limit. Beware: an endless body held in memory grows until the process runs out of memory.
        case unlimited

        /// The limit ``automatic`` sets for bodies held in memory: 64 MiB.
        public static let defaultMemoryLimit: Int64 = 64 << 20

        /// Creates ``bytes(_:)``.
        public init(integerLiteral value: Int64) { self = .bytes(value) }
    }

    /// Timeouts of this many seconds (about 11.6 days) or more, infinity and NaN mean no timeout.
    public static let noTimeoutThreshold: TimeInterval = RequestRules.noTimeoutThreshold

    /// The request to send.
    public let urlRequest: URLRequest
    /// Where the response body goes. Default ``Destination-swift.enum/memory``.
    public let destination: Destination
    /// Status codes that count as success; nil accepts every status (ASI's behaviour). Default `200..<300`.
    public let acceptableStatusCodes: Range<Int>?
    /// For a file destination: whether a `<file>.part` left by an earlier attempt (a retry) or an earlier
    /// run is continued. The part is continued only when the validator saved beside it
    /// (`<file>.part.validator`: the strong ETag, else the Last-Modified of the response that began it)
    /// exists; the request then sends `Range: bytes=<part size>-` and `If-Range`. A 206 for exactly those
    /// bytes is appended; a 200 starts the file over; a 416 or a 206 for other bytes sends the request
    /// again once without a range. Only GETs without a `Range` header of their own are resumed; a
    /// resumed request's response has status 206. Default true (set in the initializer).
    public let resumesDownloads: Bool
    /// MIME types (`type/subtype`, compared case-insensitively) that count as success; nil accepts any.
    /// Default nil.
    public let acceptableContentTypes: Set<String>?
    /// The largest body accepted, in decoded bytes; a larger one fails with `.responseTooLarge` and its
    /// transfer stops. Nil means no limit. Default (``ResponseSizeLimit/automatic``): 64 MiB for the memory
    /// destination, none for a file destination.
    public let maximumResponseSize: Int64?
    /// An integer for the caller's own use. Default 0.
    public let tag: Int
    /// Values for the caller's own use. Default empty.
    public let userInfo: [String: any Sendable]
    /// When and how soon a failed attempt is sent again; nil uses the queue's ``NetworkQueue/retryPolicy``.
    /// Default nil.
    public let retryPolicy: RetryPolicy?
    /// Runs before every attempt (and before the HEAD preflight), after the queue's
    /// ``NetworkQueue/adapter``, and returns the `URLRequest` to send: for example one with a fresh
    /// token. A throw fails the request with ``NetworkQueueError/adaptationFailed(_:)``. Default nil.
    public let adapt: (@Sendable (URLRequest) async throws -> URLRequest)?
    /// The priority it was created with: the one it has when it is added (``NetworkQueue/setPriority(_:for:)``
    /// needs it added), read without the lock.
    let initialPriority: Priority
    /// What happens when the file destination exists already; default ``ExistingFile/replace``.
    public let existingFile: ExistingFile
    /// The digest the whole body must have (for a file: the whole file, a resumed part included); a body
    /// that hashes otherwise fails with ``NetworkQueueError/integrityCheckFailed(expected:actual:)`` and
    /// nothing of it is kept. Hashed as it streams, with OpenSSL's libcrypto on Linux and CommonCrypto on
    /// Apple platforms. Default nil.
    public let checksum: Checksum?
    /// Whether the server's own digests are verified when the response carries them: `Content-Digest`
    /// (this response's bytes), `Repr-Digest` and `Digest: SHA-256=` (the whole file), SHA-256 and
    /// SHA-512 only. A content-coded body (gzip, …) is not held to them: they cover the encoded bytes.
    /// Default true.
    public let verifiesServerDigests: Bool

    /// Why ``urlRequest`` cannot be sent, worked out once: the request is immutable.
    let invalidReason: NetworkQueueError.InvalidRequestReason?
    let completionHandler: (@Sendable (Result<NetworkResponse, NetworkQueueError>) -> Void)?
    let downloadProgressHandler: (@Sendable (TransferProgress) -> Void)?
    let uploadProgressHandler: (@Sendable (TransferProgress) -> Void)?
    let shared: Locked<Shared>

    /// What the queue publishes about the request. Versioned: a publication older than the one shown is
    /// dropped, so publications performed out of order never move the state backwards. A terminal
    /// status has the highest version: nothing replaces it.
    struct Status {
        var version: UInt64 = 0
        var state = State.pending
        var response: ResponseHead?
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
        var status = Status()
        var isAdded = false
        var priority = Priority.normal
        var membership: Membership?
        /// Called once with the result when the request's end is delivered (a decoded value waits for it).
        var endObserver: (@Sendable (Result<NetworkResponse, NetworkQueueError>) -> Void)?
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
        shared.withLock { shared in
            guard shared.status.version != .max else { return }
            shared.status.version = .max
            shared.status.state = error.isCancellation ? .cancelled : .failed
            shared.status.result = .failure(error)
        }
    }

    /// Shows `status` unless a newer one is shown already.
    func publish(_ status: Status) {
        shared.withLock { shared in
            if status.version > shared.status.version { shared.status = status }
        }
    }

    /// Creates a request.
    ///
    /// Handlers run on the queue's delegate executor, each just before the queue delegate's method for
    /// the same event.
    /// - Parameters:
    ///   - urlRequest: what to send. Its `timeoutInterval` is enforced by the queue as an idle timeout
    ///     with sub-second precision: the request fails with `.timedOut` once no byte moved for that long.
    ///     Infinity, NaN and values of ``noTimeoutThreshold`` or more mean no timeout; zero or a negative
    ///     value makes the request invalid (``NetworkQueueError/InvalidRequestReason/invalidTimeout(_:)``).
    ///   - destination: where the body goes; default `.memory`.
    ///   - resumesDownloads: for a file destination, whether a `.part` file left by an earlier attempt or
    ///     run is continued with a range request (see ``resumesDownloads``); default true.
    ///   - acceptableStatusCodes: statuses that count as success; default `200..<300`; nil accepts all.
    ///   - acceptableContentTypes: MIME types that count as success; default nil (any).
    ///   - maximumResponseSize: the largest body accepted; default ``ResponseSizeLimit/automatic``
    ///     (64 MiB in memory, no limit for a file); ``ResponseSizeLimit/unlimited`` for none.
    ///   - tag: an integer for your own use; default 0.
    ///   - userInfo: values for your own use; default empty.
    ///   - onDownloadProgress: called with this request's download progress (coalesced).
    ///   - onUploadProgress: called with this request's upload progress (coalesced).
    ///   - onCompletion: called once with the result, before the delegate's didFinish or didFail.
    ///   - retryPolicy: replaces the queue's ``NetworkQueue/retryPolicy`` for this request; default nil
    ///     (the queue's).
    ///   - adapt: changes the `URLRequest` before each attempt (see ``adapt``); default nil.
    ///   - checksum: the digest the whole body must have (see ``checksum``); default nil.
    ///   - verifiesServerDigests: whether digests the server sends are verified (see
    ///     ``verifiesServerDigests``); default true.
    ///   - priority: which pending request starts first (see ``priority``); default ``Priority/normal``.
    ///   - existingFile: what a file destination that exists already does (see ``existingFile``); default
    ///     ``ExistingFile/replace``.
    public init(
        _ urlRequest: URLRequest,
        destination: Destination = .memory,
        resumesDownloads: Bool = true,
        acceptableStatusCodes: Range<Int>? = 200..<300,
        acceptableContentTypes: Set<String>? = nil,
        maximumResponseSize: ResponseSizeLimit = .automatic,
        tag: Int = 0,
        userInfo: [String: any Sendable] = [:],
        onDownloadProgress: (@Sendable (TransferProgress) -> Void)? = nil,
        onUploadProgress: (@Sendable (TransferProgress) -> Void)? = nil,
        onCompletion: (@Sendable (Result<NetworkResponse, NetworkQueueError>) -> Void)? = nil,
        retryPolicy: RetryPolicy? = nil,
        adapt: (@Sendable (URLRequest) async throws -> URLRequest)? = nil,
        checksum: Checksum? = nil,
        verifiesServerDigests: Bool = true,
        priority: Priority = .normal,
        existingFile: ExistingFile = .replace
    ) {
        self.existingFile = existingFile
        self.initialPriority = priority
        self.retryPolicy = retryPolicy
        self.adapt = adapt
        self.urlRequest = urlRequest
        self.destination = destination
        self.resumesDownloads = resumesDownloads
        self.checksum = checksum
        self.verifiesServerDigests = verifiesServerDigests
        self.invalidReason =
            RequestRules.validate(urlRequest, destination: destination)
            ?? checksum.flatMap { $0.isWellFormed ? nil : .invalidChecksum($0) }
        self.acceptableStatusCodes = acceptableStatusCodes
        self.acceptableContentTypes = acceptableContentTypes.map { Set($0.map { $0.lowercased() }) }
        self.maximumResponseSize = RequestRules.maximumResponseSize(maximumResponseSize, destination: destination)
        self.tag = tag
        self.userInfo = userInfo
        self.downloadProgressHandler = onDownloadProgress
        self.uploadProgressHandler = onUploadProgress
        self.completionHandler = onCompletion
        var shared = Shared()
        shared.priority = priority
        shared.status.upload.expectedBytes = Int64(urlRequest.httpBody?.count ?? 0)
        self.shared = Locked(shared)
    }

    /// Creates a GET request for `url` with the default validation.
    public convenience init(url: URL) {
        self.init(URLRequest(url: url))
    }

    /// The URL of ``urlRequest``.
    public var url: URL? { urlRequest.url }
    /// Where the request is in its life.
    public var state: State { shared.withLock { $0.status.state } }
    /// The final response head as Foundation's type, once received (built on first read; see ``responseHead``).
    public var response: HTTPURLResponse? { responseHead?.httpURLResponse }

    /// The final response head, once received.
    public var responseHead: ResponseHead? { shared.withLock { $0.status.response } }
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
