import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One file fetched over several connections at once and handed on in order, as an `AsyncSequence` of its bytes: for a
/// pipe (`Demo --split 8 -o - URL | tar x`), a hash, an upload, anything that must read a file from its start.
///
/// A HEAD learns the file's length and validator; the file is then asked for in chunks, each a
/// request of the queue with `Range` (and `If-Range`, so that every chunk is of one version of the file), at most
/// ``Settings/connections`` at once, within ``Settings/window`` bytes ahead of the reader: when the window is full the
/// connections wait for the reader, so memory stays within the window (and a chunk being fetched) however slow the
/// reader is. Each chunk is retried by the queue's ``NetworkQueue/retryPolicy``, limited by its limits and held by its
/// servers' holds as any request; what the sequence yields is the file, in order, each byte exactly once.
///
/// A server that gives no length, serves no ranges (no `Accept-Ranges: bytes`), or refuses the HEAD: the file is
/// fetched whole over one connection into a temporary file, handed on from there once complete, and removed (memory
/// stays small; nothing is yielded before the end). A chunk that is not its range (another version of the file, a
/// server that stopped serving ranges) or a request that fails ends the sequence with ``Problem``. Nothing runs until
/// the queue's ``NetworkQueue/go()``; requests added meanwhile wait in it. Iteration stopped early (a reader gone, a
/// task cancelled) cancels the chunks being fetched.
public struct OrderedDownload: AsyncSequence, Sendable {
    public typealias Element = Data

    /// How a file is fetched.
    public struct Settings: Sendable, Hashable {
        /// Chunks fetched at once; default 4, at least 1.
        public var connections: Int
        /// The most bytes fetched ahead of the reader; default 64 MiB.
        public var window: Int
        /// The bytes of one chunk; nil (the default): a twice-``connections``th of the window, within 256 KiB and
        /// 16 MiB.
        public var chunkSize: Int?
        /// Fields every request sends (a token, say); default none. `Range` and `If-Range` are the download's own.
        public var headers: [String: String]

        /// Settings with the defaults, or those given.
        public init(
            connections: Int = 4, window: Int = 64 << 20, chunkSize: Int? = nil, headers: [String: String] = [:]
        ) {
            self.connections = Swift.max(1, connections)
            self.window = Swift.max(1, window)
            self.chunkSize = chunkSize
            self.headers = headers
        }
    }

    /// Why the sequence ended before the file's end.
    public enum Problem: Error, CustomStringConvertible, Sendable {
        /// A request of the download failed (after the queue's retries).
        case requestFailed(NetworkQueueError)
        /// A chunk's answer was not the range asked for: the file changed, or the server stopped serving ranges.
        case wrongRange(String)
        /// The temporary file of a server without ranges could not be read.
        case temporaryFile(String)

        /// One line for people.
        public var description: String {
            switch self {
            case .requestFailed(let error): error.description
            case .wrongRange(let reason): "a chunk was not its range: \(reason)"
            case .temporaryFile(let reason): "the temporary file could not be read: \(reason)"
            }
        }
    }

    let queue: NetworkQueue
    let url: URL
    let settings: Settings

    public func makeAsyncIterator() -> Iterator {
        Iterator(fetcher: OrderedFetcher(queue: queue, url: url, settings: settings))
    }

    /// Hands on the file's bytes in order; `next()` throws ``Problem``.
    public struct Iterator: AsyncIteratorProtocol {
        let fetcher: OrderedFetcher

        public mutating func next() async throws -> Data? { try await fetcher.next() }
    }
}

extension NetworkQueue {
    /// `url`'s file over up to `settings.connections` connections of this queue, handed on in order (see
    /// ``OrderedDownload``). Nothing is sent until the sequence is iterated and the queue runs.
    public func orderedDownload(of url: URL, settings: OrderedDownload.Settings = .init()) -> OrderedDownload {
        OrderedDownload(queue: self, url: url, settings: settings)
    }
}

/// The shell of an ``OrderedDownload``: its requests, the chunks that arrived, and the reader waiting for the next.
final class OrderedFetcher: @unchecked Sendable {
    private enum Mode {
        /// The HEAD is asked.
        case starting
        /// Chunks in flight and arrived.
        case chunks(OrderedWindow, validator: String?)
        /// One whole GET into a temporary file; then the file, read from `handle`.
        case whole(folder: URL, handle: FileHandle?)
        case ended
    }

