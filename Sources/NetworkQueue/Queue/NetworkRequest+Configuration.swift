import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request's configuration, grouped by concern: each group has its defaults, and a new option joins the
/// group it belongs to instead of the initializer.
extension NetworkRequest {
    /// What counts as a successful response.
    public struct Validation: Sendable {
        /// Status codes that count as success; nil accepts every status (ASI's behaviour). Default `200..<300`.
        public var acceptableStatusCodes: Range<Int>?
        /// MIME types (`type/subtype`, compared case-insensitively) that count as success; nil accepts any.
        /// Default nil.
        public var acceptableContentTypes: Set<String>?
        /// The largest body accepted, in decoded bytes; a larger one fails with
        /// ``NetworkQueueError/responseTooLarge(limit:url:)`` and its transfer stops. Default
        /// ``ResponseSizeLimit/automatic`` (64 MiB in memory, no limit for a file).
        public var maximumResponseSize: ResponseSizeLimit
        /// Whether the transfer ends at the final response head, reading none of the body: the head is checked as
        /// any (status, content type, a `Content-Length` over the size cap), the connection is closed when a body
        /// follows (so that the server sends no more than the kernel's buffers hold), and the request finishes with
        /// an empty body, whatever the head announced. For a check of a URL that must not download it (a dry run
        /// whose server refuses HEAD and ignores `Range`). Only for the memory destination: a file destination with
        /// it is ``NetworkQueueError/InvalidRequestReason/endsAtHeadWithFile(_:)``. Default false.
        public var endsAtHead: Bool

        /// Creates a validation; every parameter defaults as its property says.
        public init(
            acceptableStatusCodes: Range<Int>? = 200..<300, acceptableContentTypes: Set<String>? = nil,
            maximumResponseSize: ResponseSizeLimit = .automatic, endsAtHead: Bool = false
        ) {
            self.acceptableStatusCodes = acceptableStatusCodes
            self.acceptableContentTypes = acceptableContentTypes
            self.maximumResponseSize = maximumResponseSize
            self.endsAtHead = endsAtHead
        }
    }

    /// How the body is proven to be the bytes the server meant.
    public struct Integrity: Sendable {
        /// The digest the whole body must have (for a file: the whole file, a continued part included); a
        /// body that hashes otherwise fails with ``NetworkQueueError/integrityCheckFailed(expected:actual:)``
        /// and nothing of it is kept. Hashed as it streams, with OpenSSL's libcrypto on Linux and
        /// CommonCrypto on Apple platforms. Default nil.
        public var checksum: Checksum?
        /// Whether the server's own digests are verified when the response carries them: `Content-Digest`
        /// (this response's bytes), `Repr-Digest` and `Digest: SHA-256=` (the whole file), SHA-256 and
        /// SHA-512 only. A content-coded body (gzip, …) is not held to them: they cover the encoded bytes.
        /// Default true.
        public var verifiesServerDigests: Bool

        /// Creates an integrity setting; every parameter defaults as its property says.
        public init(checksum: Checksum? = nil, verifiesServerDigests: Bool = true) {
            self.checksum = checksum
            self.verifiesServerDigests = verifiesServerDigests
        }
    }

