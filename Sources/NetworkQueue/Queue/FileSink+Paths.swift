import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What may be written at a path: a sink opens only regular files, never through a link or into a FIFO.
extension FileSink {
    /// Returned by ``openRegular(_:_:)`` for a path that is not a regular file.
    static let notRegular: Int32 = -2

    /// Opens `path` with `flags` (which hold `O_NONBLOCK`, so that a FIFO never blocks the open) and returns the
    /// descriptor in blocking mode if it is a regular file; -1 (errno set) when it cannot be opened, and
    /// ``notRegular`` (closed again, nothing removed) when it is something else.
    static func openRegular(_ path: String, _ flags: Int32) -> Int32 {
        let fd = open(path, flags, 0o644)
        guard fd >= 0 else {
            // A FIFO without a reader refuses a non-blocking writer (ENXIO), a link refuses O_NOFOLLOW: say what is there.
            // Nothing there (ENOENT) needs no look.
            let error = errno
            var info = stat()
            if error != ENOENT, lstat(path, &info) == 0, (info.st_mode & S_IFMT) != S_IFREG { return notRegular }
            errno = error
            return -1
        }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            closeDescriptor(fd)
            return notRegular
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return fd
    }

    /// The size and modification time of the regular file at `path` (not followed if it is a link), or nil when
    /// there is none: one `lstat`, read by the queue for every file request that may keep a file already there.
    static func regularFile(at path: String) -> (size: Int64, modified: Date)? {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        #if canImport(Darwin)
            let time = info.st_mtimespec
        #else
            let time = info.st_mtim
        #endif
        return (Int64(info.st_size), Date(timeIntervalSince1970: Double(time.tv_sec) + Double(time.tv_nsec) / 1e9))
    }

    /// Why the entry at `path` must not be written over, or nil when nothing is there or it may be: a regular
    /// file, or a symbolic link (which a rename replaces without touching its target).
    static func refusal(at path: String) -> String? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        switch info.st_mode & S_IFMT {
        case S_IFREG, S_IFLNK: return nil
        case S_IFDIR: return "is a directory"
        default: return "is not a regular file"
        }
    }
}

/// The system calls of a file's bytes: the descriptor is the sink's own, so no `FileHandle` is made per file.
extension FileSink {
    /// A system call failed: its reason, as `strerror` says it.
    struct FileFailure: Error {
        let reason: String

        /// The failure `errno` names now.
        static func current() -> FileFailure { FileFailure(reason: String(cString: strerror(errno))) }
    }

    /// Throws the failure `errno` names unless `succeeded`.
    static func check(_ succeeded: Bool) throws(FileFailure) {
        if !succeeded { throw .current() }
    }

    /// Writes all of `bytes` at the descriptor's offset, through short writes and interruptions.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(FileFailure) {
        guard var next = bytes.baseAddress else { return }
        var left = bytes.count
        while left > 0 {
            let written = writeDescriptor(fd, next, left)
            if written < 0 {
                if errno == EINTR { continue }
                throw .current()
            }
            next += written
            left -= written
        }
    }
}

/// Closes a descriptor and returns `close`'s result (a free function: inside ``FileSink`` the name `close` is its
/// own method's).
@discardableResult
func closeDescriptor(_ fd: Int32) -> Int32 { close(fd) }

/// `write(2)` (a free function: inside ``FileSink`` the name `write` is its own method's).
private func writeDescriptor(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int { write(fd, bytes, count) }
