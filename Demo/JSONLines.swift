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

    /// Writes to `fd`, which it closes when it goes; `snakeCase`: keys written `like_this`.
    init(fd: Int32, option: String, snakeCase: Bool = false) {
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
        let failed = lock.withLock {
            let written = bytes.withUnsafeBytes { writeBytes(fd, $0) }
            defer { if written != bytes.count { failedToWrite = true } }
            return written != bytes.count && !failedToWrite
        }
        if failed { complain("Demo: error: cannot write \(option): \(String(cString: strerror(errno)))") }
    }
}

/// `write(2)` (inside ``JSONLines`` the name is its own method's).
private func writeBytes(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
    write(fd, bytes.baseAddress, bytes.count)
}
