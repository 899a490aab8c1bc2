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

    /// Why the entry at `url` must not be written over, or nil when nothing is there or it may be: a regular
    /// file, or a symbolic link (which a rename replaces without touching its target).
    static func refusal(at url: URL) -> String? {
        var info = stat()
        guard lstat(url.path, &info) == 0 else { return nil }
        switch info.st_mode & S_IFMT {
        case S_IFREG, S_IFLNK: return nil
        case S_IFDIR: return "is a directory"
        default: return "is not a regular file"
        }
    }
}

/// Closes a descriptor (a free function: inside ``FileSink`` the name `close` is its own method's).
private func closeDescriptor(_ fd: Int32) { _ = close(fd) }
