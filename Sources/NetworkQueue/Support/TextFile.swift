import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A text file a user names (a cookie file, a netrc file), read once and whole: a pipe or a process substitution
/// (`--netrc-file <(gpg -d …)`) is read as it comes, never opened twice; a folder or a device is refused with a
/// reason that says so, as is text that is not UTF-8.
public enum TextFile {
    /// Why the file cannot be read, in words a user can act on.
    public struct Problem: Error, CustomStringConvertible, Equatable, Sendable {
        public let description: String
    }

    /// The text of the file at `path`, at most `limit` bytes (default 1 GiB).
    public static func read(atPath path: String, limit: Int = 1 << 30) throws(Problem) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Problem(description: String(cString: strerror(errno))) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Problem(description: String(cString: strerror(errno))) }
        switch info.st_mode & S_IFMT {
        case S_IFDIR: throw Problem(description: "it is a folder, not a file")
        case S_IFREG, S_IFIFO, S_IFSOCK: break
        default: throw Problem(description: "it is a device, not a file")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { readDescriptor(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw Problem(description: String(cString: strerror(errno))) }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[..<count])
            guard bytes.count <= limit else { throw Problem(description: "it is longer than \(limit) bytes") }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw Problem(description: "it is not UTF-8 text")
        }
        return text
    }
}

/// `read(2)` (named apart from ``TextFile/read(atPath:limit:)``).
private func readDescriptor(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(fd, buffer, count)
}
