import Foundation
import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One thing a delegate or handler saw; requests are named by their tag.
public enum Entry: Hashable, CustomStringConvertible, Sendable {
    case start(Int)
    case headers(Int, Int)
    case finish(Int)
    case fail(Int, NetworkQueueError)
    /// willRetry: the tag, the delay and the attempt's error.
    case retry(Int, Double, NetworkQueueError)
    case handler(Int)
    case pause(Int)
    case resume(Int)
    case requestProgress(Int, Int64)
    case progress(Double)
    /// sourceDidFail, with its error.
    case sourceFailed(NetworkQueueError)
    case queueFinished

    public var description: String {
        switch self {
        case .start(let t): "start(\(t))"
        case .headers(let t, let s): "headers(\(t), \(s))"
        case .finish(let t): "finish(\(t))"
        case .fail(let t, let e): "fail(\(t), \(e))"
        case .retry(let t, let d, let e): "retry(\(t), \(d), \(e))"
        case .handler(let t): "handler(\(t))"
        case .pause(let t): "pause(\(t))"
        case .resume(let t): "resume(\(t))"
        case .requestProgress(let t, let b): "requestProgress(\(t), \(b))"
        case .progress(let f): "progress(\(f))"
        case .sourceFailed(let e): "sourceFailed(\(e))"
        case .queueFinished: "queueFinished"
        }
    }

    public var isProgress: Bool {
        switch self {
        case .progress, .requestProgress: true
        default: false
        }
    }
}

/// Records every delegate call in one ordered log, and whether each came on the expected queue.
public final class Recorder: NetworkQueueDelegate {
    public let log = Box<[Entry]>([])
    public let progresses = Box<[QueueProgress]>([])
    public let offQueueCalls = Box(0)
    public let expectedQueueKey: DispatchSpecificKey<Int>?

    public init(expectedQueueKey: DispatchSpecificKey<Int>? = nil) { self.expectedQueueKey = expectedQueueKey }

    public var entries: [Entry] { log.current }
    /// The log without progress entries.
    public var events: [Entry] { log.current.filter { !$0.isProgress } }
    public var queueFinishedCount: Int { log.current.filter { $0 == .queueFinished }.count }

    public func append(_ entry: Entry) {
        if let key = expectedQueueKey, DispatchQueue.getSpecific(key: key) == nil { offQueueCalls.with { $0 += 1 } }
        log.with { $0.append(entry) }
    }

    public func networkQueue(_ queue: NetworkQueue, didStart request: NetworkRequest) { append(.start(request.tag)) }
    public func networkQueue(_ queue: NetworkQueue, didReceiveHeaders request: NetworkRequest, head: ResponseHead) {
        append(.headers(request.tag, head.statusCode))
    }
    public func networkQueue(_ queue: NetworkQueue, didFinish request: NetworkRequest, response: NetworkResponse) {
        append(.finish(request.tag))
    }
    public func networkQueue(_ queue: NetworkQueue, didFail request: NetworkRequest, error: NetworkQueueError) {
        append(.fail(request.tag, error))
    }
    public func networkQueue(
        _ queue: NetworkQueue, willRetry request: NetworkRequest, after delay: TimeInterval, error: NetworkQueueError
    ) {
        append(.retry(request.tag, delay, error))
    }
    public func networkQueue(_ queue: NetworkQueue, didPause request: NetworkRequest) { append(.pause(request.tag)) }
    public func networkQueue(_ queue: NetworkQueue, didResume request: NetworkRequest) { append(.resume(request.tag)) }
    public func networkQueue(_ queue: NetworkQueue, didUpdateProgress progress: QueueProgress) {
        progresses.with { $0.append(progress) }
        append(.progress(progress.fractionCompleted))
    }
    public func networkQueue(_ queue: NetworkQueue, sourceDidFail error: NetworkQueueError) {
        append(.sourceFailed(error))
    }
    public func networkQueueDidFinish(_ queue: NetworkQueue) { append(.queueFinished) }
}

extension NetworkRequest {
    /// The error this request failed with, or nil if it has not failed.
    public var failure: NetworkQueueError? {
        if case .failure(let error)? = result { error } else { nil }
    }

    /// The `URLError` code of a transport failure, or nil for any other outcome.
    public var transportErrorCode: URLError.Code? {
        if case .transport(let error)? = failure { error.code } else { nil }
    }
}

extension NetworkQueue {
    /// Makes a ``Recorder`` this queue's delegate and returns it (the queue holds its delegate weakly: keep
    /// the returned recorder for as long as the test needs its events).
    public func recording() -> Recorder {
        let recorder = Recorder()
        delegate = recorder
        return recorder
    }
}