    /// What a file destination does with what is already on disk.
    public struct FileOptions: Sendable {
        /// Whether a `<file>.part` left by an earlier attempt (a retry, a pause) or an earlier run is
        /// continued with a `Range` request. The part is continued only when the validator saved beside it
        /// (`<file>.part.validator`: the strong ETag, else the Last-Modified of the response that began it)
        /// exists. It is written once the part is worth continuing: before body bytes reach the part ahead of the
        /// body's end, or when the part is kept for a retry or a pause (a small body that arrives whole gets none); the request then sends `Range: bytes=<part size>-` and `If-Range`. A 206 for exactly those
        /// bytes is appended; a 200 starts the file over; a 416 or a 206 for other bytes sends the request
        /// again once without a range. Only GETs without a `Range` header of their own are continued; a
        /// continued request's response has status 206. Default true.
        public var continuesPartialDownloads: Bool
        /// What happens when the destination file exists already. Default ``ExistingFile/replace``.
        ///
        /// Either way, a file there whose recorded origin (``FileOrigin``) is another URL is another's: it is
        /// neither kept nor replaced, and this request's file takes the first free name beside it (`-2`, `-3`…, or
        /// the one that records this request's URL, from an earlier run).
        public var existingFile: ExistingFile
        /// The most connections the one file may be fetched over at once, each a `Range` request for one segment
        /// (values below 1 count as 1). Default 1: one connection, as before.
        ///
        /// The file is split only when the first response says it may be: a 200 with a known length, no content
        /// coding, `Accept-Ranges: bytes` and a validator (a strong `ETag`, else `Last-Modified`). Otherwise the
        /// request runs on one connection and the log says why. Every connection counts toward the queue's
        /// ``NetworkQueue/maxConcurrentRequestCount``: the first is the request's own slot, and the others are
        /// taken only from slots no waiting request could start in. See "Big files: connections and mirrors".
        public var maximumConnections: Int
        /// Other URLs that serve the same bytes as the request's own, tried for segments when the file is split
        /// and, before any byte is written, in turn when a location fails (the file's locations: the request's URL,
        /// then these). A location that answers wrongly (a status, a different length or validator, a 200 to a
        /// range) is dropped for this file and its segments go to the others. One whose connection breaks (or whose
        /// HEAD failed) is retried as any stage of a request is: the next connection goes to another location, and it
        /// is dropped only after as many breaks in a row as the retry policy gives attempts (a kept byte starts the
        /// count over). The file fails only when no location is left. A location's failed connects count against
        /// its own server (``DeadHosts``). A location of another origin gets the request without the headers the transport's ``RedirectPolicy`` strips from a cross-origin
        /// redirect (`Authorization`, `Cookie`, `Proxy-Authorization` and any added there). Default empty.
        public var mirrors: [URL]
        /// The smallest segment a connection is given or left with when it shares work with another
        /// (values below 64 KiB count as 64 KiB). Default 1 MiB.
        public var minimumSegmentSize: Int64
        /// Whether the file takes the name its response gives it in `Content-Disposition` (RFC 6266; RFC 8187's
        /// `filename*`, UTF-8 or ISO-8859-1, preferred to `filename`), in the destination's folder, instead of the
        /// destination's own name. Default false.
        ///
        /// The name is made safe before it is used: only its last path component (after any `/` or `\`), without
        /// control characters or NUL, without leading dots or spaces, never `..`, at most 200 bytes; a name that
        /// leaves nothing keeps the destination. It never replaces anything: a name something is at, or another
        /// request holds, takes `-2`, `-3`… before its extension, as the Demo names a list's files (the check is made
        /// when the head arrives, and again as the file is linked into place, which never replaces). The name is
        /// decided before the file is committed; the response's ``NetworkResponse/fileURL`` and the log's `finished`
        /// record say where it went. A file there whose recorded origin is this request's URL (``FileOrigin``) is
        /// this request's own from an earlier run: it is replaced, not given a `-2`. The part (`<destination>.part`) keeps the destination's name meanwhile, so a
        /// later attempt or run continues it as before.
        public var namesFileFromResponse: Bool
        /// The folder the destination must lie in, guarded (see ``OutputFolder``): as the request is added, a
        /// destination outside it, named with a reserved suffix, or behind a symbolic link fails alone with
        /// ``NetworkQueueError/InvalidRequestReason/unsafeDestination(_:reason:)``; its folders are made as needed.
        /// Default nil: the destination is taken as given, its folder must exist.
        public var outputFolder: OutputFolder?

        /// Creates file options; every parameter defaults as its property says.
        public init(
            continuesPartialDownloads: Bool = true, existingFile: ExistingFile = .replace, maximumConnections: Int = 1,
            mirrors: [URL] = [], minimumSegmentSize: Int64 = 1 << 20, namesFileFromResponse: Bool = false,
            outputFolder: OutputFolder? = nil
        ) {
            self.outputFolder = outputFolder
            self.namesFileFromResponse = namesFileFromResponse
            self.continuesPartialDownloads = continuesPartialDownloads
            self.existingFile = existingFile
            self.maximumConnections = maximumConnections
            self.mirrors = mirrors
            self.minimumSegmentSize = minimumSegmentSize
        }

        /// True when the file may be fetched over more than one connection or location.
        var mayShare: Bool { maximumConnections > 1 || !mirrors.isEmpty }
    }

