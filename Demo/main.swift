import DemoKit
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
    // The display's lines are flushed in batches: what it printed goes out first.
    fflush(nil)
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// The options the command line gives, its program's files checked together before anything is created, emptied or
/// sent (each its own file, each written one writable, none inside --output), then its netrc file read.
func checkedOptions() -> DemoOptions {
    var options: DemoOptions
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
    if let problem = ProgramFiles.problem(with: options.programFiles, output: options.output) {
        complain("Demo: error: \(problem)")
        exit(2)
    }
    // --on-finish's program is found before anything is made or sent.
    if let command = options.onFinish {
        do throws(FinishCommands.Problem) { _ = try FinishCommands.program(of: command) } catch {
            complain("Demo: error: \(error)")
            exit(2)
        }
    }
    do throws(DemoOptions.Problem) { try options.readNetrc() } catch {
        complain("Demo: error: \(error)\nRun 'swift run Demo --help' for usage.")
        exit(2)
    }
    return options
}
let options = checkedOptions()
/// The CA file trusted beside the system's, and what named it (`--cacert`, or the environment's), looked up once.
let trustedCA = TrustedCA.file(option: options.caCert, environment: ProcessInfo.processInfo.environment)
if options.insecure {
    complain(
        "Demo: warning: --insecure: servers' certificates and names are not verified; anyone on the path can read "
            + "and change these transfers")
}
// A reader that goes away (`Demo --progress-json - | head`) is a write error the run reports, never a silent death
// by SIGPIPE (see stop(_:_:reason:)).
signal(SIGPIPE, SIG_IGN)
if options.dryRun, options.saveSession != nil || options.saveCookies != nil {
    complain("Demo: note: a dry run finishes nothing and writes no --save-session or --save-cookies file")
}

/// Names once on standard error an option of the list the Demo does not know (a file aria2 saved holds `gid=`).
func noteIgnoredOption(_ name: String, line: Int) {
    complain("Demo: note: --input line \(line): option '\(name)' is not one the Demo knows: ignored (every line's)")
}

// The --input list is opened once and read as a stream while the queue runs (as aria2's --deferred-input
// does): a regular file's lines are counted first on the same descriptor (newlines only, a fraction of a second
// for millions); a pipe, a FIFO or `<(command)` is read once, as it comes, its length unknown. Each line is
// checked when it is read: a malformed or overlong line is bad usage, and the run stops there (exit 2).
var listReader: LineReader?
var listCount: Int?
if let input = options.input {
    do {
        let reader = try LineReader(path: input)
        listCount = try reader.countLines()
        listReader = reader
    } catch {
        complain("Demo: error: cannot read \(input == "-" ? "standard input" : input): \(error.localizedDescription)")
        exit(2)
    }
    // A regular list is read through once before anything is sent: a malformed one is refused (exit 2) before its
    // first request, as a list of any length can be (a pipe is read once, and stops at its first bad line).
    if listCount != nil {
        do {
            try ListSource.check(path: input, output: options.output) { name, line in
                noteIgnoredOption(name, line: line)
            }
        } catch let problem as InputList.Problem {
            complain("Demo: error: \(input), \(problem)")
            exit(2)
        } catch {
            complain("Demo: error: cannot read \(input): \(error.localizedDescription)")
            exit(2)
        }
    }
}

// Offline by default: serve the built-in set from a local server.
var server: LoopbackServer?
var targets: [(URL, String)] = []
if options.urls.isEmpty && options.input == nil && options.metalink == nil {
    do {
        // One port from run to run where it is free: a rerun asks the same URLs, and finds its files (each records its
        // URL) unchanged.
        let local = try LoopbackServer(preferredPort: 47_613)
        server = local
        targets = DemoSet.items(flaky: options.flaky).map { (local.url($0.path), $0.label) }
    } catch {
        complain("Demo: error: could not start the local demo server: \(error)")
        exit(1)
    }
} else {
    targets = options.urls.map {
        ($0, $0.lastPathComponent.isEmpty ? ($0.host ?? $0.absoluteString) : $0.lastPathComponent)
    }
}