    private let queue: NetworkQueue
    private let url: URL
    private let settings: OrderedDownload.Settings
    private let lock = NSLock()
    private var mode = Mode.starting
    private var started = false
    private var arrived: [Int: Data] = [:]
    private var running: [Int: NetworkRequest] = [:]
    private var failure: OrderedDownload.Problem?
    private var waiter: CheckedContinuation<Void, Never>?

    init(queue: NetworkQueue, url: URL, settings: OrderedDownload.Settings) {
        self.queue = queue
        self.url = url
        self.settings = settings
    }

    deinit {
        for request in running.values { queue.cancel(request) }
        if case .whole(let folder, let handle) = mode {
            try? handle?.close()
            try? FileManager.default.removeItem(at: folder)
        }
    }

    /// The next bytes in order, nil at the end.
    func next() async throws -> Data? {
        startOnce()
        while true {
            if Task.isCancelled {
                cancelRunning()
                throw CancellationError()
            }
            switch take() {
            case .data(let data): return data
            case .end: return nil
            case .failed(let failure): throw failure
            case .wait:
                await withCheckedContinuation { continuation in
                    let ready = lock.withLock {
                        guard !hasSomething else { return true }
                        waiter = continuation
                        return false
                    }
                    if ready { continuation.resume() }
                }
            }
        }
    }

    private enum Taken {
        case data(Data)
        case end
        case failed(OrderedDownload.Problem)
        case wait
    }

    /// What the reader can have now.
    private func take() -> Taken {
        var more: [(Int, ClosedRange<Int64>, String?)] = []
        let taken: Taken = lock.withLock {
            if let failure { return .failed(failure) }
            switch mode {
            case .starting: return .wait
            case .ended: return .end
            case .whole(let folder, let handle):
                guard let handle else { return .wait }
                do {
                    let data = try handle.read(upToCount: 1 << 20) ?? Data()
                    guard data.isEmpty else { return .data(data) }
                    try? handle.close()
                    try? FileManager.default.removeItem(at: folder)
                    mode = .ended
                    return .end
                } catch {
                    return .failed(.temporaryFile(error.localizedDescription))
                }
            case .chunks(var window, let validator):
                if window.isComplete {
                    mode = .ended
                    return .end
                }
                guard let data = arrived.removeValue(forKey: window.nextToYield) else { return .wait }
                window.handedOn()
                while let chunk = window.nextRequest() { more.append((chunk, window.range(of: chunk), validator)) }
                mode = .chunks(window, validator: validator)
                return .data(data)
            }
        }
        for (chunk, range, validator) in more { request(chunk, range: range, validator: validator) }
        return taken
    }

    /// True when the reader need not wait (under the lock).
    private var hasSomething: Bool {
        if failure != nil { return true }
        switch mode {
        case .starting: return false
        case .ended: return true
        case .whole(_, let handle): return handle != nil
        case .chunks(let window, _): return window.isComplete || arrived[window.nextToYield] != nil
        }
    }

    private func wake() {
        let waiting: CheckedContinuation<Void, Never>? = lock.withLock {
            guard hasSomething, let waiting = waiter else { return nil }
            waiter = nil
            return waiting
        }
        waiting?.resume()
    }

