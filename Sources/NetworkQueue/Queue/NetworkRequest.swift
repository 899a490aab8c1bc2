import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One HTTP request run by a ``NetworkQueue``, with its validation rules, handlers and observable state.
///
/// Configuration is fixed at creation. The state properties (``state``, ``head``, ``result``, …)
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
        /// less than had arrived (the unwritten buffer). On Linux the part has no name until bytes are written to it
        /// ahead of the body's end (an unnamed file, linked into place whole): a small file leaves nothing.
        case file(URL)

        /// The file's path (nil for memory).
        var path: String? {
            if case .file(let url) = self { return url.path }
            return nil
        }
    }

    /// Timeouts of this many seconds (about 11.6 days) or more, infinity and NaN mean no timeout.
    public static let noTimeoutThreshold: TimeInterval = RequestRules.noTimeoutThreshold

    /// What is sent: the text of a URL to GET with `URLRequest`'s defaults (the compact form a request of a big batch
    /// keeps; its `URLRequest` is built only when something needs one), or a whole `URLRequest`.
    let outgoing: OutgoingRequest
    /// Where the response body goes. Default ``Destination-swift.enum/memory``.
    public let destination: Destination
    /// The file destination's path (`URL.path`, which percent-decodes: made once, here, where the add read it three
    /// times); nil for memory.
    let destinationPath: String?
    /// An integer for the caller's own use. Default 0.
    public let tag: Int
    /// The priority it was created with: the one it has when it is added (``NetworkQueue/setPriority(_:for:)``
    /// needs it added), read without the lock.
    let initialPriority: Priority
    /// Everything else the request was created with; one shared instance when all of it is the default.
    let options: Options
    /// What the queue publishes about the request, guarded by its lock in ``RequestLocks`` (see ``shared``).
    /// Always reached under that lock: no dynamic exclusivity check.
    @exclusivity(unchecked) nonisolated(unsafe) private var guarded: Shared

    /// The request to send. A request created with ``init(url:destination:validation:integrity:fileOptions:retryPolicy:timeLimits:priority:handlers:tag:userInfo:)`` builds it on each read (it keeps only the
    /// URL's text until it starts).
    public var urlRequest: URLRequest { outgoing.urlRequest }
    /// What counts as a successful response (see ``Validation-swift.struct``).
    public var validation: Validation { options.validation }
    /// How the body is checked (see ``Integrity-swift.struct``).
    public var integrity: Integrity { options.integrity }
    /// What a file destination does with what is on disk already (see ``FileOptions-swift.struct``).
    public var fileOptions: FileOptions { options.fileOptions }
    /// Values for the caller's own use. Default empty.
    public var userInfo: [String: any Sendable] { options.userInfo }
    /// When and how soon a failed attempt is sent again; nil uses the queue's ``NetworkQueue/retryPolicy``.
    /// Default nil.
    public var retryPolicy: RetryPolicy? { options.retryPolicy }
    /// Its deadline and lowest speed (see ``TimeLimits``); nil uses the queue's ``NetworkQueue/timeLimits``.
    /// Default nil.
    public var timeLimits: TimeLimits? { options.timeLimits }
    /// ``Validation-swift.struct/acceptableContentTypes``, lowercased once for the engine's comparisons.
    var acceptableContentTypes: Set<String>? { options.acceptableContentTypes }
    /// ``Validation-swift.struct/maximumResponseSize`` resolved for the destination (nil: no limit).
    var maximumResponseSize: Int64? {
        RequestRules.maximumResponseSize(validation.maximumResponseSize, destination: destination)
    }
    /// ``Handlers-swift.struct/adapt``, the one handler the engine reads (the others go to delivery).
    var adapt: (@Sendable (URLRequest) async throws -> URLRequest)? { options.handlers.adapt }
    /// The groups' values the engine reads, by their short names.
    var acceptableStatusCodes: Range<Int>? { validation.acceptableStatusCodes }
    var checksum: Checksum? { integrity.checksum }
    var verifiesServerDigests: Bool { integrity.verifiesServerDigests }
    var continuesPartialDownloads: Bool { fileOptions.continuesPartialDownloads }
    var existingFile: ExistingFile { fileOptions.existingFile }
    /// Why ``urlRequest`` cannot be sent, worked out once: the request is immutable.
    var invalidReason: NetworkQueueError.InvalidRequestReason? { options.invalidReason }
    var completionHandler: (@Sendable (Result<NetworkResponse, NetworkQueueError>) -> Void)? {
        options.handlers.onCompletion
    }
    var downloadProgressHandler: (@Sendable (TransferProgress) -> Void)? { options.handlers.onDownloadProgress }
    var uploadProgressHandler: (@Sendable (TransferProgress) -> Void)? { options.handlers.onUploadProgress }

    /// The origin recorded with its file (``FileOrigin``): its URL's text without a user or password, read without
    /// building the `URLRequest`.
    var origin: String { outgoing.urlText.map(FileOrigin.text(ofURLText:)) ?? "" }

    /// The method sent, read without building the `URLRequest`.
    var method: String {
        switch outgoing {
        case .get: "GET"
        case .request(let request): request.httpMethod ?? "GET"
        }
    }

    /// The `timeoutInterval` sent, read without building the `URLRequest`.
    var timeoutInterval: TimeInterval { outgoing.timeoutInterval }

    /// The size of the body sent, read without building the `URLRequest`.
    var uploadSize: Int64 {
        switch outgoing {
        case .get: 0
        case .request(let request): Int64(request.httpBody?.count ?? 0)
        }
    }

    /// The URL's text, read without building the `URLRequest` (empty without a URL).
    var urlText: String { outgoing.urlText ?? "" }

    /// The request's shared state under its lock.
    var shared: SharedState { SharedState(request: self) }

    /// Access to a request's ``Shared`` under its lock, one of ``RequestLocks``' (a request has no lock of its
    /// own: a waiting request of a big batch stays small).
    struct SharedState {
        let request: NetworkRequest

        @inline(__always)
        func withLock<Result, Failure: Error>(_ body: (inout Shared) throws(Failure) -> Result) throws(Failure)
            -> Result
        {
            let lock = RequestLocks.lock(for: request)
            pthread_mutex_lock(lock)
            defer { pthread_mutex_unlock(lock) }
            return try body(&request.guarded)
        }
    }

    /// Creates a request.
    ///
    /// - Parameters:
    ///   - urlRequest: what to send. Its `timeoutInterval` is enforced by the queue as an idle timeout
    ///     with sub-second precision: the request fails with `.timedOut` once no byte moved for that long.
    ///     Infinity, NaN and values of ``noTimeoutThreshold`` or more mean no timeout; zero or a negative
    ///     value makes the request invalid (``NetworkQueueError/InvalidRequestReason/invalidTimeout(_:)``).
    ///   - destination: where the body goes; default ``Destination-swift.enum/memory``.
    ///   - validation: what counts as success; default 2xx, any content type, 64 MiB in memory.
    ///   - integrity: the checksum the body must have and whether server digests are verified; default no
    ///     checksum, digests verified.
    ///   - fileOptions: for a file destination, whether a part file is continued and what an existing file
    ///     does; default continued, replaced.
    ///   - retryPolicy: replaces the queue's ``NetworkQueue/retryPolicy`` for this request; default nil
    ///     (the queue's).
    ///   - timeLimits: replaces the queue's ``NetworkQueue/timeLimits`` (deadline, lowest speed) for this request;
    ///     default nil (the queue's). Out-of-range limits make the request invalid
    ///     (``NetworkQueueError/InvalidRequestReason/invalidTimeLimits(_:)``).
    ///   - priority: which pending request starts first (see ``priority``); default ``Priority/normal``.
    ///   - handlers: closures for this request's progress and end, and its adapt hook; default none.
    ///   - tag: an integer for your own use; default 0.
    ///   - userInfo: values for your own use; default empty.
    public convenience init(
        _ urlRequest: URLRequest,
        destination: Destination = .memory,
        validation: Validation = Validation(),
        integrity: Integrity = Integrity(),
        fileOptions: FileOptions = FileOptions(),
        retryPolicy: RetryPolicy? = nil,
        timeLimits: TimeLimits? = nil,
        priority: Priority = .normal,
        handlers: Handlers = Handlers(),
        tag: Int = 0,
        userInfo: [String: any Sendable] = [:]
    ) {
        let path = destination.path
        self.init(
            target: .request(urlRequest),
            invalidReason: RequestRules.validate(urlRequest, destination: destination, destinationPath: path),
            destination: destination, destinationPath: path,
            validation: validation, integrity: integrity, fileOptions: fileOptions, retryPolicy: retryPolicy,
            timeLimits: timeLimits, priority: priority,
            handlers: handlers, tag: tag, userInfo: userInfo)
    }

    private init(
        target: OutgoingRequest, invalidReason: NetworkQueueError.InvalidRequestReason?, destination: Destination,
        destinationPath: String?, validation: Validation,
        integrity: Integrity, fileOptions: FileOptions, retryPolicy: RetryPolicy?, timeLimits: TimeLimits?,
        priority: Priority, handlers: Handlers, tag: Int,
        userInfo: [String: any Sendable]
    ) {
        self.outgoing = target
        self.destination = destination
        self.destinationPath = destinationPath
        self.initialPriority = priority
        self.tag = tag
        var headOnlyFile: NetworkQueueError.InvalidRequestReason?
        if validation.endsAtHead, case .file(let file) = destination { headOnlyFile = .endsAtHeadWithFile(file) }
        let invalidReason =
            invalidReason ?? headOnlyFile ?? integrity.checksum.flatMap { $0.isWellFormed ? nil : .invalidChecksum($0) }
            ?? timeLimits.flatMap { $0.problem == nil ? nil : .invalidTimeLimits($0) }
        options =
            Options.areDefaults(
                validation, integrity, fileOptions, retryPolicy, timeLimits, handlers, userInfo, invalidReason)
            ? Options.defaults
            : Options(
                validation: validation, integrity: integrity, fileOptions: fileOptions, retryPolicy: retryPolicy,
                timeLimits: timeLimits, handlers: handlers,
                userInfo: userInfo, invalidReason: invalidReason)
        var shared = Shared()
        shared.priority = priority
        guarded = shared
        let upload = uploadSize
        if upload > 0 {
            var status = NetworkRequest.Status.initial
            status.upload.expectedBytes = upload
            guarded.showFirst(status)
        }
    }

    /// Creates a GET request for `url` with `URLRequest`'s defaults (a 60-second timeout, the default cache policy,
    /// no header of its own) and the other settings as ``init(_:destination:validation:integrity:fileOptions:retryPolicy:timeLimits:priority:handlers:tag:userInfo:)``
    /// takes them.
    ///
    /// The compact form for big batches: until it starts, the request keeps only the URL's text (its
    /// ``urlRequest`` is built when it is read).
    public convenience init(
        url: URL,
        destination: Destination = .memory,
        validation: Validation = Validation(),
        integrity: Integrity = Integrity(),
        fileOptions: FileOptions = FileOptions(),
        retryPolicy: RetryPolicy? = nil,
        timeLimits: TimeLimits? = nil,
        priority: Priority = .normal,
        handlers: Handlers = Handlers(),
        tag: Int = 0,
        userInfo: [String: any Sendable] = [:]
    ) {
        let path = destination.path
        let text = url.absoluteString
        let invalidReason = RequestRules.validate(
            url: url, timeout: RequestRules.defaultTimeout, destination: destination, destinationPath: path, text: text)
        // A URL whose text does not parse back to it (rare) is kept whole.
        let target: OutgoingRequest =
            invalidReason == nil && !text.isEmpty ? .get(text) : .request(URLRequest(url: url))
        self.init(
            target: target, invalidReason: invalidReason, destination: destination, destinationPath: path,
            validation: validation,
            integrity: integrity, fileOptions: fileOptions, retryPolicy: retryPolicy, timeLimits: timeLimits,
            priority: priority, handlers: handlers, tag: tag, userInfo: userInfo)
    }

    /// The URL of ``urlRequest``.
    public var url: URL? { outgoing.url }
}
