import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The baseline: plain URLSession data tasks with a delegate, at most `window` in flight, each body kept
/// in memory or streamed to a file with 1 MiB coalesced writes, just as NetworkQueue does.
final class RawClient: NSObject, URLSessionDataDelegate, Sendable {
    private struct State {
        var next = 0
        var finished = 0
        var failures = 0
        var bodies: [Int: Data] = [:]
        var files: [Int: FileHandle] = [:]
        var continuation: CheckedContinuation<Int, Never>?
    }

    private let urls: [URL]
    private let window: Int
    private let directory: URL?
    private let state = Protected(State())
    private let session = Protected<URLSession?>(nil)

    /// Same settings as `URLSessionTransport`: no cache, 64 connections per host, a serial delegate queue.
    static func configuration() -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.default
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpMaximumConnectionsPerHost = 64
        return configuration
    }

    init(urls: [URL], window: Int, directory: URL? = nil) {
        self.urls = urls
        self.window = window
        self.directory = directory
    }

    /// Fetches every URL; returns the number of failures.
    func run() async -> Int {
        let delegateQueue = OperationQueue()
        delegateQueue.maxConcurrentOperationCount = 1
        let session = URLSession(configuration: Self.configuration(), delegate: self, delegateQueue: delegateQueue)
        self.session.with { $0 = session }
        let failures = await withCheckedContinuation { continuation in
            state.with { $0.continuation = continuation }
            for _ in 0..<min(window, urls.count) { startNext() }
        }
        session.finishTasksAndInvalidate()
        return failures
    }

    private func startNext() {
        let index: Int? = state.with { state in
            guard state.next < urls.count else { return nil }
            defer { state.next += 1 }
            return state.next
        }
        guard let index, let session = session.with({ $0 }) else { return }
        let task = session.dataTask(with: URLRequest(url: urls[index]))
        if let directory {
            let file = directory.appendingPathComponent("raw-\(task.taskIdentifier).bin")
            _ = FileManager.default.createFile(atPath: file.path, contents: nil)
            let handle = try? FileHandle(forWritingTo: file)
            state.with { $0.files[task.taskIdentifier] = handle }
        }
        task.resume()
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        state.with { state in
            state.bodies[dataTask.taskIdentifier, default: Data()].append(data)
            if let file = state.files[dataTask.taskIdentifier], let body = state.bodies[dataTask.taskIdentifier],
                body.count >= 1 << 20
            {
                try? file.write(contentsOf: body)
                state.bodies[dataTask.taskIdentifier] = Data()
            }
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let continuation: CheckedContinuation<Int, Never>? = state.with { state in
            let body = state.bodies.removeValue(forKey: task.taskIdentifier)
            if let file = state.files.removeValue(forKey: task.taskIdentifier) {
                if let body { try? file.write(contentsOf: body) }
                try? file.close()
            }
            let status = (task.response as? HTTPURLResponse)?.statusCode ?? 0
            if error != nil || !(200..<300).contains(status) { state.failures += 1 }
            state.finished += 1
            guard state.finished == urls.count else { return nil }
            defer { state.continuation = nil }
            return state.continuation
        }
        if let continuation {
            continuation.resume(returning: state.with { $0.failures })
        } else {
            startNext()
        }
    }
}
