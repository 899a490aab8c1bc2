import DemoKit
import Foundation
import NetworkQueue

/// The command line read into ``DemoOptions``: each option checked as it is read, a problem named.
extension DemoOptions {
    /// Reads the netrc file `--netrc` or `--netrc-file` named, if any, into the headers sent: after the program's
    /// files were checked together (``ProgramFiles``), so that a netrc file that is another of them is refused as such.
    mutating func readNetrc() throws(Problem) {
        guard let path = netrcPath else { return }
        do {
            headers.netrc = try Netrc(path: path)
        } catch let problem as Netrc.Problem {
            throw .badNetrc(path: path, reason: problem.description)
        } catch {
            throw .badNetrc(path: path, reason: "\(error)")
        }
    }

    static func parse(_ arguments: some Sequence<String>) throws(Problem) -> DemoOptions {
        var options = DemoOptions()
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "-h", "--help": options.showHelp = true
            case "--lifo": options.order = .lifo
            case "--no-accurate": options.accurateProgress = false
            case "--head-all": options.headsEveryFile = true
            case "--keep-going": options.keepGoing = true
            case "--no-dead-hosts": options.deadHosts = false
            case "--flaky": options.flaky = true
            case "--replace": options.replace = true
            case "--no-clobber": options.noClobber = true
            case "--shard":
                guard let value = iterator.next() else { throw .missingValue(argument) }
                guard let shard = Shard(value) else { throw .badShard(value) }
                options.shard = shard
            case "--verbose", "-v": options.verbose = true
            case "--retries":
                guard let value = iterator.next() else { throw .missingValue(argument) }
                guard let count = Int(value), (0...100).contains(count) else { throw .badRetries(value) }
                options.retries = count
            case "--transport":
                guard let value = iterator.next() else { throw .missingValue(argument) }
                guard let choice = TransportChoice(rawValue: value.lowercased()), choice != .automatic else {
                    throw .badTransport(value)
                }
                options.transport = choice
            case "--input":
                guard let value = iterator.next(), !value.isEmpty else { throw .missingValue(argument) }
                options.input = value
                options.keepGoing = true
            case "--metalink":
                guard let value = iterator.next(), !value.isEmpty else { throw .missingValue(argument) }
                options.metalink = value
                options.keepGoing = true
            case "--output":
                guard let value = iterator.next(), !value.isEmpty else { throw .missingValue(argument) }
                options.output = URL(fileURLWithPath: value, isDirectory: true)
            case "--per-host":
                guard let value = iterator.next() else { throw .missingValue(argument) }
                guard let count = Int(value), count >= 0 else { throw .badPerHost(value) }
                options.perHost = count
            case "--limit-rate":
                guard let value = iterator.next() else { throw .missingValue(argument) }
                guard let rate = amount(value) else { throw .badRate(value) }
                options.limitRate = rate
            case "--max-time", "--speed-time", "--connect-timeout":
                guard let value = iterator.next() else { throw .missingValue(argument) }
                guard let seconds = decimal(value), seconds.isFinite, seconds > 0, seconds < 1e6 else {
                    throw .badSeconds(flag: argument, value: value)
                }
                switch argument {
                case "--max-time": options.maxTime = seconds
                case "--connect-timeout": options.connectTimeout = seconds
                default: options.speedTime = seconds
                }
            case "--speed-limit", "--max-filesize":
                guard let value = iterator.next() else { throw .missingValue(argument) }
                guard let bytes = amount(value) else { throw .badBytes(flag: argument, value: value) }
                if argument == "--speed-limit" {
                    options.speedLimit = Int64(bytes)
                } else {
                    options.maxFileSize = Int64(bytes)
                }
            case "--header", "-H", "--user-agent", "-A":
                guard let value = iterator.next() else { throw .missingValue(argument) }
                do throws(SentHeaders.Problem) {
                    if argument == "--header" || argument == "-H" {
                        try options.headers.add(line: value)
                    } else if value.trimmingCharacters(in: .whitespaces).isEmpty {
                        // curl's `-A ''`: no User-Agent at all, not an empty one.
                        options.sendsUserAgent = false
                        options.headers.remove("User-Agent")
                    } else {
                        options.sendsUserAgent = true
                        try options.headers.set("User-Agent", value)
                    }
                } catch { throw .badHeader(error) }
            case "--resolve":
                guard let value = iterator.next() else { throw .missingValue(argument) }
                guard let pin = PinnedAddress(value) else { throw .badResolve(value) }
                options.pinned.append(pin)
            case "--proxy", "-x":
                guard let value = iterator.next(), !value.isEmpty else { throw .missingValue(argument) }
                do throws(Proxy.Problem) { options.proxy = try Proxy(parsing: value) } catch { throw .badProxy(error) }
            case "--report":
                guard let value = iterator.next(), !value.isEmpty else { throw .missingValue(argument) }
                options.report = value
            case "--concurrency":
                guard let value = iterator.next() else { throw .missingValue(argument) }
                if value == "auto" || value.hasPrefix("auto:") {
                    let cap = value == "auto" ? 64 : Int(value.dropFirst(5))
                    guard let cap, (1...4096).contains(cap) else { throw .badConcurrency(value) }
                    options.adaptive = true
                    options.concurrency = cap
                } else {
                    guard let count = Int(value), count >= 0 else { throw .badConcurrency(value) }
                    options.concurrency = count
                }
                options.concurrencyGiven = true
            case "--rate":
                guard let value = iterator.next() else { throw .missingValue(argument) }
                guard let interval = Politeness.interval(ofRate: value) else { throw .badRequestRate(value) }
                options.rateInterval = interval
            case "--wait":
                guard let value = iterator.next() else { throw .missingValue(argument) }
                guard let seconds = Politeness.seconds(ofWait: value) else { throw .badWait(value) }
                options.wait = seconds
            case "--random-wait": options.randomWait = true
            case "--dry-run": options.dryRun = true
            case "--tree": options.tree = true
            case "--content-disposition": options.contentDisposition = true
            case "--save-session":
                guard let value = iterator.next(), !value.isEmpty else { throw .missingValue(argument) }
                options.saveSession = value
            case "--load-cookies", "--save-cookies":
                guard let value = iterator.next(), !value.isEmpty else { throw .missingValue(argument) }
                if argument == "--load-cookies" { options.loadCookies = value } else { options.saveCookies = value }
            case "--netrc", "--netrc-file":
                var path = ProcessInfo.processInfo.environment["HOME"].map { $0 + "/.netrc" } ?? ".netrc"
                if argument == "--netrc-file" {
                    guard let value = iterator.next(), !value.isEmpty else { throw .missingValue(argument) }
                    path = value
                }
                // Read once the program's files are known to be distinct (``readNetrc()``).
                options.netrcPath = path
            case "--cut-dirs":
                guard let value = iterator.next() else { throw .missingValue(argument) }
                guard let count = Int(value), count >= 0 else { throw .badCutDirs(value) }
                options.cutDirs = count
                options.cutDirsGiven = true
            case "--progress-json":
                guard let value = iterator.next(), !value.isEmpty else { throw .missingValue(argument) }
                options.progressJSON = value
            case "--cacert", "--cert", "--key", "--pass":
                guard let value = iterator.next(), !value.isEmpty else { throw .missingValue(argument) }
                switch argument {
                case "--cacert": options.caCert = value
                case "--cert": options.clientCert = value
                case "--key": options.clientKey = value
                default: options.keyPassword = value
                }
            case "-k", "--insecure": options.insecure = true
            case "-o", "--output-file":
                guard let value = iterator.next(), !value.isEmpty else { throw .missingValue(argument) }
                guard value == "-" else { throw .badOutputFile(value) }
                options.toStandardOutput = true
            case "--window":
                guard let value = iterator.next() else { throw .missingValue(argument) }
                guard let bytes = amount(value), bytes >= 1_000_000, bytes <= 1 << 34 else { throw .badWindow(value) }
                options.window = bytes
            case "--on-finish":
                guard let value = iterator.next(), !value.allSatisfy({ $0 == " " || $0 == "\t" }) else {
                    throw .missingValue(argument)
                }
                options.onFinish = value
            case "--on-finish-jobs":
                guard let value = iterator.next() else { throw .missingValue(argument) }
                guard let count = Int(value), (1...256).contains(count) else { throw .badJobs(value) }
                options.onFinishJobs = count
            case "--split", "-s":
                guard let value = iterator.next() else { throw .missingValue(argument) }
                guard let count = Int(value), (1...16).contains(count) else { throw .badSplit(value) }
                options.split = count
            case let flag where flag.hasPrefix("-"):
                throw .unknownFlag(flag)
            default:
                options.urls.append(try url(argument))
            }
        }
        if options.shard != .whole, options.input == nil { throw .needsInput("--shard") }
        if options.saveSession != nil, options.input == nil { throw .needsInput("--save-session") }
        if options.noClobber, options.output == nil { throw .needsOutput("--no-clobber") }
        if !options.pinned.isEmpty, options.transport == .urlsession { throw .resolveNeedsCurl }
        if options.clientCert == nil, options.clientKey != nil { throw .keyWithoutCert("--key") }
        if options.clientCert == nil, options.keyPassword != nil { throw .keyWithoutCert("--pass") }
        if options.transport == .urlsession, let flag = options.tlsFlag { throw .tlsNeedsCurl(flag) }
        if options.toStandardOutput {
            guard options.urls.count == 1, options.input == nil else { throw .standardOutputNeedsOneURL }
            for (given, flag) in [
                (options.output != nil, "--output"), (options.dryRun, "--dry-run"),
                (options.onFinish != nil, "--on-finish"),
                (options.report != nil, "--report"), (options.progressJSON != nil, "--progress-json"),
                (options.noClobber, "--no-clobber"), (options.tree, "--tree"),
                (options.contentDisposition, "--content-disposition"), (options.metalink != nil, "--metalink"),
            ] where given {
                throw .standardOutputWith(flag)
            }
        }
        if options.split > 1, options.output == nil, !options.toStandardOutput { throw .needsOutput("--split") }
        if options.randomWait, options.rateInterval == nil, (options.wait ?? 0) == 0 { throw .randomWaitAlone }
        if options.headsEveryFile, !options.accurateProgress { throw .headAllWithoutAccurate }
        if let path = options.report, path == options.progressJSON { throw .sameFileTwice(path) }
        if options.tree, options.output == nil { throw .needsOutput("--tree") }
        if options.contentDisposition, options.output == nil { throw .needsOutput("--content-disposition") }
        if options.cutDirsGiven, !options.tree { throw .needsTree("--cut-dirs") }
        if options.onFinish != nil, options.output == nil { throw .needsOutput("--on-finish") }
        if options.metalink != nil, options.output == nil { throw .needsOutput("--metalink") }
        if !options.concurrencyGiven { options.concurrency = max(options.concurrency, options.split) }
        return options
    }

    /// The first TLS option given that only the curl transport can honour, if any.
    var tlsFlag: String? {
        caCert != nil ? "--cacert" : clientCert != nil ? "--cert" : insecure ? "--insecure" : nil
    }

    /// A decimal number (`12`, `1.5`, `.5`, `2e3`): Swift's `Double` also reads hexadecimal (`0x10` is sixteen), `inf`
    /// and `nan`, which no user means here.
    static func decimal(_ text: some StringProtocol) -> Double? {
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && ($0.isNumber || ".eE+-".contains($0)) }) else {
            return nil
        }
        return Double(String(text))
    }

    /// `500K`, `2M`, `1G` or a plain number (K = 1,000): the bytes (or bytes per second) of `--limit-rate`,
    /// `--speed-limit` and `--max-filesize`; nil when malformed or not above 0.
    static func amount(_ text: String) -> Int? {
        let units: [Character: Double] = ["k": 1e3, "m": 1e6, "g": 1e9]
        var digits = Substring(text.lowercased())
        var scale = 1.0
        if let last = digits.last, let unit = units[last] {
            scale = unit
            digits = digits.dropLast()
        }
        guard let number = decimal(digits), number.isFinite, number > 0, number * scale < 1e15 else { return nil }
        let rate = Int(number * scale)
        return rate > 0 ? rate : nil
    }

    private static func url(_ text: String) throws(Problem) -> URL {
        guard let url = webURL(text) else { throw .badURL(text) }
        return url
    }

    /// `text` as an http(s) URL with a host, or nil.
    static func webURL(_ text: String) -> URL? { InputList.webURL(text) }
}