// --header fields, and a list's per-file `header=` fields, stay behind on a redirect that leaves the origin, as
// credentials do (they often are): only the fields any request may carry go on. The netrc's credentials are looked up
// for the host each request goes to, as curl does: a redirect into a host the file names gets that host's.
let redirects: RedirectPolicy = {
    var policy = RedirectPolicy(
        crossOriginStrippedHeaders: RedirectPolicy.defaultStrippedHeaders.union(
            options.headers.names.filter { $0.lowercased() != "user-agent" }))
    policy.crossOriginKeptHeaders = [
        "User-Agent", "Accept", "Accept-Encoding", "Accept-Language", "Range", "If-Range", "If-None-Match",
        "If-Modified-Since", "Cache-Control", "Pragma",
    ]
    policy.hostAuthorizations = options.headers.netrc?.authorizationsByHost ?? [:]
    return policy
}()
// --load-cookies and --save-cookies: one store, the transport's jar.
let cookieStore: CookieStore? = {
    guard options.loadCookies != nil || options.saveCookies != nil else { return nil }
    let store = CookieStore()
    if let path = options.loadCookies {
        do {
            let read = try store.load(contentsOf: URL(fileURLWithPath: path))
            if read.skipped > 0 {
                let lines = "\(read.skipped) line\(read.skipped == 1 ? "" : "s")"
                let first = read.firstSkippedLine.map {
                    read.skipped == 1 ? " (line \($0))" : " (the first: line \($0))"
                }
                complain("Demo: warning: \(path): \(lines) skipped\(first ?? "") (expired or not a cookie)")
            }
        } catch {
            complain("Demo: error: cannot read --load-cookies \(path): \(error)")
            exit(2)
        }
    }
    return store
}()
/// Writes the cookies to --save-cookies, if given (at the end, and when interrupted).
func saveCookies() {
    guard !options.dryRun, let path = options.saveCookies, let cookieStore else { return }
    do { try cookieStore.write(to: URL(fileURLWithPath: path)) } catch {
        complain("Demo: error: cannot write --save-cookies \(path): \(error.localizedDescription)")
    }
}

/// The User-Agent of every request without `-A`: the Demo's name and version, then the library's (as wget2 and
/// aria2c name themselves). `-A` is a header of every request, which replaces it.
let demoUserAgent = "NetworkQueue-Demo/\(NetworkQueue.version) \(NetworkQueue.defaultUserAgent)"

/// URLSession over Linux's Foundation takes proxies from the environment alone: --proxy is handed on there.
func sessionTransport() -> URLSessionTransport {
    if let proxy = options.proxy {
        let value = proxy.text
        setenv("http_proxy", value, 1)
        setenv("https_proxy", value, 1)
        setenv("no_proxy", "", 1)
        setenv("NO_PROXY", "", 1)
    }
    let configuration = URLSessionConfiguration.default
    // `-A ''`: an empty field (Foundation on Linux sends one where libcurl alone sends none).
    configuration.httpAdditionalHeaders = ["User-Agent": options.sendsUserAgent ? demoUserAgent : ""]
    return URLSessionTransport(
        configuration: configuration, cookies: cookieStore.map { .store($0) } ?? .ephemeral, redirects: redirects)
}
let transport: any Transport
#if os(Linux)
    if options.transport == .urlsession || (options.transport == .automatic && !CurlTransport.isAvailable) {
        if !options.pinned.isEmpty {
            complain("Demo: error: --resolve needs the curl transport, and libcurl cannot be loaded here")
            exit(2)
        }
        if let flag = options.tlsFlag {
            complain("Demo: error: \(flag) needs the curl transport, and libcurl cannot be loaded here")
            exit(2)
        }
        transport = sessionTransport()
    } else {
        var curlOptions = CurlTransport.Options()
        curlOptions.userAgent = options.sendsUserAgent ? demoUserAgent : nil
        curlOptions.redirects = redirects
        if let cookieStore { curlOptions.cookies = .store(cookieStore) }
        if let proxy = options.proxy { curlOptions.proxy = .through(proxy) }
        curlOptions.pinnedAddresses = options.pinned
        if let trusted = trustedCA {
            curlOptions.additionalTrustedCertificates = URL(fileURLWithPath: trusted.path)
        }
        if let certificate = options.clientCert {
            curlOptions.clientCertificate = ClientCertificate(
                certificate: URL(fileURLWithPath: certificate), key: options.clientKey.map(URL.init(fileURLWithPath:)),
                keyPassword: options.keyPassword)
        }
        curlOptions.verifiesServerCertificates = !options.insecure
        do {
            transport = try CurlTransport(options: curlOptions)
        } catch {
            // A CA or client file that cannot be used is the command line's fault: bad usage, nothing sent.
            switch error {
            case .unreadableCertificates(let path, let reason):
                complain("Demo: error: cannot use \(path) (\(trustedCA?.source ?? "--cacert")): \(reason)")
                exit(2)
            case .unreadableClientCertificate:
                complain("Demo: error: \(error)")
                exit(2)
            default:
                complain("Demo: error: \(error)")
                exit(1)
            }
        }
    }
