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

    /// Creates a response.
    public init(httpResponse: HTTPURLResponse, body: Data, fileURL: URL? = nil) {
        self.init(head: ResponseHead(httpResponse), body: body, fileURL: fileURL, keptExistingFile: false)
    }

    /// Creates a response; `keptExistingFile` as ``keptExistingFile``.
    public init(httpResponse: HTTPURLResponse, body: Data, fileURL: URL?, keptExistingFile: Bool) {
        self.init(head: ResponseHead(httpResponse), body: body, fileURL: fileURL, keptExistingFile: keptExistingFile)
    }

    /// Creates a response from a head; `keptExistingFile` as ``keptExistingFile`` (default false).
    public init(head: ResponseHead, body: Data, fileURL: URL? = nil, keptExistingFile: Bool = false) {
        self.head = head
        self.body = body
        self.fileURL = fileURL
        self.keptExistingFile = keptExistingFile
    }

    /// The final response as Foundation's type: ``head``'s ``ResponseHead/httpURLResponse``, built on first
    /// read (reading ``head`` or ``statusCode`` costs none).
    public var httpResponse: HTTPURLResponse { head.httpURLResponse }

    /// The HTTP status code.
    public var statusCode: Int { head.statusCode }
}

/// One request's transfer progress, as passed to its progress handlers.
public struct TransferProgress: Sendable, Hashable {
    /// Bytes transferred so far.
    public var completedBytes: Int64
    /// Total bytes expected, or nil when unknown (no Content-Length, or a Content-Encoding).
    public var expectedBytes: Int64?

    /// Creates a progress value.
    public init(completedBytes: Int64, expectedBytes: Int64?) {
        self.completedBytes = completedBytes
        self.expectedBytes = expectedBytes
    }

    /// `completedBytes / expectedBytes` clamped to 0...1, or nil when the size is unknown.
    public var fractionCompleted: Double? {
        guard let expectedBytes else { return nil }
        guard expectedBytes > 0 else { return 1 }
        return min(1, Double(completedBytes) / Double(expectedBytes))
    }
}
