// swift-format-ignore-file
// (Not formatted: its examples are the documentation's own text, compared character for character.)
import Dispatch
import Foundation
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Every `swift` example of the README and the DocC articles, compiled here with the context it assumes.
// The test below checks that each example in those files appears in this file line for line, so an example
// that stops compiling fails the build, and one edited in the docs only fails the test.

private final class DocumentationContext: NetworkQueueDelegate {
    /// A progress bar and a label, as a UI would have (values behind a lock: the delegate is `Sendable`).
    final class Bar: Sendable {
        let box = Box(0.0)
        var fraction: Double {
            get { box.current }
            set { box.with { $0 = newValue } }
        }
    }
    final class Label: Sendable {
        let box = Box("")
        var text: String {
            get { box.current }
            set { box.with { $0 = newValue } }
        }
    }
    struct Tokens { func current() async throws -> String { "t" } }
    let bar = Bar()
    let label = Label()
    let queue = NetworkQueue()
    let url = URL(string: "http://127.0.0.1:9/a")!
    let urls = [URL(string: "http://127.0.0.1:9/a")!]
    let fileURL = FileManager.default.temporaryDirectory.appendingPathComponent("example.bin")
    let folder = FileManager.default.temporaryDirectory
    let files: [(String, URL)] = []
    let digests: [String: String] = [:]
    let caFile = URL(fileURLWithPath: "/etc/ssl/certs/ca-certificates.crt")
    let request = URLRequest(url: URL(string: "http://127.0.0.1:9/upload")!)
    let tokens = Tokens()
    let releasesURL = URL(string: "http://127.0.0.1:9/releases/latest")!

    // README.md
    func readme() async throws {
        let files = self.files, folder = self.folder, digests = self.digests
        final class Downloads: NetworkQueueDelegate {
            func networkQueue(_ queue: NetworkQueue, didFinish request: NetworkRequest, response: NetworkResponse) {
                print("saved", response.fileURL!.lastPathComponent, response.metrics?.final?.httpVersion ?? "")
            }
            func networkQueue(_ queue: NetworkQueue, didFail request: NetworkRequest, error: NetworkQueueError) {
                print("failed:", error)  // URLs in errors are redacted
            }
            func networkQueue(_ queue: NetworkQueue, didUpdateProgress progress: QueueProgress) {
                print(Int(progress.fractionCompleted * 100), "%")
            }
        }

        let queue = NetworkQueue()                 // suspended; libcurl on Linux, URLSession on Apple platforms
        let downloads = Downloads()
        queue.delegate = downloads
        queue.maxConcurrentRequestCount = 4
        queue.showsAccurateProgress = true         // HEADs where they pay: the total is known early
        queue.cancelsAllOnFailure = false
        queue.collectsMetrics = true             // each response's metrics: HTTP version, timings
        queue.logHandler = { record in print(record) }   // "info finished: 200, 1048576 bytes in 84.2 ms"
        for (name, url) in files {
            try queue.add(NetworkRequest(URLRequest(url: url), destination: .file(folder.appendingPathComponent(name)),
                                         integrity: .init(checksum: .sha256(digests[name]!))))
        }
        let progress = await queue.run()           // go(), then wait for the drain
        _ = progress
    }

    // NetworkQueue.md
    func landingPage() {
        let urls = self.urls
        let queue = NetworkQueue()
        queue.delegate = self
        queue.showsAccurateProgress = true
        for url in urls { queue.add(URLRequest(url: url)) }
        queue.go()
    }