#else
    if options.transport == .curl {
        complain("Demo: error: the curl transport is available on Linux only")
        exit(2)
    }
    if options.proxy != nil {
        complain("Demo: error: --proxy needs the curl transport (Linux); set the system's proxy here")
        exit(2)
    }
    if !options.pinned.isEmpty {
        complain("Demo: error: --resolve needs the curl transport (Linux)")
        exit(2)
    }
    if let flag = options.tlsFlag {
        complain("Demo: error: \(flag) needs the curl transport (Linux); trust a CA in the system's settings here")
        exit(2)
    }
    transport = sessionTransport()
#endif
// --output: its guardian makes it (a dry run makes nothing) and checks every place below it.
var outputFolder: OutputFolder?
if let output = options.output {
    do {
        outputFolder = try OutputFolder(path: output.path, creating: !options.dryRun)
    } catch {
        complain("Demo: error: cannot use \(output.path) for --output: \(error)")
        exit(1)
    }
}
// --save-session: made before anything is read (a copy of a regular list); a dry run finishes nothing and makes none.
var session: SessionFile?
if let path = options.saveSession, let input = options.input, !options.dryRun {
    do throws(SessionFile.Problem) { session = try SessionFile(path: path, list: input) } catch {
        complain("Demo: error: cannot write --save-session \(path): \(error)")
        exit(1)
    }
}
var report: Report?
if let path = options.report {
    do {
        report = Report(fd: try ReportFile.openChecked(path: path, input: options.input, output: options.output))
    } catch {
        complain("Demo: error: cannot write --report \(path): \(error)")
        exit(error.isUsage ? 2 : 1)
    }
}
// --progress-json: a file checked as --report's is, or standard output (the rest of the output then goes to
// standard error, so that a program reads nothing but JSON lines there).
var json: ProgressJSON?
if let path = options.progressJSON {
    if path == "-" {
        // Close-on-exec, as every descriptor of the run: an --on-finish command inherits none.
        let fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0)
        fflush(nil)
        dup2(STDERR_FILENO, STDOUT_FILENO)
        // Its reader gone, the run stops as curl's does on a write error (exit 23), partial files kept.
        json = ProgressJSON(fd: fd, tagsAreLines: options.input != nil) {
            DispatchQueue.main.async {
                stop(
                    23, "Stopped",
                    reason: "Demo: error: --progress-json: standard output's reader went away (broken pipe)")
            }
        }
    } else {
        do {
            let fd = try ReportFile.openChecked(path: path, input: options.input, output: options.output)
            json = ProgressJSON(fd: fd, tagsAreLines: options.input != nil)
        } catch {
            complain("Demo: error: cannot write --progress-json \(path): \(error)")
            exit(error.isUsage ? 2 : 1)
        }
    }
}
let queue = NetworkQueue(transport: transport)
queue.maxConcurrentRequestCount = options.concurrency
queue.order = options.order
queue.showsAccurateProgress = options.accurateProgress && !options.dryRun
if options.headsEveryFile { queue.preflightPolicy = .everyRequest }
// A dry run checks every line: one that would fail stops no other.
queue.cancelsAllOnFailure = !options.keepGoing && !options.dryRun
queue.retryPolicy = RetryPolicy(maximumAttempts: options.retries + 1)
queue.maxConcurrentRequestsPerHost = options.perHost
if options.adaptive {
    queue.adaptiveConcurrency = AdaptiveConcurrency(
        maximum: options.perHost > 0 ? min(options.perHost, options.concurrency) : options.concurrency)
}
queue.maximumBytesPerSecond = options.limitRate
queue.timeLimits = options.timeLimits
if !options.deadHosts { queue.deadHosts = .off }
queue.hostPacing = options.pacing
// Set before the requests are added, so that the log begins with each one's `added`.
if options.verbose {
    queue.collectsMetrics = true
    queue.logHandler = { record in
        print("log       \(record.level) \(record.event.rawValue): \(record.message)")
        fflush(nil)
    }
}

