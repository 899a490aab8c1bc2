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
    /// The request was cancelled because a source added with ``NetworkQueue/add(contentsOf:)-(Source)`` threw while
    /// ``NetworkQueue/cancelsAllOnFailure`` is on.
    case cancelledBecauseSourceFailed
    /// A source added with ``NetworkQueue/add(contentsOf:)-(Source)`` threw this error (or gave a request that was
    /// added before, as ``InvalidRequestReason/alreadyAdded``): it is read no further. Reported with
    /// ``NetworkQueueEvent/sourceDidFail(error:)``, never as a request's failure.
    case sourceFailed(UnderlyingError)
    /// The transfer failed. Codes worth knowing:
    /// - `.timedOut`: no byte moved for the request's `timeoutInterval`;
    /// - `.networkConnectionLost`: the connection closed early, also when a body ended shorter than its
    ///   `Content-Length` announced;
    /// - `.cannotDecodeContentData`: the body's `Content-Encoding` (gzip, deflate, …) could not be decoded;
    /// - `.badServerResponse`: the server's answer was not valid HTTP (a malformed status line, an empty
    ///   reply);
    /// - `.appTransportSecurityRequiresSecureConnection`: a redirect from `https` to `http` was refused
    ///   (see ``RedirectPolicy``); `.unsupportedURL`: a redirect to a scheme other than HTTP(S);
    /// - `.cannotConnectToHost`, `.cannotFindHost`, `.httpTooManyRedirects`, `.cancelled` (the transport
    ///   itself was stopped).
    case transport(URLError)
    /// The response status is outside the request's ``NetworkRequest/Validation-swift.struct/acceptableStatusCodes``.
    case unacceptableStatus(code: Int, url: URL?)
    /// The response `Content-Type` is not one of the request's ``NetworkRequest/Validation-swift.struct/acceptableContentTypes``.
    case unacceptableContentType(String?, url: URL?)
    /// The HEAD request sent for accurate progress failed at the transport level; the request itself was
    /// never sent.
    case preflightFailed(URLError)
    /// The request cannot be sent or added; the reason says why.
    case invalidRequest(InvalidRequestReason)
    /// The response body is larger than the request's ``NetworkRequest/Validation-swift.struct/maximumResponseSize`` (decoded
    /// bytes count). The transfer is stopped as soon as the limit is passed.
    case responseTooLarge(limit: Int64, url: URL?)
    /// An attempt moved slower than the request's lowest speed (``TimeLimits/lowestSpeed``): `bytesPerSecond` on
    /// average over a window of `limit.seconds`. Its transfer is stopped; the retry policy may send it again, like
    /// a timed-out transfer (a file's part is continued).
    case tooSlow(bytesPerSecond: Int64, limit: LowestSpeed, url: URL?)
    /// The request did not end within its deadline (``TimeLimits/deadline``), `seconds` from its first attempt's
    /// start (paused time not counted). Final: never retried. What it ran is stopped; a file destination keeps
    /// nothing (its part is deleted).
    case deadlineExceeded(seconds: TimeInterval, url: URL?)
    /// The request's server is down (see ``NetworkQueue/deadHosts``): `failures` connects or name lookups to it failed
    /// in a row with no response between. `host` is the server as `scheme://host:port`. Final: never retried; the
    /// server's other waiting requests end with it at their turn, taking no slot, while the other servers go on.
    case hostDown(host: String, failures: Int)
    /// Writing the response body to its file failed.
    case fileError(path: String, reason: String)
    /// An `adapt` hook (the queue's ``NetworkQueue/adapter`` or the request's) threw; the attempt was never
    /// sent. The error it threw is ``UnderlyingError/error``.
    case adaptationFailed(UnderlyingError)
    /// The body did not hash to what was expected: the request's ``NetworkRequest/Integrity-swift.struct/checksum``, or a digest
    /// the server sent with it (`Content-Digest`, `Repr-Digest`, `Digest`). Nothing of the body is kept:
    /// a file download's part and validator are deleted and the destination is left as it was. A download
    /// that had continued a part is first tried once more from byte 0 (the part may be what was wrong).
    /// Not retried by the retry policy.
    case integrityCheckFailed(expected: Checksum, actual: Checksum)
    /// The request succeeded but its body could not be decoded into the type asked for (see
    /// ``NetworkQueue/add(_:decoding:decoder:completion:)``). The request itself is reported finished.
    case decodingFailed(DecodingFailure)

    /// An error thrown by caller code, kept whole. Two are equal when they have the same type and
    /// description.
    public struct UnderlyingError: Error, Sendable, Hashable, CustomStringConvertible {
        /// The error thrown.
        public let error: any Error
        /// `String(describing:)` of ``error``.
        public let description: String

        /// Wraps `error`.
        public init(_ error: any Error) {
            self.error = error
            description = String(describing: error)
        }

        public static func == (lhs: Self, rhs: Self) -> Bool {
            type(of: lhs.error) == type(of: rhs.error) && lhs.description == rhs.description
        }

        public func hash(into hasher: inout Hasher) { hasher.combine(description) }
    }

    /// Why a body could not be decoded, with enough of the response to see what came instead.
    public struct DecodingFailure: Sendable, Hashable {
        /// How many bytes of the body ``bodyPrefix`` keeps at most: 256.
        public static let prefixLength = 256

        /// The response's status code.
        public let statusCode: Int
        /// The response's URL.
        public let url: URL?
        /// The first bytes of the body (at most ``prefixLength``).
        public let bodyPrefix: Data
        /// The body's full length in bytes.
        public let bodyLength: Int
        /// The decoder's error.
        public let underlying: UnderlyingError

        /// The body prefix as UTF-8 text, invalid bytes replaced.
        public var bodyPrefixText: String { String(decoding: bodyPrefix, as: UTF8.self) }
    }

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
        /// The `timeoutInterval` is zero or negative. (Infinity, NaN and values of
        /// ``NetworkRequest/noTimeoutThreshold`` seconds or more mean no timeout.)
        case invalidTimeout(TimeInterval)
        /// The file destination is not a file URL naming a file (for example, a URL ending in `/`).
        case invalidDestination(URL)
        /// The ``NetworkRequest/Integrity-swift.struct/checksum`` is not hexadecimal of its algorithm's length.
        case invalidChecksum(Checksum)
        /// Another pending or running request, in this or any queue of the process, writes to the same file.
        /// Thrown by ``NetworkQueue/add(_:)-(NetworkRequest)``; the request may be added once the other ended. A
        /// request read from a source (``NetworkQueue/add(contentsOf:)-(Source)``) fails with it instead.
        case destinationInUse(URL)
        /// The ``TimeLimits`` (the request's, or the queue's ``NetworkQueue/timeLimits`` it uses) are out of range:
        /// a deadline of zero or less, or a lowest speed that is not a positive rate over a positive, finite window.
        case invalidTimeLimits(TimeLimits)
        /// The file destination is refused by its ``OutputFolder`` (see
        /// ``NetworkRequest/FileOptions-swift.struct/outputFolder``): it is not beneath the folder, a symbolic link or
        /// something other than a folder is on the way to it, or its name is one a download keeps beside its file
        /// (``FileName/reservedSuffixes``). `reason` says which. The request fails alone; nothing is written.
        case unsafeDestination(URL, reason: String)
        /// The request asks to end at its head (``NetworkRequest/Validation-swift.struct/endsAtHead``) and to write
        /// its body to this file: there is no body to write.
        case endsAtHeadWithFile(URL)
    }

    /// True for `.cancelled`, `.cancelledBecauseSiblingFailed` and `.cancelledBecauseSourceFailed`.
    public var isCancellation: Bool {
        switch self {
        case .cancelled, .cancelledBecauseSiblingFailed, .cancelledBecauseSourceFailed: true
        case .transport, .unacceptableStatus, .unacceptableContentType, .preflightFailed, .invalidRequest,
            .responseTooLarge, .fileError, .adaptationFailed, .decodingFailed, .integrityCheckFailed, .sourceFailed,
            .tooSlow, .deadlineExceeded, .hostDown:
            false
        }
    }
}

