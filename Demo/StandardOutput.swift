import DemoKit
import Foundation
import NetworkQueue

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `-o -`: the one URL's file to standard output, in order, through `queue` (``OrderedDownload``); every other word
/// goes to standard error. Returns the exit status: 0 when the whole file was written, 1 when it could not be fetched,
/// 23 when standard output could not take it (its reader went away), as curl's write error. The caller exits once this
/// returns: its strings are gone then (LeakSanitizer reads a string an async frame still holds at `exit` as leaked).
@MainActor func runToStandardOutput(_ queue: NetworkQueue, url: URL, options: DemoOptions) async -> Int32 {
    // The file's descriptor, close-on-exec; the process's standard output is standard error from here on.
    fflush(nil)
    let out = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0)
    dup2(STDERR_FILENO, STDOUT_FILENO)
    // A pipe gets a 1 MiB buffer where Linux allows it (F_SETPIPE_SZ): a chunk goes in a few writes, not sixty-four.
    var info = stat()
    if fstat(out, &info) == 0, info.st_mode & S_IFMT == S_IFIFO {
        #if os(Linux)
            _ = fcntl(out, 1031, Int32(1 << 20))
        #endif
    }
    // Chunks are megabytes each, allocated on the transport's threads and freed on this one: mapped and unmapped
    // whole (glibc's threshold pinned at 1 MiB, where it would rise to a chunk's size and keep freed chunks in each
    // thread's arena), so that the process holds the window, not the window and the arenas' leftovers.
    #if canImport(Glibc)
        // mallopt(M_MMAP_THRESHOLD = -3, …), looked up at run time: Swift's Glibc module does not declare it.
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") {
            typealias MallocOption = @convention(c) (Int32, Int32) -> Int32
            _ = unsafeBitCast(symbol, to: MallocOption.self)(-3, 1 << 20)
        }
    #endif
    let connections = max(1, options.split)
    queue.showsAccurateProgress = false
    queue.maxConcurrentRequestCount = max(connections, options.concurrency)
    let fields = options.headers.request(for: url).allHTTPHeaderFields ?? [:]
    let settings = OrderedDownload.Settings(connections: connections, window: options.window, headers: fields)
    complain(
        "NetworkQueue demo: \(NetworkQueueLogRecord.redacted(url)) to standard output, in order, over \(connections) "
            + "connection\(connections == 1 ? "" : "s") within \(Format.bytes(Int64(options.window))) ahead")
    let began = DispatchTime.now().uptimeNanoseconds
    queue.go()
    var written: Int64 = 0
    do {
        for try await chunk in queue.orderedDownload(of: url, settings: settings) {
            guard chunk.withUnsafeBytes({ writeWhole(out, $0) }) else {
                let reason =
                    errno == EPIPE
                    ? "standard output's reader went away (broken pipe)" : String(cString: strerror(errno))
                complain("Demo: error: -o -: \(reason), after \(Format.bytes(written))")
                return 23
            }
            written += Int64(chunk.count)
        }
    } catch {
        complain(
            "Demo: error: \(NetworkQueueLogRecord.redacted(url)): \(error), after \(Format.bytes(written)) written")
        return 1
    }
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - began) / 1e9
    var usage = rusage()
    #if canImport(Glibc)
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    #else
        getrusage(RUSAGE_SELF, &usage)
    #endif
    complain(
        "Done: \(Format.bytes(written)) to standard output in \(Format.tenths(seconds)) s "
            + "(\(Format.bytes(Int64(Double(written) / max(seconds, 1e-3))))/s), peak memory "
            + "\(Format.bytes(Int64(usage.ru_maxrss) * 1024))")
    return 0
}