if options.toStandardOutput, let url = options.urls.first {
    exit(await runToStandardOutput(queue, url: url, options: options))
}

let existingFile: NetworkRequest.ExistingFile = options.replace ? .replace : .revalidate
let validation = NetworkRequest.Validation(maximumResponseSize: options.maxFileSize.map { .bytes($0) } ?? .automatic)
// A short batch (the demo set, URLs given as arguments) is added at once, a row each; a list streams. The program's
// own files that lie in the output folder (the list, say) are names no line's file takes.
var namer = FileNamer()
if let output = options.output {
    for taken in ProgramFiles.placesInside(output, of: options.programFiles) { namer.reserve(taken) }
}
var rows: [(NetworkRequest, String)] = []
var keptArguments = 0
for (index, (url, label)) in targets.enumerated() {
    var destination = NetworkRequest.Destination.memory
    // The file's name under --output (a dry run shows it).
    var name: String?
    if let outputFolder {
        let place = namer.place(
            for: FileNames.base(for: url, name: nil, folders: nil, treeCutDirs: options.tree ? options.cutDirs : nil))
        name = place.relativePath
        // Safe components, made so by the namer; the guardian makes its folders as the request is added.
        guard let checked = try? place.place() else { continue }
        let file = outputFolder.url(for: checked)
        if options.noClobber, FileNames.holdsFile(at: file, of: url) {
            keptArguments += 1
            continue
        }
        destination = .file(file)
    }
    let fileOptions = NetworkRequest.FileOptions(
        existingFile: existingFile, maximumConnections: options.split,
        namesFileFromResponse: options.contentDisposition, outputFolder: outputFolder)
    let request =
        options.dryRun
        ? DryRun.probe(url, headers: options.headers, name: name, attempts: options.retries + 1, tag: index + 1)
        : options.headers.sendsNothing(to: url)
            ? NetworkRequest(url: url, destination: destination, validation: validation, fileOptions: fileOptions)
            : NetworkRequest(
                options.headers.request(for: url), destination: destination, validation: validation,
                fileOptions: fileOptions)
    do {
        try queue.add(request)
    } catch {
        complain("Demo: error: \(error.localizedDescription)")
        exit(1)
    }
    rows.append((request, label))
}
let tally = ListSource.Tally()
// A regular list's unknown options were named when it was checked; a pipe's are named as they are read.
let listIgnoredOption: @Sendable (String, Int) -> Void
if listCount == nil {
    listIgnoredOption = { name, line in noteIgnoredOption(name, line: line) }
} else {
    listIgnoredOption = { _, _ in }
}
// --metalink: the document's files, each under its own name in --output, its mirrors and strongest hash with it. The
// whole document is checked before any of it is added: a refused one fetches nothing.
if let path = options.metalink, let outputFolder {
    let requests: [NetworkRequest]
    let document: Metalink
    do {
        if let url = DemoOptions.webURL(path) {
            document = try await MetalinkInput.document(
                from: options.headers.request(for: url), transport: transport, retries: options.retries)
        } else {
            document = try MetalinkInput.document(at: path)
        }
        let fileOptions = NetworkRequest.FileOptions(
            existingFile: existingFile, maximumConnections: options.split, outputFolder: outputFolder)
        requests = try document.requests(in: outputFolder, fileOptions: fileOptions, validation: validation) {
            options.headers.request(for: $0)
        }
    } catch {
        complain("Demo: error: --metalink \(path): \(error)")
        exit(2)
    }
    for file in document.files where namer.place(for: NamedPlace(folders: [], name: file.name)).name != file.name {
        complain("Demo: error: --metalink \(path): file '\(file.name)' would take the name of another file of this run")
        exit(2)
    }
    for (index, (file, request)) in zip(document.files, requests).enumerated() {
        if file.hasOnlyWeakHashes {
            let types = file.hashes.map(\.type.rawValue).joined(separator: ", ")
            complain(
                "Demo: warning: --metalink: '\(file.name)' has only weak hashes (\(types)): its bytes are not checked")
        }
        let added =
            options.dryRun
            ? DryRun.probe(
                file.locations[0].url, headers: options.headers, name: file.name, attempts: options.retries + 1,
                tag: targets.count + index + 1)
            : request
        do {
            try queue.add(added)
        } catch {
            complain("Demo: error: \(error.localizedDescription)")
            exit(1)
        }
        rows.append((added, file.name))
    }
}
if let input = options.input, let listReader {
    let source = ListSource(
        path: input, reader: listReader, output: outputFolder, shard: options.shard, noClobber: options.noClobber,
        existingFile: existingFile, validation: validation, headers: options.headers, split: options.split,
        dryRunAttempts: options.dryRun ? options.retries + 1 : nil, treeCutDirs: options.tree ? options.cutDirs : nil,
        namesFromResponse: options.contentDisposition, session: session, namer: namer,
        tally: tally, ignoredOption: listIgnoredOption,
        metalink: { [transport, retries = options.retries] request throws(MetalinkInput.Problem) in
            try await MetalinkInput.document(from: request, transport: transport, retries: retries)
        })
    // The lines of the file were counted: the progress counts the whole list from the start. (A shard's share
    // is about 1/N of them, and comments and entries kept by --no-clobber give no request: the count only
    // shapes the estimate.)
    queue.add(contentsOf: source, expectedCount: (listCount ?? 0) / options.shard.count)
}

