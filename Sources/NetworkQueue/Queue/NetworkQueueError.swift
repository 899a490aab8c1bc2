import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The one error type of NetworkQueue: every failure a request or the queue can report.
public enum NetworkQueueError: Error, Sendable, Hashable {
    /// The request was cancelled by `cancel(_:)`, `cancelAll()`, `reset()` or a cancelled `run()`.
    case cancelled
    /// The request was cancelled because another request of the queue failed while
    /// ``NetworkQueue/cancelsAllOnFailure`` was on. `sibling` is the failed request's URL.
    case cancelledBecauseSiblingFailed(sibling: URL?)
    /// The transfer failed: connection refused or lost, timed out (`.timedOut`), too many redirects, ….
    case transport(URLError)
    /// The response status is outside the request's ``NetworkRequest/acceptableStatusCodes``.
    case unacceptableStatus(code: Int, url: URL?)
    /// The response `Content-Type` is not one of the request's ``NetworkRequest/acceptableContentTypes``.
    case unacceptableContentType(String?, url: URL?)
    /// The HEAD request sent for accurate progress failed at the transport level; the request itself was
    /// never sent.
    case preflightFailed(URLError)
    /// The request cannot be sent or added; the reason says why.
    case invalidRequest(InvalidRequestReason)
    /// The response body is larger than the request's ``NetworkRequest/maximumResponseSize``.
    case responseTooLarge(limit: Int64, url: URL?)
    /// Writing the response body to its file failed.
    case fileError(path: String, reason: String)

    /// Why a request is invalid.
    public enum InvalidRequestReason: Sendable, Hashable {
        /// The `URLRequest` has no URL.
        case missingURL
        /// The URL's scheme is not `http` or `https` (nil when it has none).
        case unsupportedScheme(String?)
        /// The URL has no host.
        case missingHost(URL)
        /// The same ``NetworkRequest`` object was already added to a queue.
        case alreadyAdded
    }

    /// True for `.cancelled` and `.cancelledBecauseSiblingFailed`.
    public var isCancellation: Bool {
        switch self {
        case .cancelled, .cancelledBecauseSiblingFailed: true
        case .transport, .unacceptableStatus, .unacceptableContentType, .preflightFailed, .invalidRequest,
            .responseTooLarge, .fileError:
            false
        }
    }
}

extension NetworkQueueError: LocalizedError {
    /// A one-line description for logs and UI.
    public var errorDescription: String? {
        switch self {
        case .cancelled: "cancelled"
        case .cancelledBecauseSiblingFailed(let url): "cancelled because \(url?.absoluteString ?? "another request") failed"
        case .transport(let error): "transfer failed: \(Self.describe(error))"
        case .unacceptableStatus(let code, _): "HTTP status \(code)"
        case .unacceptableContentType(let type, _): "unacceptable content type \(type ?? "(none)")"
        case .preflightFailed(let error): "HEAD preflight failed: \(Self.describe(error))"
        case .invalidRequest(let reason): "invalid request: \(reason)"
        case .responseTooLarge(let limit, _): "response larger than \(limit) bytes"
        case .fileError(let path, let reason): "file error at \(path): \(reason)"
        }
    }

    private static func describe(_ error: URLError) -> String {
        switch error.code {
        case .timedOut: "timed out"
        case .cannotConnectToHost: "could not connect"
        case .networkConnectionLost: "connection lost"
        case .cannotFindHost: "unknown host"
        case .httpTooManyRedirects: "too many redirects"
        default: "URLError \(error.code.rawValue)"
        }
    }
}
