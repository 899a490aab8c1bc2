import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file of JSON lines (`--report`, `--progress-json`): each value encoded with sorted keys and written with one
/// `write`, under a lock, so that lines never interleave and a reader (or a run killed mid-way) never sees half of
/// one. The first failure to write is said once on standard error, naming `option`.
final class JSONLines: @unchecked Sendable {
    private let fd: Int32
    private let option: String
    private let lock = NSLock()
    private let encoder = JSONEncoder()
    private var failedToWrite = false

    /// Called once, instead of the complaint, when a write finds no reader (EPIPE: a pipe whose reader went away).
    private let readerGone: (@Sendable () -> Void)?

    /// Writes to `fd`, which it closes when it goes; `snakeCase`: keys written `like_this`; `readerGone`: see the
    /// property (nil: a write to a pipe with no reader is a failure to write as any other).
    init(fd: Int32, option: String, snakeCase: Bool = false, readerGone: (@Sendable () -> Void)? = nil) {
        self.readerGone = readerGone
        self.fd = fd
        self.option = option
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        if snakeCase { encoder.keyEncodingStrategy = .convertToSnakeCase }
    }

    deinit { close(fd) }

    /// Writes `value` as one line.
    func write(_ value: some Encodable) {
        guard var bytes = try? encoder.encode(value) else { return }
        bytes.append(UInt8(ascii: "\n"))
        let failure: Int32? = lock.withLock {
            let written = bytes.withUnsafeBytes { writeBytes(fd, $0) }
            let error = errno
            defer { if written != bytes.count { failedToWrite = true } }
            return written != bytes.count && !failedToWrite ? error : nil
        }
        guard let failure else { return }
        if failure == EPIPE, let readerGone { return readerGone() }
        complain("Demo: error: cannot write \(option): \(String(cString: strerror(failure)))")
    }
}

/// `write(2)` (inside ``JSONLines`` the name is its own method's).
private func writeBytes(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
    write(fd, bytes.baseAddress, bytes.count)
}