    // GettingStarted.md
    func gettingStarted() async throws {
        let url = self.url, urls = self.urls, fileURL = self.fileURL
        do {
            final class Downloads: NetworkQueueDelegate {
                func networkQueue(_ queue: NetworkQueue, didFinish request: NetworkRequest, response: NetworkResponse) {
                    print("got \(response.body.count) bytes from \(request.url!)")
                }
                func networkQueue(_ queue: NetworkQueue, didFail request: NetworkRequest, error: NetworkQueueError) {
                    print("\(request.url!) failed: \(error.localizedDescription)")
                }
                func networkQueue(_ queue: NetworkQueue, didUpdateProgress progress: QueueProgress) {
                    print("\(Int(progress.fractionCompleted * 100))%")
                }
                func networkQueueDidFinish(_ queue: NetworkQueue) { print("all done") }
            }

            let downloads = Downloads()
            let queue = NetworkQueue()              // suspended; delegate calls on a private serial queue
            queue.delegate = downloads              // held weakly
            queue.maxConcurrentRequestCount = 4
            for path in ["a.json", "b.json", "c.json"] {
                queue.add(URLRequest(url: URL(string: "https://example.com/\(path)")!))
            }
            queue.go()
        }
        do {
            let queue = NetworkQueue()
            for url in urls { queue.add(URLRequest(url: url)) }
            let progress = await queue.run()        // starts the queue and returns when it drains
            print("\(progress.finishedRequestCount) of \(progress.totalRequestCount) finished")
        }
        do {
            let request = NetworkRequest(
                URLRequest(url: url),
                validation: .init(acceptableStatusCodes: 200..<300),    // the default; nil accepts every status
                handlers: .init(
                    onDownloadProgress: { print($0.completedBytes) },
                    onCompletion: { result in print(result) }))
            try queue.add(request)                  // adding the same request twice throws .invalidRequest(.alreadyAdded)
        }
        do {
            let request = NetworkRequest(URLRequest(url: url), destination: .file(fileURL))
            try queue.add(request)
        }
    }

    // BatchControl.md
    func batchControl() throws {
        let url = self.url
        queue.maxConcurrentRequestsPerHost = 2           // at most 2 transfers to one server
        queue.hostPacing = .requests(2, per: 1)          // and at most 2 new requests a second to it
        queue.maximumBytesPerSecond = 5_000_000          // the whole queue's download rate
        queue.duplicatePolicy = .coalesce                // one transfer for requests of the same resource
        let urgent = NetworkRequest(URLRequest(url: url), priority: .high)
        try queue.add(urgent)
        queue.pause(urgent)                              // holds no slot, keeps its part file
        queue.resume(urgent)
        queue.cancel { $0.userInfo["album"] as? Int == 7 }   // returns the requests it chose
        queue.maximumBytesPerSecond = 2_000_000          // the whole queue's download rate; nil removes the cap
    }

    func namingAndSessions() throws {
        let folder = URL(fileURLWithPath: "/data/reports", isDirectory: true)
        let report = NetworkRequest(
            url: URL(string: "https://example.com/download?id=17")!,
            destination: .file(folder.appendingPathComponent("download-17")),    // used when no name is given
            fileOptions: .init(namesFileFromResponse: true))
        try queue.add(report)
        // After it finished: report.response?.fileURL is where it went, e.g. /data/reports/Q3 report.pdf
    }

    func outputFolderGuarded() throws {
        let output = try OutputFolder(path: "downloads")                   // made if missing
        let place = try OutputFolder.Place(folders: ["2026", "q1"], name: "notes.txt")
        let request = NetworkRequest(
            url: URL(string: "https://example.com/notes.txt")!,
            destination: .file(output.url(for: place)),
            fileOptions: .init(outputFolder: output))
        try queue.add(request)
    }

    func metalinkDocuments() async throws {
        let document = try Metalink(parsing: Data(contentsOf: URL(fileURLWithPath: "ubuntu.meta4")))
        let folder = try OutputFolder(path: "downloads")
        for request in try document.requests(in: folder, fileOptions: .init(maximumConnections: 4)) {
            try queue.add(request)
        }
        queue.go()
        await queue.run()
    }

    #if os(Linux)
        func cookieFiles() throws {
            let cookies = try CookieStore(contentsOf: URL(fileURLWithPath: "cookies.txt"))
            var options = CurlTransport.Options()
            options.cookies = .store(cookies)
            let queue = NetworkQueue(transport: try CurlTransport(options: options))
            // ... run the batch ...
            try cookies.write(to: URL(fileURLWithPath: "cookies.txt"))
            _ = queue
        }
    #endif

    func batchControlPacing() {
        queue.hostPacing = HostPacing(interval: 0.5)                         // a start every 0.5 s per server
        queue.hostPacing = .requests(30, per: 60, randomized: true)         // 30 a minute, waits of 1-3 s at random
        queue.setHostPacing(.unpaced, for: URL(string: "https://cdn.example")!)   // this server: as fast as slots allow
        queue.setHostPacing(nil, for: URL(string: "https://cdn.example")!)        // back to the queue's pacing
    }

