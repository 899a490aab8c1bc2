/// What a ``NetworkQueue`` does when a request is added while another with the same method, URL and
/// destination is still in the queue (pending, running or waiting to retry). Set it with
/// ``NetworkQueue/duplicatePolicy``; the default is ``allow``.
public enum DuplicatePolicy: Sendable, Hashable {
    /// Both are sent, as separate transfers (file destinations still may not be shared: the second
    /// `add` throws ``NetworkQueueError/InvalidRequestReason/destinationInUse(_:)``). The default.
    case allow
    /// The new request shares the earlier one's transfer: one transfer on the wire, and each request gets
    /// its own didStart (when the shared transfer has run) and its own didFinish/didFail with the shared
    /// result, in the order they were added. A coalesced request shows `.pending` until it ends, weighs
    /// nothing in the queue's progress (the bytes are counted once) and uses the first request's headers,
    /// policy and hooks. Cancelling a coalesced request ends only it; cancelling the first one hands the
    /// work to the oldest coalesced request, which is sent anew at the back of the queue.
    case coalesce
    /// The earlier request is cancelled (it ends with `.cancelled`, freeing its slot at once, its
    /// coalesced requests with it) and the new one is added in its place, taking over its file
    /// destination. A request whose file is already being moved into place is past cancelling: it stays.
    case cancelEarlier
}

extension DuplicatePolicy {
    /// The key two requests are duplicates by.
    static func key(of request: NetworkRequest) -> String {
        let destination: String
        switch request.destination {
        case .memory: destination = "memory"
        case .file(let url): destination = "file:" + url.standardizedFileURL.path
        }
        // A checksum is part of the key: a follower never takes a body its own checksum did not verify.
        let checksum = request.checksum.map { " " + $0.description.lowercased() } ?? ""
        return "\(request.method) \(request.urlText) \(destination)\(checksum)"
    }
}
