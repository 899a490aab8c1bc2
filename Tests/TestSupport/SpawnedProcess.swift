import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A child process started with `posix_spawn`, its output discarded unless a file is given for it.
///
/// Foundation's `Process.run()` on Linux reads `/proc/self/fd` into a buffer it overruns when the test
/// process has many descriptors open (AddressSanitizer reports a heap-buffer-overflow in
/// `findMaximumOpenFromProcSelfFD`), so tests start their helper programs with this instead.
public struct SpawnedProcess: Sendable {
    public let pid: pid_t

    /// Starts `path` with `arguments` in `directory`; its standard input is read from `input` (default
    /// /dev/null), its standard output written to `output` and its standard error to `errors` (default
    /// /dev/null both). No other descriptor passes to it, unless `inheritingDescriptors` (as a program an app starts
    /// with a plain `posix_spawn` gets every descriptor not opened close-on-exec).
    public init(
        _ path: String, _ arguments: [String], in directory: URL, input: URL? = nil, output: URL? = nil,
        errors: URL? = nil, inheritingDescriptors: Bool = false
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, input?.path ?? "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output?.path ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errors?.path ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        // Nothing else of the test process passes to the child: a socket it inherited (a loopback server's, a
        // client's) stays open as long as the child lives, and the peer never sees it close. A program that ran
        // for a suite held a cut mirror's connections open: the split tests waited 60 s for bytes that never
        // came, and a cancelled transfer's server kept writing.
        if !inheritingDescriptors { Self.closeFrom(3, in: &actions) }
        // The shell changes directory, then becomes the program: the directory and every argument pass as
        // arguments of their own, never through the shell's parser.
        let words = ["/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", directory.path, path] + arguments
        let argv = words.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        // The child starts with no signal blocked and every signal's default action, whatever the spawning thread
        // had: a server that keeps the mask it is given (lighttpd, Apache) would otherwise never hear SIGTERM.
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
        let status = posix_spawn(&pid, "/bin/sh", &actions, &attributes, argv, environ)
        guard status == 0 else { throw POSIXError(POSIXErrorCode(rawValue: status) ?? .EINVAL) }
        self.pid = pid
    }

    /// Adds "close every descriptor from `first` on" to `actions` (glibc 2.34's
    /// `posix_spawn_file_actions_addclosefrom_np`, looked up at run time: Swift's Glibc module does not declare
    /// it). Without it the child inherits what was not opened close-on-exec.
    private static func closeFrom(_ first: Int32, in actions: inout posix_spawn_file_actions_t) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        #if canImport(Glibc)
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
            else { return }
            _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, first)
        #endif
    }

    /// Waits for the process to end; returns its exit status (128 + the signal when killed).
    @discardableResult
    public func waitForExit() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// Waits for the process to end on a thread of its own, never on the cooperative pool (two threads on a
    /// 2-core machine: tests that block them in `waitpid` starve every other test's tasks); returns its exit
    /// status as ``waitForExit()`` does.
    public func exitStatus() async -> Int32 {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: self.waitForExit()) }
        }
    }

    /// Sends SIGKILL.
    public func kill() { _ = Glibc.kill(pid, SIGKILL) }

    /// Sends `signal` (SIGTERM, SIGHUP, ...).
    public func send(_ signal: Int32) { _ = Glibc.kill(pid, signal) }
}
