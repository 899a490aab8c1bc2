import Foundation
import LoopbackServer
import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Prints to standard error.
func complain(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

let options: DemoOptions
do {
    options = try DemoOptions.parse(CommandLine.arguments.dropFirst())
} catch {
    complain("Demo: error: \(error)\nRun 'swift run Demo --help' for usage.")
    exit(2)
}
if options.showHelp {
    print(DemoOptions.usage)
    exit(0)
}


// The --input list, read and checked before anything starts: a malformed line is bad usage.
var listed: [InputList.Entry] = []
if let input = options.input {
    do {
        listed = try InputList.parse(try InputList.read(input))
    } catch let problem as InputList.Problem {
        complain("Demo: error: \(input == "-" ? "standard input" : input), \(problem)")
        exit(2)
    } catch {
        complain("Demo: error: cannot read \(input): \(error.localizedDescription)")
        exit(2)
    }
}
let requested = options.urls.map { InputList.Entry(url: $0, checksum: nil) } + listed
if options.input != nil, requested.isEmpty {
    print("Summary: the list names no request")
    exit(0)
}

// Offline by default: serve the built-in set from a local server.
var server: LoopbackServer?
var targets: [(URL, String)]
if requested.isEmpty && options.input == nil {
    do {
        let local = try LoopbackServer()
        server = local
        targets = DemoSet.items(flaky: options.flaky).map { (local.url($0.path), $0.label) }
    } catch {
        complain("Demo: error: could not start the local demo server: \(error)")
        exit(1)
    }
} else {
    targets = requested.map { ($0.url, $0.url.lastPathComponent.isEmpty ? ($0.url.host ?? $0.url.absoluteString) : $0.url.lastPathComponent) }
}

let transport: any Transport
switch options.transport {
case .automatic:
    transport = NetworkQueue.makeDefaultTransport()
case .urlsession:
    transport = URLSessionTransport()
case .curl:
    #if os(Linux)
        do {
            transport = try CurlTransport()
        } catch {
            complain("Demo: error: \(error)")
            exit(1)
        }
    #else
        complain("Demo: error: the curl transport is available on Linux only")
        exit(2)
    #endif
}
let queue = NetworkQueue(transport: transport)
queue.maxConcurrentRequestCount = options.concurrency
queue.order = options.order
queue.showsAccurateProgress = options.accurateProgress
queue.cancelsAllOnFailure = !options.keepGoing
queue.retryPolicy = RetryPolicy(maximumAttempts: options.retries + 1)
queue.maxConcurrentRequestsPerHost = options.perHost
queue.maximumBytesPerSecond = options.limitRate
// Set before the requests are added, so that the log begins with each one's `added`.
if options.verbose {
    queue.collectsMetrics = true
    queue.logHandler = { record in
        print("log       \(record.level) \(record.event.rawValue): \(record.message)")
        fflush(nil)
    }
}

if let output = options.output {
    do {
        try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
    } catch {
        complain("Demo: error: cannot use \(output.path) for --output: \(error.localizedDescription)")
        exit(1)
    }
}
let fileNames = FileNames.names(for: targets.map(\.0))
var rows: [(NetworkRequest, String)] = []
for (index, ((url, label), name)) in zip(targets, fileNames).enumerated() {
    let destination = options.output.map { NetworkRequest.Destination.file($0.appendingPathComponent(name)) } ?? .memory
    let checksum = index < requested.count ? requested[index].checksum : nil
    let request = NetworkRequest(
        URLRequest(url: url), destination: destination, integrity: .init(checksum: checksum),
        fileOptions: .init(existingFile: options.replace ? .replace : .skipIfUnchanged))
    do {
        try queue.add(request)
    } catch {
        complain("Demo: error: \(error.localizedDescription)")
        exit(1)
    }
    rows.append((request, label))
}

let mode = [
    "\(rows.count) requests", options.concurrency == 0 ? "unlimited concurrency" : "\(options.concurrency) at a time",
    options.order == .fifo ? "FIFO" : "LIFO", options.accurateProgress ? "accurate progress (HEAD first)" : "simple progress",
    options.retries == 1 ? "1 retry" : "\(options.retries) retries",
] + (options.output.map { ["saving to \($0.path)"] } ?? []) + (options.perHost > 0 ? ["\(options.perHost) per host"] : [])
    + (options.limitRate.map { ["capped at \(Format.bytes(Int64($0)))/s"] } ?? [])
print("NetworkQueue demo: " + mode.joined(separator: ", ") + (server == nil ? "" : ", from a local server"))

// --verbose prints line by line: the log's lines would break a redrawn screen.
var display = Display(
    rows: rows, isTerminal: isatty(STDOUT_FILENO) == 1 && !options.verbose, retries: options.retries,
    showsMetrics: options.verbose)
// Ctrl-C: nothing is cancelled, so partial files (and their validators) stay for the next run.
signal(SIGINT, SIG_IGN)
let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: .main)
interrupt.setEventHandler {
    let progress = queue.progress
    print(
        "\nInterrupted: \(progress.finishedRequestCount)/\(rows.count) done, \(Format.bytes(progress.bytesReceived)) received"
            + (options.output == nil ? "" : "; partial files kept, run again to continue them"))
    exit(130)
}
interrupt.resume()
let events = queue.events()
if display.isTerminal, isatty(STDIN_FILENO) == 1 { Keys.listen(queue) }
queue.go()
for await event in events {
    display.apply(event)
    if case .queueDidFinish = event { break }
}
let succeeded = display.finish()
server?.stop()
exit(succeeded ? 0 : 1)