extension NetworkQueueError: LocalizedError, CustomStringConvertible, CustomDebugStringConvertible {
    /// A one-line description for logs and UI. URLs in it are redacted: user info, query values and
    /// fragments are masked (the cases still carry the full URL for code that needs it).
    public var errorDescription: String? {
        switch self {
        case .cancelled: "cancelled"
        case .cancelledBecauseSiblingFailed(let url): "cancelled because \(Redaction.describe(url)) failed"
        case .cancelledBecauseSourceFailed: "cancelled because a request source failed"
        case .sourceFailed(let underlying): "the request source failed: \(Redaction.scrub(underlying.description))"
        case .transport(let error): "transfer failed: \(Self.describe(error))"
        case .unacceptableStatus(let code, let url): "HTTP status \(code) from \(Redaction.describe(url))"
        case .unacceptableContentType(let type, let url):
            "unacceptable content type \(type.map(Redaction.printable) ?? "(none)") from \(Redaction.describe(url))"
        case .preflightFailed(let error): "HEAD preflight failed: \(Self.describe(error))"
        case .invalidRequest(let reason): "invalid request: \(Self.describe(reason))"
        case .responseTooLarge(let limit, let url):
            "response from \(Redaction.describe(url)) larger than \(limit) bytes"
        case .tooSlow(let rate, let limit, let url):
            "transfer from \(Redaction.describe(url)) too slow: \(rate) B/s, below \(limit)"
        case .deadlineExceeded(let seconds, let url):
            "no end for \(Redaction.describe(url)) within its deadline of \(LogText.seconds(seconds)) s"
        case .hostDown(let host, let failures):
            "\(Redaction.printable(host)) is down: \(failures) connects failed in a row with no answer"
        case .fileError(let path, let reason): "file error at \(path): \(reason)"
        case .adaptationFailed(let underlying):
            "adapting the request failed: \(Redaction.scrub(underlying.description))"
        case .integrityCheckFailed(let expected, let actual):
            "integrity check failed: expected \(expected), got \(actual)"
        case .decodingFailed(let failure):
            "could not decode the body of \(Redaction.describe(failure.url)) (HTTP \(failure.statusCode), "
                + "\(failure.bodyLength) bytes): \(Redaction.scrub(failure.underlying.description))"
        }
    }

