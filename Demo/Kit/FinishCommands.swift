import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `--on-finish CMD`: a program run for each file the batch saved, with the file's path and its URL as its last two
/// arguments (or in place of the words `{file}` and `{url}` of CMD, when it has them), at most ``limit`` at once.
///
/// Never through a shell: the command line's words are the user's (split at spaces and tabs, nothing else read
/// into them: no quotes, `$`, globs or `;`), and the path and URL, which a server may have named, are each one
/// argument passed as they are. The program is found when the run starts (a name without `/` along `PATH`), so a
/// missing one is bad usage before anything is sent. Each runs with standard input from `/dev/null` (never the
/// list read from a pipe), the Demo's standard output and error, its environment, and no other descriptor of the
/// Demo (every one it opens is close-on-exec). What a command does or how it ends changes nothing already saved.
public final class FinishCommands: @unchecked Sendable {
    /// Why CMD cannot be run.
    public struct Problem: Error, CustomStringConvertible, Equatable, Sendable {
        public let description: String
    }

    /// How one command ended.
    public struct Outcome: Sendable, Equatable {
        /// The saved file's path and URL, as passed; the `--input` line, if any.
        public let path: String
        public let url: String
        public let line: Int?
        /// The exit status, when it exited.
        public let status: Int32?
        /// The signal that ended it, when one did.
        public let signal: Int32?
        /// Why it could not be started (`posix_spawn`'s error), when it was not.
        public let startError: String?

        /// True when it exited with status 0.
        public var succeeded: Bool { status == 0 }
    }

    /// The program's resolved path and the words after it.
    public let words: [String]
    /// The most commands running at once.
    public let limit: Int
    private let ended: @Sendable (Outcome) -> Void
    private let lock = NSCondition()
    private var waiting: [(path: String, url: String, line: Int?)] = []
    private var waitingStart = 0
    private var running = 0
    private var counts = (ran: 0, failed: 0)

    /// Runs `command` (the program resolved along `environment`'s `PATH` now) at most `limit` at once (1 or more),
    /// telling `ended` of each on the thread that waited for it.
    public init(
        command: String, limit: Int, environment: [String: String] = ProcessInfo.processInfo.environment,
        ended: @escaping @Sendable (Outcome) -> Void
    ) throws(Problem) {
        let program = try Self.program(of: command, environment: environment)
        self.words = [program] + command.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().map(String.init)
        self.limit = max(1, limit)
        self.ended = ended
    }

    /// The path of the program `command` runs (its first word, along `environment`'s `PATH` when it holds no `/`),
    /// or why there is none.
    public static func program(
        of command: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(Problem) -> String {
        guard let name = command.split(whereSeparator: { $0 == " " || $0 == "\t" }).first else {
            throw Problem(description: "--on-finish needs a command")
        }
        return try resolve(String(name), path: environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin")
    }

    /// The executable file `name` names: itself when it holds a `/`, else the first along `path`.
    static func resolve(_ name: String, path: String) throws(Problem) -> String {
        func isProgram(_ candidate: String) -> Bool {
            var info = stat()
            return stat(candidate, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && access(candidate, X_OK) == 0
        }
        if name.contains("/") {
            guard isProgram(name) else {
                throw Problem(description: "--on-finish: \(name) is not an executable file")
            }
            return name
        }
        for folder in path.split(separator: ":", omittingEmptySubsequences: false) {
            let candidate = (folder.isEmpty ? "." : String(folder)) + "/" + name
            if isProgram(candidate) { return candidate }
        }
        throw Problem(description: "--on-finish: no program \(name) along PATH")
    }

    /// Runs the command for the file saved at `path` from `url` (its `--input` line `line`): now, or when one of the
    /// running ones ends.
    public func run(path: String, url: String, line: Int?) {
        lock.lock()
        waiting.append((path, url, line))
        let starts = running < limit
        if starts { running += 1 }
        lock.unlock()
        if starts { startNext() }
    }

    /// How many commands ended, and how many of them did not exit with 0.
    public var tally: (ran: Int, failed: Int) { lock.withLock { counts } }

    /// Waits until every command asked for has ended.
    public func waitForAll() {
        lock.lock()
        while running > 0 { lock.wait() }
        lock.unlock()
    }

    /// Takes the next waiting file (a slot was taken for it) and runs its command on a thread of its own, which
    /// waits for it and then goes on with the next waiting file, or gives the slot back.
    private func startNext() {
        Thread { [self] in
            while let job = take() {
                let outcome = runOne(path: job.path, url: job.url, line: job.line)
                lock.withLock {
                    counts.ran += 1
                    if !outcome.succeeded { counts.failed += 1 }
                }
                ended(outcome)
            }
        }.start()
    }

    /// The next waiting file, or nil: then the slot is given back.
    private func take() -> (path: String, url: String, line: Int?)? {
        lock.lock()
        defer { lock.unlock() }
        guard waitingStart < waiting.count else {
            running -= 1
            waiting.removeAll(keepingCapacity: true)
            waitingStart = 0
            lock.broadcast()
            return nil
        }
        let job = waiting[waitingStart]
        waitingStart += 1
        // What was taken goes once it is most of the list: a long batch of slow commands keeps only what waits.
        if waitingStart >= 1024, waitingStart * 2 >= waiting.count {
            waiting.removeFirst(waitingStart)
            waitingStart = 0
        }
        return job
    }

    /// The program's arguments: `words` with each word that is exactly `{file}` or `{url}` replaced by the path or
    /// the URL; when no word is, `words` then the path and the URL.
    public static func arguments(_ words: [String], path: String, url: String) -> [String] {
        guard words.dropFirst().contains(where: { $0 == "{file}" || $0 == "{url}" }) else {
            return words + [path, url]
        }
        return words.enumerated().map { index, word in
            guard index > 0 else { return word }
            return word == "{file}" ? path : word == "{url}" ? url : word
        }
    }

    private func runOne(path: String, url: String, line: Int?) -> Outcome {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        let arguments = Self.arguments(words, path: path, url: url)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        // Every signal at its default and none blocked, whatever this thread had (SIGPIPE is ignored here).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        let started = posix_spawn(&pid, words[0], &actions, &attributes, argv, environ)
        guard started == 0 else {
            return Outcome(
                path: path, url: url, line: line, status: nil, signal: nil,
                startError: String(cString: strerror(started)))
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        // WIFEXITED / WTERMSIG by hand: the macros are not imported.
        let signal = status & 0x7f
        return signal == 0
            ? Outcome(path: path, url: url, line: line, status: (status >> 8) & 0xff, signal: nil, startError: nil)
            : Outcome(path: path, url: url, line: line, status: nil, signal: signal, startError: nil)
    }
}