    /// The closures the queue calls for this one request, on its delegate executor, each just before the
    /// delegate's method for the same event.
    public struct Handlers: Sendable {
        /// Called with the request's download progress (coalesced). Default nil.
        public var onDownloadProgress: (@Sendable (TransferProgress) -> Void)?
        /// Called with the request's upload progress (coalesced). Default nil.
        public var onUploadProgress: (@Sendable (TransferProgress) -> Void)?
        /// Called once with the result, before the delegate's didFinish or didFail. Default nil.
        public var onCompletion: (@Sendable (Result<NetworkResponse, NetworkQueueError>) -> Void)?
        /// Runs before every attempt (and before the HEAD preflight), after the queue's
        /// ``NetworkQueue/adapter``, and returns the `URLRequest` to send: for example one with a fresh token.
        /// A throw fails the request with ``NetworkQueueError/adaptationFailed(_:)``. It runs in a task of the queue's
        /// own, as ``NetworkQueue/adapter`` does. Default nil.
        public var adapt: (@Sendable (URLRequest) async throws -> URLRequest)?

        /// Creates handlers; every one defaults to nil.
        public init(
            onDownloadProgress: (@Sendable (TransferProgress) -> Void)? = nil,
            onUploadProgress: (@Sendable (TransferProgress) -> Void)? = nil,
            onCompletion: (@Sendable (Result<NetworkResponse, NetworkQueueError>) -> Void)? = nil,
            adapt: (@Sendable (URLRequest) async throws -> URLRequest)? = nil
        ) {
            self.onDownloadProgress = onDownloadProgress
            self.onUploadProgress = onUploadProgress
            self.onCompletion = onCompletion
            self.adapt = adapt
        }
    }

    /// The request's settings other than its target, destination, tag and priority: one object, shared by
    /// every request created with the defaults, so that a waiting request of a big batch stays small.
    final class Options: Sendable {
        let validation: Validation
        let integrity: Integrity
        let fileOptions: FileOptions
        let retryPolicy: RetryPolicy?
        let timeLimits: TimeLimits?
        let handlers: Handlers
        let userInfo: [String: any Sendable]
        /// ``Validation-swift.struct/acceptableContentTypes``, lowercased once for the engine's comparisons.
        let acceptableContentTypes: Set<String>?
        /// Why the request cannot be sent, worked out once: the request is immutable.
        let invalidReason: NetworkQueueError.InvalidRequestReason?

        init(
            validation: Validation, integrity: Integrity, fileOptions: FileOptions, retryPolicy: RetryPolicy?,
            timeLimits: TimeLimits?, handlers: Handlers,
            userInfo: [String: any Sendable], invalidReason: NetworkQueueError.InvalidRequestReason?
        ) {
            self.validation = validation
            self.integrity = integrity
            self.fileOptions = fileOptions
            self.retryPolicy = retryPolicy
            self.timeLimits = timeLimits
            self.handlers = handlers
            self.userInfo = userInfo
            self.invalidReason = invalidReason
            acceptableContentTypes = validation.acceptableContentTypes.map { Set($0.map { $0.lowercased() }) }
        }

        /// The options of a valid request created with every default.
        static let defaults = Options(
            validation: Validation(), integrity: Integrity(), fileOptions: FileOptions(), retryPolicy: nil,
            timeLimits: nil, handlers: Handlers(),
            userInfo: [:], invalidReason: nil)

        /// True when these settings are all the defaults (so ``defaults`` may stand for them).
        static func areDefaults(
            _ validation: Validation, _ integrity: Integrity, _ fileOptions: FileOptions, _ retryPolicy: RetryPolicy?,
            _ timeLimits: TimeLimits?, _ handlers: Handlers,
            _ userInfo: [String: any Sendable], _ invalidReason: NetworkQueueError.InvalidRequestReason?
        ) -> Bool {
            validation.acceptableStatusCodes == 200..<300 && validation.acceptableContentTypes == nil
                && validation.maximumResponseSize == .automatic && !validation.endsAtHead && integrity.checksum == nil
                && integrity.verifiesServerDigests
                && fileOptions.continuesPartialDownloads && fileOptions.existingFile == .replace
                && !fileOptions.mayShare && !fileOptions.namesFileFromResponse && fileOptions.outputFolder == nil
                && retryPolicy == nil
                && timeLimits == nil
                && handlers.onDownloadProgress == nil && handlers.onUploadProgress == nil
                && handlers.onCompletion == nil
                && handlers.adapt == nil && userInfo.isEmpty && invalidReason == nil
        }
    }
}