/// The run's first line: what it will do. Made in a function, so that its strings are gone before the process
/// exits (LeakSanitizer reads a string kept in a global array as leaked: its pointer carries flag bits).
@MainActor func modeLine() -> String {
    let count =
        options.input == nil
        ? "\(rows.count) requests"
        : listCount.map { "a list of \($0) lines" }
            ?? "a list read as it comes (\(options.input == "-" ? "standard input" : "a pipe"))"
    // Header values are never shown (they are often tokens), nor a proxy's credentials.
    var sendingWords: [String] = []
    if !options.headers.isEmpty { sendingWords.append("sending " + options.headers.names.joined(separator: ", ")) }
    if let netrc = options.headers.netrc {
        sendingWords.append(
            "credentials for \(netrc.machineCount) server\(netrc.machineCount == 1 ? "" : "s") from netrc")
    }
    if let proxy = options.proxy { sendingWords.append("through \(proxy)") }
    if let trusted = trustedCA {
        sendingWords.append("trusting \(trusted.path) (\(trusted.source))")
    }
    if options.clientCert != nil { sendingWords.append("a client certificate") }
    if options.insecure { sendingWords.append("certificates NOT verified") }
    if let path = options.report { sendingWords.append("report to \(path)") }
    let mode =
        [
            count + (options.shard == .whole ? "" : ", shard \(options.shard)"),
            options.adaptive
                ? "concurrency found per server (at most \(options.concurrency) at a time)"
                : options.concurrency == 0 ? "unlimited concurrency" : "\(options.concurrency) at a time",
            options.order == .fifo ? "FIFO" : "LIFO",
            options.dryRun
                ? "dry run (a HEAD each, nothing saved)"
                : options.headsEveryFile
                    ? "accurate progress (a HEAD before every GET)"
                    : options.accurateProgress ? "accurate progress (HEADs where they pay)" : "simple progress",
            options.retries == 1 ? "1 retry" : "\(options.retries) retries",
        ] + (options.output.map { [(options.dryRun ? "names in " : "saving to ") + $0.path] } ?? [])
        + (options.perHost > 0 ? ["\(options.perHost) per host"] : [])
        + (options.pacing.isPaced
            ? [
                "a start per server every \(Format.seconds(options.pacing.interval)) s"
                    + (options.pacing.isRandomized ? " on average (random waits)" : "")
            ] : [])
        + (options.limitRate.map { ["capped at \(Format.bytes(Int64($0)))/s"] } ?? [])
        + (options.noClobber ? ["no clobber"] : [])
        + (options.maxTime.map { ["at most \(Format.seconds($0)) s a request"] } ?? [])
        + (options.connectTimeout.map { ["connects within \(Format.seconds($0)) s"] } ?? [])
        + (options.timeLimits.lowestSpeed.map { ["at least \($0)"] } ?? [])
        + (options.maxFileSize.map { ["at most \(Format.bytes($0)) a file"] } ?? [])
        + sendingWords
    return "NetworkQueue demo: " + mode.joined(separator: ", ") + (server == nil ? "" : ", from a local server")
}
print(modeLine())