    func batchControlTasks() {
        let url = self.url, fileURL = self.fileURL
        let download = NetworkRequest(URLRequest(url: url), destination: .file(fileURL))   // continues by default
        let fresh = NetworkRequest(URLRequest(url: url), destination: .file(fileURL),
                                   fileOptions: .init(continuesPartialDownloads: false))
        queue.maxConcurrentRequestsPerHost = 2           // 0 (the default): only the queue's limit
        let rerun = NetworkRequest(URLRequest(url: url), destination: .file(fileURL),
                                   fileOptions: .init(existingFile: .revalidate))
        _ = (download, fresh, rerun)
    }

    func batchControlTimeLimits() {
        let reportURL = self.url
        queue.timeLimits = TimeLimits(
            deadline: 600,                                                  // 10 minutes a request, retries included
            lowestSpeed: LowestSpeed(bytesPerSecond: 1_000, over: 30))      // curl's --speed-limit 1000 --speed-time 30
        let report = NetworkRequest(url: reportURL, timeLimits: TimeLimits(deadline: 3_600))   // this one may take an hour
        _ = report
    }

    func checksums(hex: String) {
        let url = self.url, fileURL = self.fileURL
        let checksum = Checksum.sha256(hex)                  // or Checksum("sha256:…"), nil when malformed
        let image = NetworkRequest(URLRequest(url: url), destination: .file(fileURL), integrity: .init(checksum: checksum))
        _ = image
    }

    // BigFiles.md
    func bigFiles() throws {
        let folder = self.folder
        let image = NetworkRequest(
            url: URL(string: "https://a.example.org/images/disk.img")!,
            destination: .file(folder.appendingPathComponent("disk.img")),
            fileOptions: .init(
                maximumConnections: 8,                                         // up to 8 connections for this file
                mirrors: [URL(string: "https://b.example.net/disk.img")!]))   // the same bytes elsewhere
        try queue.add(image)
    }

    // RetriesResumeIntegrity.md
    func retries() async throws {
        let request = self.request, tokens = self.tokens, releasesURL = self.releasesURL
        queue.retryPolicy = RetryPolicy(maximumAttempts: 5)          // for every request
        let upload = NetworkRequest(request, retryPolicy: .never)     // this one is never retried
        _ = upload
        queue.adapter = { request in
            var request = request
            request.setValue("Bearer \(try await tokens.current())", forHTTPHeaderField: "Authorization")
            return request
        }
        struct Release: Decodable, Sendable { let tag: String }
        let latest = try queue.add(NetworkRequest(url: releasesURL), decoding: Release.self)
        queue.go()
        let release = try await latest.value()   // throws the request's failure, or .decodingFailed
        _ = release
    }

    // TrustworthyProgress.md
    func networkQueue(_ queue: NetworkQueue, didUpdateProgress progress: QueueProgress) {
        bar.fraction = progress.fractionCompleted
        label.text = "\(progress.bytesReceived) of \(progress.bytesExpectedToReceive.map(String.init) ?? "?") bytes"
    }

    func foundationProgress() {
        let queue = NetworkQueue(delegateQueue: .main)
        let progress: Progress = queue.foundationProgress   // SwiftUI: ProgressView(progress); UIKit: observedProgress
        _ = progress
    }

    // TrustworthyProgress.md
    func accurateProgress() {
        queue.showsAccurateProgress = true   // HEADs where they pay: the total is known (or estimated) early
        queue.go()
    }

    // BatchesOfMillions.md
    func batchesOfMillions() async {
        // Made one at a time, as the queue reads them: a million requests never exist at once.
        queue.add(contentsOf: (1...1_000_000).lazy.map { NetworkRequest(url: URL(string: "https://cdn.example/img/\($0).jpg")!) })
        queue.go()
        await queue.run()
    }

    // Observing.md
    func metrics() async {
        let urls = self.urls
        queue.collectsMetrics = true
        let requests = urls.map { queue.add(URLRequest(url: $0)) }
        await queue.run()
        for request in requests { print(request.metrics?.final?.timeToFirstByte ?? 0) }
    }

    func observing() {
        queue.logHandler = { record in
            guard record.level >= .notice else { return }
            print("[\(record.level)] \(record.event.rawValue) #\(record.request.tag): \(record.message)")
        }
    }

