import DemoKit
import Foundation
import NetworkQueue

/// The Demo's command line, as a value: what each option asked for, and the settings it makes. The usage text is in
/// `DemoOptions+Usage.swift`, the parser in `DemoOptions+Parsing.swift`.
struct DemoOptions {
    var urls: [URL] = []
    /// The `--input` list's path (`-`: standard input).
    var input: String?
    /// The `--metalink` document's path or http(s) URL: its files are fetched into `--output`.
    var metalink: String?
    var concurrency = 4
    /// `--concurrency auto[:N]`: each server's level found by the queue (``AdaptiveConcurrency``), `concurrency` (64 by
    /// default) the most at once in all.
    var adaptive = false
    var order = SchedulingOrder.fifo
    var accurateProgress = true
    /// `--head-all`: a HEAD before every GET, however long the list (``PreflightPolicy/everyRequest``): every size is
    /// asked, none estimated.
    var headsEveryFile = false
    var keepGoing = false
    /// Judge servers down after failed connects (`--no-dead-hosts` turns it off).
    var deadHosts = true
    var showHelp = false
    var transport = TransportChoice.automatic
    /// Retries after a failed attempt (so `retries + 1` attempts in all).
    var retries = 2
    /// Adds a request that fails twice (503 with Retry-After) before it succeeds, to the offline set.
    var flaky = false
    /// Where each URL is saved (nil: bodies are received into memory and dropped).
    var output: URL?
    /// Transfers at once per server (0: no per-host limit).
    var perHost = 0
    /// The queue-wide receive cap in bytes per second.
    var limitRate: Int?
    /// With `--output`: download files that exist already again instead of asking whether they changed.
    var replace = false
    /// Print the queue's log and a `metrics` line after each request (one line per event, no redraw).
    var verbose = false
    /// With `--output`: keep a file that exists already, sending no request for it.
    var noClobber = false
    /// The share of the `--input` list this run takes.
    var shard = Shard.whole
    /// The longest a request may take, retries included (`--max-time`, curl's name): its deadline.
    var maxTime: Double?
    /// The longest an attempt waits for its connection (`--connect-timeout`, curl's name): name lookup, connect,
    /// TLS handshake; nil: the library's default (``TimeLimits/defaultConnect``).
    var connectTimeout: Double?
    /// `--resolve`: hosts pinned to addresses (curl transport).
    var pinned: [PinnedAddress] = []
    /// The lowest speed in bytes per second (`--speed-limit`, curl's `-Y`), over `speedTime` seconds.
    var speedLimit: Int64?
    /// The window of the lowest speed in seconds (`--speed-time`, curl's `-y`).
    var speedTime: Double?
    /// The largest body accepted, in bytes (`--max-filesize`): larger fails and nothing of it is kept.
    var maxFileSize: Int64?
    /// False after `-A ''`: no request sends a `User-Agent` (as curl does), where an empty one would be a field.
    var sendsUserAgent = true
    /// The fields every request sends (`--header`, `--user-agent`).
    var headers = SentHeaders()
    /// The proxy every request goes through (`--proxy`); nil: the environment's.
    var proxy: Proxy?
    /// Where a JSON line per ended request is written (`--report`).
    var report: String?
    /// The connections each file may be fetched over (`--split`).
    var split = 1
    /// True when `--concurrency` was given (else `--split` raises it to the split).
    var concurrencyGiven = false
    /// The seconds between two starts to one server that `--rate` asks for.
    var rateInterval: Double?
    /// The seconds between two starts to one server that `--wait` asks for.
    var wait: Double?
    /// `--random-wait`: each wait 0.5 to 1.5 times as long.
    var randomWait = false
    /// `--dry-run`: check each URL instead of downloading it.
    var dryRun = false
    /// `--load-cookies FILE`: the cookie file the run starts from; `--save-cookies FILE`: where the run's cookies
    /// are written at its end.
    var loadCookies: String?
    var saveCookies: String?
    /// `--save-session FILE`: the list's unfinished lines, kept as the run goes.
    var saveSession: String?
    /// The netrc file read (`--netrc`, `--netrc-file`): one of the program's own files.
    var netrcPath: String?
    /// `--content-disposition`: a file takes the name its response gives it.
    var contentDisposition = false
    /// `--tree`: each file under its URL's host and folders; `--cut-dirs` drops that many leading folders.
    var tree = false
    var cutDirs = 0
    var cutDirsGiven = false
    /// Where the JSON lines of `--progress-json` go (`-`: standard output, the rest of the output then going to
    /// standard error).
    var progressJSON: String?