    private func urlRequest(method: String = "GET", _ fields: [String: String] = [:]) -> URLRequest {
        var request = URLRequest(url: url)
        request.httpMethod = method
        for (name, value) in settings.headers where !["range", "if-range"].contains(name.lowercased()) {
            request.setValue(value, forHTTPHeaderField: name)
        }
        for (name, value) in fields { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    private func startOnce() {
        guard
            lock.withLock({
                defer { started = true }
                return !started
            })
        else { return }
        let head = NetworkRequest(
            urlRequest(method: "HEAD"),
            handlers: NetworkRequest.Handlers(onCompletion: { [weak self] result in self?.headed(result) }))
        add(head, as: -1)
    }

    private func add(_ request: NetworkRequest, as key: Int) {
        lock.withLock { running[key] = request }
        do { try queue.add(request) } catch { fail(.requestFailed(error)) }
    }

    /// The HEAD's answer: chunks when the server gives a length and serves ranges, else the whole file.
    private func headed(_ result: Result<NetworkResponse, NetworkQueueError>) {
        lock.withLock { _ = running.removeValue(forKey: -1) }
        // A HEAD that could not be sent or answered says the GET would not be either; one refused by status (405, say)
        // leaves the GET to try.
        if case .failure(let error) = result {
            guard case .unacceptableStatus = error else { return fail(.requestFailed(error)) }
        }
        guard case .success(let response) = result, response.statusCode == 200,
            response.head.expectedContentLength >= 0,
            response.head.value(forHTTPHeaderField: "Accept-Ranges")?.lowercased().contains("bytes") == true,
            !ResponseRules.isEncoded(response.head)
        else { return fetchWhole() }
        let validator = RangeRules.validator(of: response.head)?.headerValue
        var window = OrderedWindow(
            length: response.head.expectedContentLength, connections: settings.connections,
            window: Int64(settings.window), chunkSize: settings.chunkSize.map(Int64.init))
        var first: [(Int, ClosedRange<Int64>)] = []
        while let chunk = window.nextRequest() { first.append((chunk, window.range(of: chunk))) }
        lock.withLock { mode = .chunks(window, validator: validator) }
        for (chunk, range) in first { request(chunk, range: range, validator: validator) }
        wake()
    }

    private func request(_ chunk: Int, range: ClosedRange<Int64>, validator: String?) {
        var fields = ["Range": "bytes=\(range.lowerBound)-\(range.upperBound)"]
        if let validator { fields["If-Range"] = validator }
        let request = NetworkRequest(
            urlRequest(fields),
            handlers: NetworkRequest.Handlers(onCompletion: { [weak self] result in self?.arrived(chunk, result) }))
        add(request, as: chunk)
    }

    private func arrived(_ chunk: Int, _ result: Result<NetworkResponse, NetworkQueueError>) {
        let problem: OrderedDownload.Problem? = lock.withLock {
            _ = running.removeValue(forKey: chunk)
            guard case .chunks(var window, let validator) = mode else { return nil }
            window.fetched()
            mode = .chunks(window, validator: validator)
            switch result {
            case .failure(let error): return .requestFailed(error)
            case .success(let response):
                if let reason = window.problem(
                    with: chunk, status: response.statusCode,
                    contentRange: response.head.value(forHTTPHeaderField: "Content-Range"),
                    bodyLength: response.body.count)
                {
                    return .wrongRange(reason)
                }
                arrived[chunk] = response.body
                return nil
            }
        }
        if let problem { fail(problem) }
        wake()
    }

    /// No ranges: the whole file into a temporary folder of its own, handed on once complete.
    private func fetchWhole() {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("nq-ordered-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(
                at: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        } catch {
            return fail(.temporaryFile(error.localizedDescription))
        }
        let file = folder.appendingPathComponent("whole")
        lock.withLock { mode = .whole(folder: folder, handle: nil) }
        let request = NetworkRequest(
            urlRequest(), destination: .file(file),
            handlers: NetworkRequest.Handlers(onCompletion: { [weak self] result in
                self?.fetchedWhole(result, file: file, folder: folder)
            }))
        add(request, as: -2)
    }

    private func fetchedWhole(_ result: Result<NetworkResponse, NetworkQueueError>, file: URL, folder: URL) {
        lock.withLock { _ = running.removeValue(forKey: -2) }
        switch result {
        case .failure(let error):
            try? FileManager.default.removeItem(at: folder)
            lock.withLock { mode = .ended }
            fail(.requestFailed(error))
        case .success:
            do {
                let handle = try FileHandle(forReadingFrom: file)
                lock.withLock { mode = .whole(folder: folder, handle: handle) }
            } catch {
                fail(.temporaryFile(error.localizedDescription))
            }
        }
        wake()
    }

    private func fail(_ problem: OrderedDownload.Problem) {
        lock.withLock { if failure == nil { failure = problem } }
        cancelRunning()
        wake()
    }

    private func cancelRunning() {
        let requests = lock.withLock {
            defer { running.removeAll() }
            return Array(running.values)
        }
        for request in requests { queue.cancel(request) }
    }
}