    // ChoosingATransport.md
    func transports() throws {
        let caFile = self.caFile
        do {
            let queue = NetworkQueue()
            if let reason = NetworkQueue.defaultTransportFallbackReason { print("using URLSession: \(reason)") }
            _ = queue
        }
        #if os(Linux)
            do {
                var options = CurlTransport.Options()
                options.engineThreads = 1                      // one connection set, the least CPU per small request
                options.additionalTrustedCertificates = caFile // a PEM file trusted beside the system's CAs
                let queue = NetworkQueue(transport: try CurlTransport(options: options))
                _ = queue
            }
        #endif
    }
}

// BatchesOfMillions.md
private final class EstimatedProgressContext: NetworkQueueDelegate {
    let bar = DocumentationContext.Bar()
    let label = DocumentationContext.Label()

    func networkQueue(_ queue: NetworkQueue, didUpdateProgress progress: QueueProgress) {
        let total = progress.estimatedBytesExpectedToReceive.map { "\(progress.isEstimated ? "about " : "")\($0) bytes" } ?? "?"
        label.text = "\(progress.totalRequestCount) of \(progress.estimatedRequestCount) requests, \(total)"
        bar.fraction = progress.fractionCompleted
    }
}

// DelegateContract.md
final class Watcher: NetworkQueueDelegate {
    func networkQueue(_ queue: NetworkQueue, didReceiveHeaders request: NetworkRequest, head: ResponseHead) {
        print(request.tag, head.statusCode, head.value(forHTTPHeaderField: "Content-Type") ?? "")
    }
    func networkQueue(_ queue: NetworkQueue, didFail request: NetworkRequest, error: NetworkQueueError) {
        print(request.tag, error.isCancellation ? "cancelled" : "failed: \(error)")
    }
}

// ChoosingATransport.md
struct CannedTransport: Transport {
    func startTransfer(
        _ request: URLRequest, options: TransferOptions, events: @escaping @Sendable (TransferEvent) -> Void
    ) -> any TransferHandle {
        let head = ResponseHead(url: request.url!, statusCode: 200, httpVersion: "HTTP/1.1",
                                fields: [.init(name: "Content-Length", value: "2")])
        DispatchQueue.global().async {
            events(.head(head))
            events(.data(Data("ok".utf8)))
            events(.completed(nil))
        }
        return CannedHandle()
    }
}

struct CannedHandle: TransferHandle {
    func cancel() {}
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct DocumentationExamplesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The lines of `text` without their indentation, blank lines dropped.
    static func lines(_ text: String) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
    }

    static func examples(in file: URL) throws -> [String] {
        let text = try String(contentsOf: file, encoding: .utf8)
        return text.components(separatedBy: "```swift\n").dropFirst().map { $0.components(separatedBy: "```")[0] }
    }

    @Test func everyExampleOfTheDocsIsCompiledHere() throws {
        let source = Self.lines(try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8))
        let catalog = Self.root.appendingPathComponent("Sources/NetworkQueue/NetworkQueue.docc")
        let articles = try FileManager.default.contentsOfDirectory(at: catalog, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "md" }
        var checked = 0
        for file in [Self.root.appendingPathComponent("README.md")] + articles {
            for example in try Self.examples(in: file) {
                let wanted = Self.lines(example)
                let found = source.indices.contains { start in
                    start + wanted.count <= source.count && Array(source[start..<start + wanted.count]) == wanted
                }
                #expect(found, "an example of \(file.lastPathComponent) is not compiled here:\n\(example)")
                checked += 1
            }
        }
        #expect(checked >= 12)
    }

    @Test func theCannedTransportOfTheTransportsArticleRunsARequest() async throws {
        let queue = NetworkQueue(transport: CannedTransport())
        let request = NetworkRequest(url: URL(string: "http://example.test/")!)
        try queue.add(request)
        await queue.run()
        #expect(try request.result?.get().body == Data("ok".utf8))
    }
}

/// AdaptiveStreamsHooksTrust.md: a file in order, over several connections (compiled, not run: it writes to standard
/// output).
func orderedDownloadExample(url: URL) async throws {
    let queue = NetworkQueue()
    queue.go()
    for try await bytes in queue.orderedDownload(of: url, settings: .init(connections: 8)) {
        try FileHandle.standardOutput.write(contentsOf: bytes)  // the file, from its first byte
    }
}