    /// `--cacert FILE`: CA certificates (PEM) trusted beside the system's; else `CURL_CA_BUNDLE` or `SSL_CERT_FILE`
    /// from the environment, as curl reads them (see ``trustedCertificates(environment:)``).
    var caCert: String?
    /// `--cert FILE` and `--key FILE`: the client certificate (PEM) and its key (nil: in the certificate's file).
    var clientCert: String?
    var clientKey: String?
    /// `--pass PHRASE`: the key's pass phrase.
    var keyPassword: String?
    /// `-k`, `--insecure`: servers' certificates are not verified (a warning on every run that asks).
    var insecure = false
    /// `-o -`: the one URL's file to standard output, in order (``OrderedDownload``), `window` bytes fetched ahead at most.
    var toStandardOutput = false
    var window = 64 << 20
    /// `--on-finish CMD`: run for each saved file, with its path and URL; at most `onFinishJobs` at once.
    var onFinish: String?
    var onFinishJobs = 4

    /// The pacing of every server these options ask for.
    var pacing: HostPacing { Politeness.pacing(rateInterval: rateInterval, wait: wait, randomized: randomWait) }

    /// The queue's time limits these options ask for: curl's pairing (`--speed-limit` alone averages over 30 s,
    /// `--speed-time` alone asks for 1 byte per second).
    var timeLimits: TimeLimits {
        var limits = TimeLimits()
        if let maxTime { limits.deadline = maxTime }
        if let connectTimeout { limits.connect = connectTimeout }
        if speedLimit != nil || speedTime != nil {
            limits.lowestSpeed = LowestSpeed(bytesPerSecond: speedLimit ?? 1, over: speedTime ?? 30)
        }
        return limits
    }

    /// Which transport moves the bytes.
    enum TransportChoice: String {
        /// The queue's default: libcurl on Linux (URLSession when libcurl cannot be loaded), URLSession elsewhere.
        case automatic
        /// libcurl's multi interface (Linux only).
        case curl
        /// Foundation's URLSession.
        case urlsession
    }

    enum Problem: Error, CustomStringConvertible {
        case unknownFlag(String)
        case missingValue(String)
        case badConcurrency(String)
        case badURL(String)
        case badTransport(String)
        case badRetries(String)
        case badPerHost(String)
        case badRate(String)
        case badShard(String)
        case badSeconds(flag: String, value: String)
        case badBytes(flag: String, value: String)
        case needsInput(String)
        case needsOutput(String)
        case badHeader(SentHeaders.Problem)
        case badProxy(Proxy.Problem)
        case badSplit(String)
        case badRequestRate(String)
        case badWait(String)
        case randomWaitAlone
        case headAllWithoutAccurate
        case sameFileTwice(String)
        case badCutDirs(String)
        case badNetrc(path: String, reason: String)
        case needsTree(String)
        case badResolve(String)
        case resolveNeedsCurl
        case tlsNeedsCurl(String)
        case keyWithoutCert(String)
        case badJobs(String)
        case badOutputFile(String)
        case badWindow(String)
        case standardOutputNeedsOneURL
        case standardOutputWith(String)

