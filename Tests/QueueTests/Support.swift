import Foundation
import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A tiny lock for test bookkeeping (the tests use only the library's public API).
final class Box<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func with<R>(_ body: (inout Value) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
    var current: Value { with { $0 } }
}

/// One thing a delegate or handler saw; requests are named by their tag.
enum Entry: Hashable, CustomStringConvertible {
    case start(Int)
    case headers(Int, Int)
    case finish(Int)
    case fail(Int, NetworkQueueError)
    case handler(Int)
    case requestProgress(Int, Int64)
    case progress(Double)
    case queueFinished

    var description: String {
        switch self {
        case .start(let t): "start(\(t))"
        case .headers(let t, let s): "headers(\(t), \(s))"
        case .finish(let t): "finish(\(t))"
        case .fail(let t, let e): "fail(\(t), \(e))"
        case .handler(let t): "handler(\(t))"
        case .requestProgress(let t, let b): "requestProgress(\(t), \(b))"
        case .progress(let f): "progress(\(f))"
        case .queueFinished: "queueFinished"
        }
    }

    var isProgress: Bool {
        switch self {
        case .progress, .requestProgress: true
        default: false
        }
    }
}

/// Records every delegate call in one ordered log, and whether each came on the expected queue.
final class Recorder: NetworkQueueDelegate {
    let log = Box<[Entry]>([])
    let progresses = Box<[QueueProgress]>([])
    let offQueueCalls = Box(0)
    let expectedQueueKey: DispatchSpecificKey<Int>?

    init(expectedQueueKey: DispatchSpecificKey<Int>? = nil) { self.expectedQueueKey = expectedQueueKey }

    var entries: [Entry] { log.current }
    /// The log without progress entries.
    var events: [Entry] { log.current.filter { !$0.isProgress } }
    var queueFinishedCount: Int { log.current.filter { $0 == .queueFinished }.count }

    func append(_ entry: Entry) {
        if let key = expectedQueueKey, DispatchQueue.getSpecific(key: key) == nil { offQueueCalls.with { $0 += 1 } }
        log.with { $0.append(entry) }
    }

    func networkQueue(_ queue: NetworkQueue, didStart request: NetworkRequest) { append(.start(request.tag)) }
    func networkQueue(_ queue: NetworkQueue, didReceiveHeaders response: HTTPURLResponse, for request: NetworkRequest) {
        append(.headers(request.tag, response.statusCode))
    }
    func networkQueue(_ queue: NetworkQueue, didFinish request: NetworkRequest, response: NetworkResponse) {
        append(.finish(request.tag))
    }
    func networkQueue(_ queue: NetworkQueue, didFail request: NetworkRequest, error: NetworkQueueError) {
        append(.fail(request.tag, error))
    }
    func networkQueue(_ queue: NetworkQueue, didUpdateProgress progress: QueueProgress) {
        progresses.with { $0.append(progress) }
        append(.progress(progress.fractionCompleted))
    }
    func networkQueueDidFinish(_ queue: NetworkQueue) { append(.queueFinished) }
}

func url(_ tag: Int) -> URL { URL(string: "http://example.test/\(tag)")! }

/// A request tagged `tag` for `http://example.test/<tag>`.
func request(
    _ tag: Int, timeout: TimeInterval = 60, acceptable: Range<Int>? = 200..<300, recorder: Recorder? = nil
) -> NetworkRequest {
    var urlRequest = URLRequest(url: url(tag))
    urlRequest.timeoutInterval = timeout
    var onProgress: (@Sendable (TransferProgress) -> Void)?
    var onCompletion: (@Sendable (Result<NetworkResponse, NetworkQueueError>) -> Void)?
    if let recorder {
        onProgress = { recorder.append(.requestProgress(tag, $0.completedBytes)) }
        onCompletion = { _ in recorder.append(.handler(tag)) }
    }
    return NetworkRequest(
        urlRequest, acceptableStatusCodes: acceptable, tag: tag, onDownloadProgress: onProgress,
        onCompletion: onCompletion)
}

/// The tag in a started request's URL.
func tag(of urlRequest: URLRequest) -> Int { Int(urlRequest.url!.lastPathComponent)! }

extension InMemoryTransport {
    /// Answers 200 with `body`, optionally held by `gate` after the head.
    static func ok(_ body: String = "abc", gate: TransferGate? = nil) -> InMemoryTransport {
        InMemoryTransport { _ in
            var steps: [Step] = [.respond(status: 200, headers: ["Content-Length": "\(body.utf8.count)"])]
            if let gate { steps.append(.hold(gate)) }
            steps.append(.body(Data(body.utf8)))
            return steps
        }
    }
}
