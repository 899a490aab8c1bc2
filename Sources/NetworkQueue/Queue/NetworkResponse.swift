import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A successful response: the final HTTP response head and its body.
public struct NetworkResponse: Sendable {
    /// The final response head (after redirects), as received.
    public let head: ResponseHead
    /// The response body. Empty for HEAD requests, empty bodies, and bodies written to a file.
    public let body: Data
    /// The file holding the body, for requests with a ``NetworkRequest/Destination-swift.enum/file(_:)``
    /// destination; nil otherwise.
    public let fileURL: URL?
    /// True when no body was fetched because the file at ``fileURL`` was found unchanged
    /// (``NetworkRequest/ExistingFile/skipIfUnchanged``): ``head`` is then the HEAD's response.
    public let keptExistingFile: Bool
    /// What the request's attempts measured, when the queue collected metrics (see
    /// ``NetworkQueue/collectsMetrics``); nil otherwise.
    public let metrics: RequestMetrics?

    /// Creates a response.
    public init(httpURLResponse: HTTPURLResponse, body: Data, fileURL: URL? = nil) {
        self.init(head: ResponseHead(httpURLResponse), body: body, fileURL: fileURL, keptExistingFile: false)
    }

    /// Creates a response; `keptExistingFile` as ``keptExistingFile``.
    public init(httpURLResponse: HTTPURLResponse, body: Data, fileURL: URL?, keptExistingFile: Bool) {
        self.init(head: ResponseHead(httpURLResponse), body: body, fileURL: fileURL, keptExistingFile: keptExistingFile)
    }

    /// Creates a response from a head; `keptExistingFile` as ``keptExistingFile`` (default false), `metrics` as
    /// ``metrics`` (default nil).
    public init(
        head: ResponseHead, body: Data, fileURL: URL? = nil, keptExistingFile: Bool = false,
        metrics: RequestMetrics? = nil
    ) {
        self.head = head
        self.body = body
        self.fileURL = fileURL
        self.keptExistingFile = keptExistingFile
        self.metrics = metrics
    }

    /// The final response as Foundation's type: ``head``'s ``ResponseHead/httpURLResponse``, built on first
    /// read (reading ``head`` or ``statusCode`` costs none).
    public var httpURLResponse: HTTPURLResponse { head.httpURLResponse }

    /// The HTTP status code.
    public var statusCode: Int { head.statusCode }
}

/// One request's transfer progress, as passed to its progress handlers.
public struct TransferProgress: Sendable, Hashable {
    /// Bytes transferred so far.
    public var completedBytes: Int64
    /// Total bytes expected, or nil when unknown (no Content-Length, or a Content-Encoding).
    public var expectedBytes: Int64?
    /// Bytes per second over the last few seconds (measured as the queue's ``QueueProgress/throughput``
    /// is), or nil before there is a measure. Download progress only; nil for uploads.
    public var throughput: Double?
    /// Seconds until ``expectedBytes`` are done at ``throughput``: 0 when done, nil when the size or the
    /// rate is unknown. Download progress only; nil for uploads.
    public var estimatedTimeRemaining: TimeInterval?

    /// Creates a progress value; `throughput` and `estimatedTimeRemaining` default to nil (unknown).
    public init(
        completedBytes: Int64, expectedBytes: Int64?, throughput: Double? = nil,
        estimatedTimeRemaining: TimeInterval? = nil
    ) {
        self.completedBytes = completedBytes
        self.expectedBytes = expectedBytes
        self.throughput = throughput
        self.estimatedTimeRemaining = estimatedTimeRemaining
    }

    /// `completedBytes / expectedBytes` clamped to 0...1, or nil when the size is unknown.
    public var fractionCompleted: Double? {
        guard let expectedBytes else { return nil }
        guard expectedBytes > 0 else { return 1 }
        return min(1, Double(completedBytes) / Double(expectedBytes))
    }
}