        var description: String {
            switch self {
            case .unknownFlag(let flag): "unknown option '\(flag)'"
            case .missingValue(let flag): "option '\(flag)' needs a value"
            case .badConcurrency(let value):
                "--concurrency needs a whole number of 0 or more (0 = unlimited), auto or auto:N (N from 1 to 4096), "
                    + "not '\(value)'"
            case .badURL(let text): "'\(text)' is not an http(s) URL with a host"
            case .badTransport(let value): "--transport needs curl or urlsession, not '\(value)'"
            case .badRetries(let value): "--retries needs a whole number from 0 to 100, not '\(value)'"
            case .badPerHost(let value): "--per-host needs a whole number of 0 or more (0 = no limit), not '\(value)'"
            case .badRate(let value): "--limit-rate needs bytes per second above 0, like 500K or 2M, not '\(value)'"
            case .badShard(let value): "--shard needs K/N with 0 <= K < N, like 0/4, not '\(value)'"
            case .badSeconds(let flag, let value):
                "\(flag) needs a number of seconds above 0, like 30 or 0.5, not '\(value)'"
            case .badBytes(let flag, let value): "\(flag) needs bytes above 0, like 500, 64K or 2G, not '\(value)'"
            case .needsInput(let flag): "\(flag) works with --input FILE"
            case .needsOutput(let flag): "\(flag) works with --output DIR"
            case .badHeader(let problem): problem.description
            case .badProxy(let problem): "--proxy: \(problem)"
            case .badSplit(let value): "--split needs a whole number from 1 to 16, not '\(value)'"
            case .badRequestRate(let value):
                "--rate needs N/U: N requests above 0 per s, m, h or d (N alone: per hour), at least one a year, like 2/s "
                    + "or 30/m, not '\(value)'"
            case .badWait(let value):
                "--wait needs seconds of 0 or more (or Nm, Nh, Nd), under a year, like 1 or 0.5, not '\(value)'"
            case .randomWaitAlone: "--random-wait varies the wait of --wait S or --rate N/U: give one of them"
            case .headAllWithoutAccurate:
                "--head-all sends a HEAD before every GET, and --no-accurate sends none: give one of them"
            case .sameFileTwice(let path): "--report and --progress-json both name \(path): give each its own file"
            case .badCutDirs(let value): "--cut-dirs needs a whole number of 0 or more, not '\(value)'"
            case .badNetrc(let path, let reason): "cannot use \(path) for --netrc: \(reason)"
            case .needsTree(let flag): "\(flag) works with --tree"
            case .badResolve(let value):
                "--resolve needs HOST:PORT:ADDRESS[,ADDRESS...] (an IP address each, IPv6 in brackets), not '\(value)'"
            case .resolveNeedsCurl: "--resolve needs the curl transport (URLSession cannot pin a host)"
            case .tlsNeedsCurl(let flag):
                "\(flag) needs the curl transport: URLSession on Linux trusts the system's certificates only and shows "
                    + "no client certificate (on Apple platforms, trust a CA in the system's settings)"
            case .keyWithoutCert(let flag): "\(flag) goes with --cert FILE"
            case .badJobs(let value): "--on-finish-jobs needs a whole number from 1 to 256, not '\(value)'"
            case .badOutputFile(let value):
                "-o takes - (standard output), not '\(value)': save files with --output DIR"
            case .badWindow(let value): "--window needs bytes from 1M to 16G, like 64M, not '\(value)'"
            case .standardOutputNeedsOneURL: "-o - writes one file to standard output: give exactly one URL"
            case .standardOutputWith(let flag):
                "-o - writes one file to standard output, and \(flag) does not apply to it"
            }
        }
    }

    /// The program's own files these options name (see ``ProgramFiles``): a dry run writes neither the session nor
    /// the cookies.
    var programFiles: [ProgramFiles.Role] {
        [
            input.map { ProgramFiles.Role("--input", $0, writes: false) },
            metalink.flatMap { Self.webURL($0) == nil ? ProgramFiles.Role("--metalink", $0, writes: false) : nil },
            report.map { ProgramFiles.Role("--report", $0, writes: true) },
            saveSession.map { ProgramFiles.Role("--save-session", $0, writes: !dryRun) },
            progressJSON.map { ProgramFiles.Role("--progress-json", $0, writes: true) },
            loadCookies.map { ProgramFiles.Role("--load-cookies", $0, writes: false) },
            saveCookies.map { ProgramFiles.Role("--save-cookies", $0, writes: !dryRun) },
            netrcPath.map { ProgramFiles.Role("--netrc-file", $0, writes: false) },
            caCert.map { ProgramFiles.Role("--cacert", $0, writes: false) },
            clientCert.map { ProgramFiles.Role("--cert", $0, writes: false) },
            clientKey.map { ProgramFiles.Role("--key", $0, writes: false) },
        ].compactMap { $0 }
    }
}