    /// The same text as ``errorDescription``, so that `print(error)` and string interpolation never
    /// show a secret either.
    public var description: String { errorDescription ?? "NetworkQueueError" }

    /// The same text as ``description``.
    public var debugDescription: String { description }

    private static func describe(_ error: URLError) -> String {
        let what: String =
            switch error.code {
            case .timedOut: "timed out"
            case .cannotConnectToHost: "could not connect"
            case .networkConnectionLost: "connection lost"
            case .cannotFindHost: "unknown host"
            case .httpTooManyRedirects: "too many redirects"
            case .cannotDecodeContentData: "could not decode the body"
            case .badServerResponse: "bad server response"
            case .appTransportSecurityRequiresSecureConnection: "refused a redirect from https to http"
            case .unsupportedURL: error.userInfo[ProxyRoutes.problemKey] as? String ?? "unsupported URL"
            case .userAuthenticationRequired: "authentication required"
            case .serverCertificateUntrusted: "the server's certificate is not trusted" + tlsWords(error)
            case .serverCertificateHasBadDate: "the server's certificate has expired" + tlsWords(error)
            case .serverCertificateNotYetValid: "the server's certificate is not yet valid" + tlsWords(error)
            case .clientCertificateRequired: "the server requires a client certificate" + tlsWords(error)
            case .clientCertificateRejected: "the client certificate was refused" + tlsWords(error)
            case .secureConnectionFailed: "TLS failed" + tlsWords(error)
            default: "URLError \(error.code.rawValue)"
            }
        guard let url = error.failingURL else { return what }
        return "\(what) (\(Redaction.describe(url)))"
    }

    /// What the TLS library said about a certificate or handshake (libcurl's words, which name the certificate's
    /// problem: "unable to get local issuer certificate", a host name that does not match), after a colon; empty
    /// where the transport gave no words of its own.
    private static func tlsWords(_ error: URLError) -> String {
        guard error.userInfo[CurlErrorTable.curlCodeKey] != nil,
            let words = error.userInfo[NSLocalizedDescriptionKey] as? String, !words.isEmpty
        else { return "" }
        return ": " + Redaction.scrub(words)
    }

    private static func describe(_ reason: InvalidRequestReason) -> String {
        switch reason {
        case .missingURL: "no URL"
        case .unsupportedScheme(let scheme): "unsupported scheme \(scheme ?? "(none)")"
        case .missingHost(let url): "no host in \(Redaction.describe(url))"
        case .alreadyAdded: "the request was already added to a queue"
        case .invalidTimeout(let interval): "timeoutInterval \(interval) is not positive"
        case .invalidDestination(let url):
            // A local path is no secret; any other URL is shown redacted.
            url.isFileURL
                ? "destination \(url.path) does not name a file (a directory, or a path ending in /)"
                : "destination \(Redaction.describe(url)) is not a file URL"
        case .destinationInUse(let url): "another request is writing to \(url.path)"
        case .invalidChecksum(let checksum):
            "checksum \(checksum) is not \(checksum.algorithm.byteCount * 2) hexadecimal digits"
        case .invalidTimeLimits(let limits): "time limits: \(limits.problem ?? "out of range")"
        case .unsafeDestination(let url, let reason): "refused to write \(url.path): \(reason)"
        case .endsAtHeadWithFile(let url): "a request that ends at its head has no body to write to \(url.path)"
        }
    }
}
