import Foundation
import NetworkQueue
import TestSupport

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

func url(_ tag: Int) -> URL { URL(string: "http://example.test/\(tag)")! }

/// A request tagged `tag` for `http://example.test/<tag>`. The default timeout is an hour: these tests
/// drive the in-memory transport from the test's own tasks, which a loaded sanitizer run has kept waiting
/// for over a minute; a test about timeouts passes its own.
func request(
    _ tag: Int, timeout: TimeInterval = 3_600, acceptable: Range<Int>? = 200..<300, recorder: Recorder? = nil
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
        urlRequest,
        validation: .init(acceptableStatusCodes: acceptable),
        handlers: .init(onDownloadProgress: onProgress, onCompletion: onCompletion),
        tag: tag)
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

/// A queue whose transfers wait at a closed gate after their head, with a recorder as delegate and
/// `count` tagged requests (tags 1...count) already added.
struct GatedQueue {
    let queue: NetworkQueue
    let transport: InMemoryTransport
    let gate = TransferGate()
    let recorder = Recorder()
    let requests: [NetworkRequest]

    init(limit: Int = 4, count: Int) throws {
        transport = InMemoryTransport.ok(gate: gate)
        queue = NetworkQueue.oneAttempt(transport: transport)
        queue.maxConcurrentRequestCount = limit
        queue.delegate = recorder
        // Gated transfers wait for the test; under a loaded sanitizer run that wait has exceeded a minute,
        // and these tests are not about timeouts.
        requests = (1...count).map { request($0, timeout: 3_600) }
        for request in requests { try queue.add(request) }
    }
}

/// A transport that ignores cancel and lets the test deliver bytes and success later anyway, as URLSession
/// on Linux can after a lost cancel.
final class StubbornTransport: Transport {
    struct Handle: TransferHandle { func cancel() {} }
    let pending = Box<[(URL, @Sendable (TransferEvent) -> Void)]>([])
    private let startWaiters = Box<[CheckedContinuation<Void, Never>]>([])

    func startTransfer(
        _ request: URLRequest, options: TransferOptions, events: @escaping @Sendable (TransferEvent) -> Void
    ) -> any TransferHandle {
        pending.with { $0.append((request.url!, events)) }
        for waiter in startWaiters.with({ waiters in
            defer { waiters = [] }
            return waiters
        }) { waiter.resume() }
        return Handle()
    }

    /// Returns once a transfer has been started (at once if one already has).
    func waitUntilStarted() async {
        await withCheckedContinuation { continuation in
            // The check and the registration happen under the waiters' lock; a start appends before it drains
            // the waiters under that lock, so it either is seen by the check or finds the waiter.
            let started = startWaiters.with { waiters in
                if pending.current.isEmpty {
                    waiters.append(continuation)
                    return false
                }
                return true
            }
            if started { continuation.resume() }
        }
    }

    /// Delivers a complete success for every transfer started, on the caller's thread.
    func deliverLateSuccess() {
        for (url, events) in pending.current {
            events(
                .head(
                    ResponseHead(
                        HTTPURLResponse(
                            url: url, statusCode: 200, httpVersion: nil, headerFields: ["Content-Length": "2"])!)))
            events(.data(Data("ok".utf8)))
            events(.completed(nil))
        }
    }
}

/// Fails request `failing` with `status`; every other request waits for `gate`.
func transport(failing: Int, status: Int = 404, gate: TransferGate) -> InMemoryTransport {
    InMemoryTransport { urlRequest in
        tag(of: urlRequest) == failing
            ? [.respond(status: status, headers: ["Content-Length": "0"])]
            : [.respond(status: 200), .hold(gate), .body(Data("z".utf8))]
    }
}
