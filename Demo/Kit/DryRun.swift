import Foundation
import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `--dry-run`: each line is asked about, not fetched. A HEAD request, or, where the server refuses HEAD (405 or 501),
/// a GET of its first byte (`Range: bytes=0-0`); no body is read: each transfer ends at its head
/// (``NetworkRequest/Validation-swift.struct/endsAtHead``), which already says the size, so that a server that ignores
/// the range sends no more than the kernel's buffers hold before the connection closes. The probe runs under the same limits as the download
/// would: concurrency, per-host limit and pacing, retries.
public enum DryRun {
    /// The `userInfo` key of the file name a probe's download would write (absent: the body would go to memory).
    public static let nameKey = "dryRunName"

    /// The probe of `url` (sending `headers`), tagged `tag`, for a download that would be saved as `name` (nil: not
    /// saved), with `attempts` attempts in all, as the download would have (one more only where the server refused the
    /// HEAD and the probe falls back to a ranged GET).
    public static func probe(
        _ url: URL, headers: SentHeaders, name: String?, attempts: Int, tag: Int
    ) -> NetworkRequest {
        var head = headers.request(for: url)
        head.httpMethod = "HEAD"
        let refused = Refused()
        let policy = RetryPolicy(
            maximumAttempts: attempts + 1,
            decide: { _, error, made in
                guard case .unacceptableStatus(let status, _) = error, status == 405 || status == 501,
                    !refused.isSet
                else {
                    // The extra attempt is the fallback's alone: otherwise the probe asks as often as the download
                    // would (`--retries`), never once more.
                    return made >= attempts + (refused.isSet ? 1 : 0) ? .doNotRetry : .useDefault
                }
                refused.set()
                return .retryAfter(0)
            })
        let handlers = NetworkRequest.Handlers(adapt: { request in
            guard refused.isSet else { return request }
            var ranged = request
            ranged.httpMethod = "GET"
            ranged.setValue("bytes=0-0", forHTTPHeaderField: "Range")
            return ranged
        })
        return NetworkRequest(
            head, validation: NetworkRequest.Validation(maximumResponseSize: .bytes(1), endsAtHead: true),
            retryPolicy: policy,
            handlers: handlers, tag: tag, userInfo: name.map { [nameKey: $0] } ?? [:])
    }

    /// What a probe learned.
    public struct Answer: Sendable, Equatable {
        /// The final status (after redirects), or nil when no response came.
        public var status: Int?
        /// The resource's size in bytes, when the response said it.
        public var size: Int64?
        /// True when the download would succeed.
        public var wouldSucceed: Bool
        /// Why it would fail (nil when it would succeed).
        public var problem: String?
    }

    /// What `request`'s probe ended with: a response under 2xx whose size the head gave (`Content-Length` of a HEAD or
    /// an unranged GET, the total of a 206's `Content-Range`) would succeed; a body over one byte only means the
    /// server ignored the range.
    public static func answer(_ request: NetworkRequest, _ result: Result<NetworkResponse, NetworkQueueError>)
        -> Answer
    {
        let head = request.head
        let size = head.flatMap(size(of:))
        switch result {
        case .success: return Answer(status: head?.statusCode, size: size, wouldSucceed: true)
        case .failure(.responseTooLarge) where head.map({ (200..<300).contains($0.statusCode) }) ?? false:
            return Answer(status: head?.statusCode, size: size, wouldSucceed: true)
        case .failure(let error):
            return Answer(status: head?.statusCode, size: nil, wouldSucceed: false, problem: error.description)
        }
    }

    /// The size `head` says the resource has: a 206's `Content-Range` total, else its `Content-Length` (nil when
    /// encoded or absent).
    public static func size(of head: ResponseHead) -> Int64? {
        if head.statusCode == 206 {
            guard let range = head.value(forHTTPHeaderField: "Content-Range"), let slash = range.lastIndex(of: "/")
            else { return nil }
            return Int64(range[range.index(after: slash)...].trimmingCharacters(in: .whitespaces))
        }
        guard head.expectedContentLength >= 0 else { return nil }
        if let encoding = head.value(forHTTPHeaderField: "Content-Encoding"),
            encoding.trimmingCharacters(in: .whitespaces).lowercased() != "identity"
        {
            return nil
        }
        return head.expectedContentLength
    }

    /// Set once a server refused a probe's HEAD: its next attempt is a ranged GET.
    private final class Refused: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        var isSet: Bool { lock.withLock { value } }
        func set() { lock.withLock { value = true } }
    }
}