// --verbose prints line by line: the log's lines would break a redrawn screen.
var display = Display(
    rows: options.input == nil ? rows : nil, isTerminal: isatty(STDOUT_FILENO) == 1 && !options.verbose,
    retries: options.retries,
    showsMetrics: options.verbose)
/// Stops the run now with `code`, as Ctrl-C does: nothing is cancelled, so partial files (and their validators) stay
/// for the next run. `title` heads the line that says how far it got; `reason`, when given, goes to standard error.
@MainActor func stop(_ code: Int32, _ title: String, reason: String? = nil) {
    if let reason { complain(reason) }
    let progress = queue.progress
    print(
        "\(title): \(progress.finishedRequestCount)/\(progress.totalRequestCount) done, \(Format.bytes(progress.bytesReceived)) received"
            + (options.output == nil ? "" : "; partial files kept, run again to continue them"))
    fflush(nil)
    saveCookies()
    exit(code)
}
signal(SIGINT, SIG_IGN)
let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: .main)
interrupt.setEventHandler { stop(130, "\nInterrupted") }
interrupt.resume()
if rows.isEmpty, options.input == nil {
    // Every file was there already (--no-clobber): nothing to run.
    json?.finish(queue.progress)
    _ = display.finish(kept: keptArguments)
    saveCookies()
    server?.stop()
    exit(0)
}
let dryRun = options.dryRun ? DryRunPrinter(namesFromResponse: options.contentDisposition) : nil
/// The `--on-finish` runner (nil without it, or in a dry run): each command that does not exit 0 is said on standard
/// error; each goes to the report and the progress lines.
@MainActor func finishCommands() -> FinishCommands? {
    guard let command = options.onFinish, !options.dryRun else { return nil }
    do {
        let program = try FinishCommands.program(of: command)
        let (report, json) = (report, json)
        return try FinishCommands(command: command, limit: options.onFinishJobs) { outcome in
            report?.command(program, outcome)
            json?.command(program, outcome)
            guard !outcome.succeeded else { return }
            let how =
                outcome.startError.map { "could not start: \($0)" }
                ?? outcome.signal.map { "was ended by signal \($0)" } ?? "exited with \(outcome.status ?? -1)"
            complain("Demo: warning: --on-finish \(how) for \(outcome.path) (the file stays saved)")
        }
    } catch {
        complain("Demo: error: \(error)")
        exit(2)
    }
}
/// `--on-finish`: a dry run saves nothing, so runs none.
let commands: FinishCommands? = finishCommands()
let listener = Listener(
    display: display, listName: options.input.map { $0 == "-" ? "standard input" : $0 } ?? "the list",
    report: report, tagsAreLines: options.input != nil, dryRun: dryRun, json: json, session: session,
    commands: commands)
queue.delegate = listener
if display.isTerminal, isatty(STDIN_FILENO) == 1 { Keys.listen(queue) }
json?.start(queue)
queue.go()
let sourceProblem: InputList.Problem?
(display, sourceProblem) = await listener.finished()
// Every command ends before the run does (and before the final progress line).
commands?.waitForAll()
json?.finish(queue.progress)
let succeeded =
    dryRun?.finish(kept: keptArguments + tally.kept)
    ?? display.finish(kept: keptArguments + tally.kept, listStopped: sourceProblem != nil)
if let commands {
    let tally = commands.tally
    print(
        "on-finish: \(tally.ran) command\(tally.ran == 1 ? "" : "s") ran"
            + (tally.failed == 0 ? ", all exited 0" : ", \(tally.failed) failed (see above)"))
}
saveCookies()
server?.stop()
// A malformed line: bad usage (reported above when it was reached).
if sourceProblem != nil { exit(2) }
exit(succeeded ? 0 : 1)
