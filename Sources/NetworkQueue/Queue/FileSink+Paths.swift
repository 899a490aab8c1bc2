import Foundation

#if canImport(Glibc)
    import Glibc
    import Synchronization
#elseif canImport(Darwin)
    import Darwin
#endif

/// What may be written at a path: a sink opens only regular files, never through a link or into a FIFO. Every entry is
/// named relative to a folder's descriptor (``HeldFolder``; `AT_FDCWD` with an absolute path for a folder no guardian
/// holds).
extension FileSink {
    /// Returned by ``openRegular(_:in:_:)`` for a path that is not a regular file.
    static let notRegular: Int32 = -2

    /// The entries of one part, as the `*at` calls name them relative to ``folder``: the part, and beside it (made
    /// when asked for: most files need neither) its validator and its split record.
    struct Names {
        let folder: Int32
        let partial: String
        /// The part's path, for messages.
        let partialPath: String
        var validator: String { FileSink.validatorPath(of: partial) }
        var record: String { FileSink.recordPath(of: partial) }
    }

    /// Opens `name` in `folder` with `flags` (which hold `O_NONBLOCK`, so that a FIFO never blocks the open) and
    /// returns the descriptor in blocking mode if it is a regular file; -1 (errno set) when it cannot be opened, and
    /// ``notRegular`` (closed again, nothing removed) when it is something else.
    static func openRegular(_ name: String, in folder: Int32, _ flags: Int32) -> Int32 {
        let fd = openat(folder, name, flags, 0o644)
        guard fd >= 0 else {
            // A FIFO without a reader refuses a non-blocking writer (ENXIO), a link refuses O_NOFOLLOW: say what is there.
            // Nothing there (ENOENT) needs no look.
            let error = errno
            var info = stat()
            if error != ENOENT, fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0,
                (info.st_mode & S_IFMT) != S_IFREG
            {
                return notRegular
            }
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

    /// Why ``openRegular(_:in:_:)`` returned `fd` (below 0): `errno`'s reason, or that something else is there.
    static func openFailure(_ fd: Int32) -> String {
        fd == notRegular ? "is not a regular file" : String(cString: strerror(errno))
    }

    /// Opens the part when something is at its path already: continued when `continuing` and a saved validator
    /// describes it, else truncated (a validator left there is deleted: it describes nothing any more). A
    /// `segmented` sink continues a split part by its record (``SegmentRecord``), or a part of one connection as its
    /// first range; a sink that is not segmented never continues a split part (its bytes are not a prefix).
    static func openExisting(
        _ names: Names, continuing: Bool, segmented: Bool, claim: DestinationClaim
    ) throws(NetworkQueueError) -> (fd: Int32, saved: RangeRules.Validator?, offset: Int64, resumed: PartSegments?) {
        let folder = names.folder
        let record = continuing ? savedRecord(names.record, in: folder) : nil
        // Whether a validator file may lie there: only when it could not be read (nothing there answers ENOENT).
        var validatorMayExist = !continuing
        var saved =
            continuing && record == nil
            ? Self.savedValidator(names.validator, in: folder, mayExist: &validatorMayExist) : nil
        // A record describes a part only while it is continued, and only to a split request: a part that starts over,
        // or that a request of one connection continues, must never be read by its record again.
        if !continuing || (!segmented && record != nil) { unlinkat(folder, names.record, 0) }
        let keepsRecord = segmented && record != nil
        if record != nil, !segmented { saved = nil }
        // O_NOFOLLOW: a symbolic link planted at the .part path is not followed to another file. O_NONBLOCK: a
        // FIFO there does not hold the transfer until a reader comes; it is refused below, and left alone.
        let keeps = saved != nil || keepsRecord
        let flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (keeps ? 0 : O_TRUNC)
        let fd = Self.openRegular(names.partial, in: folder, flags)
        guard fd >= 0 else {
            let reason = openFailure(fd)
            claim.closeFile()
            throw .fileError(path: names.partialPath, reason: reason)
        }
        if keeps, !claim.origin.isEmpty, FileOrigin.standing(fd: fd, to: claim.origin) == .foreign {
            // A part is continued only if it is this download's own: one that records another origin starts over.
            _ = ftruncate(fd, 0)
            unlinkat(folder, names.validator, 0)
            unlinkat(folder, names.record, 0)
            return (fd, nil, 0, nil)
        }
        var info = stat()
        let size = keeps && fstat(fd, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG ? Int64(info.st_size) : 0
        if keepsRecord, let record, let validator = RangeRules.Validator(recordText: record.validator) {
            let onDisk = record.done.reduce(0) { $0 + Int64($1.count) }
            if onDisk > 0, onDisk < record.length, size >= record.done.last?.upperBound ?? 0 {
                return (fd, nil, onDisk, PartSegments(done: record.done, validator: validator, length: record.length))
            }
        }
        if keepsRecord {
            // A record that describes nothing to continue: the part starts over.
            _ = ftruncate(fd, 0)
            unlinkat(folder, names.record, 0)
            return (fd, nil, 0, nil)
        }
        var offset: Int64 = 0
        var resumed: PartSegments?
        if let saved {
            offset = size
            _ = lseek(fd, 0, SEEK_END)
            if segmented, size > 0 { resumed = PartSegments(done: [0..<size], validator: saved, length: nil) }
        }
        if offset == 0, validatorMayExist {
            // Nothing to continue (the file is empty): a validator left from before describes nothing any more.
            unlinkat(folder, names.validator, 0)
        }
        return (fd, saved, offset, resumed)
    }

    /// The record saved beside a split part, if one was written by us and reads back.
    static func savedRecord(_ name: String, in folder: Int32) -> SegmentRecord? {
        var mayExist = false
        return smallText(at: name, in: folder, under: 1 << 16, mayExist: &mayExist).flatMap(SegmentRecord.decode)
    }

    /// The validator saved beside a part file, if one was written by us and reads back; `mayExist` is set when
    /// something may lie at its path (anything but an open failing with ENOENT).
    static func savedValidator(_ name: String, in folder: Int32, mayExist: inout Bool) -> RangeRules.Validator? {
        smallText(at: name, in: folder, under: 4096, mayExist: &mayExist).flatMap(RangeRules.Validator.init(fileText:))
    }

    /// The text of the regular file at `path` (never through a link, never a FIFO), read in one call, when it is
    /// shorter than `limit` bytes; `mayExist` is set when something may lie at the path (anything but an open
    /// failing with ENOENT).
    private static func smallText(at name: String, in folder: Int32, under limit: Int, mayExist: inout Bool) -> String?
    {
        let fd = openRegular(name, in: folder, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        mayExist = fd >= 0 || errno != ENOENT
        guard fd >= 0 else { return nil }
        defer { closeDescriptor(fd) }
        var bytes = [UInt8](repeating: 0, count: limit)
        let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count >= 0, count < limit else { return nil }
        return String(decoding: bytes[..<count], as: UTF8.self)
    }

    /// What is at a path, as one `lstat` (not following a link) tells.
    enum Entry {
        /// Nothing.
        case absent
        /// A regular file: its size and modification time.
        case regular(size: Int64, modified: Date)
        /// Anything else (a folder, a link, a FIFO), or a path that cannot be looked at.
        case other
    }

    /// What is at `path` (in `folder`; absolute by default): one `lstat`, made by the queue for every file request as
    /// it is added.
    static func entry(at path: String, in folder: Int32 = AT_FDCWD) -> Entry {
        var info = stat()
        guard fstatat(folder, path, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return errno == ENOENT ? .absent : .other }
        guard (info.st_mode & S_IFMT) == S_IFREG else { return .other }
        #if canImport(Darwin)
            let time = info.st_mtimespec
        #else
            let time = info.st_mtim
        #endif
        return .regular(
            size: Int64(info.st_size),
            modified: Date(timeIntervalSince1970: Double(time.tv_sec) + Double(time.tv_nsec) / 1e9))
    }

    /// The size and modification time of the regular file at `path` (not followed if it is a link), or nil when
    /// there is none.
    static func regularFile(at path: String, in folder: Int32 = AT_FDCWD) -> (size: Int64, modified: Date)? {
        guard case .regular(let size, let modified) = entry(at: path, in: folder) else { return nil }
        return (size, modified)
    }

    /// Why the entry at `path` must not be written over, or nil when nothing is there or it may be: a regular
    /// file, or a symbolic link (which a rename replaces without touching its target).
    static func refusal(at path: String, in folder: Int32 = AT_FDCWD) -> String? {
        var info = stat()
        guard fstatat(folder, path, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
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
        /// The path the failure is about, when it is not the part's (the destination a part may not replace).
        var path: String?

        /// The failure `errno` names now.
        static func current() -> FileFailure { FileFailure(reason: String(cString: strerror(errno))) }

        /// The queue's error for this failure of the part at `partialPath`: about ``path`` when it names another.
        func error(partialPath: String) -> NetworkQueueError { .fileError(path: path ?? partialPath, reason: reason) }
    }

    /// Throws the failure `errno` names unless `succeeded`.
    static func check(_ succeeded: Bool) throws(FileFailure) {
        if !succeeded { throw .current() }
    }

    /// Writes all of `bytes` at the descriptor's offset, or at `offset` when given (`pwrite`: a split part's
    /// connections write where their ranges are), through short writes and interruptions.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64? = nil) throws(FileFailure) {
        guard var next = bytes.baseAddress else { return }
        var (left, position) = (bytes.count, offset)
        while left > 0 {
            let written = position.map { pwrite(fd, next, left, off_t($0)) } ?? writeDescriptor(fd, next, left)
            if written < 0 {
                if errno == EINTR { continue }
                throw .current()
            }
            next += written
            left -= written
            position? += Int64(written)
        }
    }
}

/// Closes a descriptor and returns `close`'s result (a free function: inside ``FileSink`` the name `close` is its
/// own method's).
@discardableResult
func closeDescriptor(_ fd: Int32) -> Int32 { close(fd) }

extension FileSink {
    /// Opens an unnamed file (`O_TMPFILE`) in `folder`, beside the part file `partial` (where nothing is), to be linked
    /// into place (``link(_:in:to:)``, see ``FileSink``); -1 when the system or the file system cannot (a file system
    /// that refuses one is not asked again: ``unnamedPartsWork``). Linux only; the caller asks only where
    /// ``canLinkUnnamed``.
    static func makeUnnamed(in folder: HeldFolder, besides partial: String) -> Int32 {
        #if os(Linux)
            // Glibc's module does not export O_TMPFILE: `__O_TMPFILE | O_DIRECTORY`.
            let fd = openat(
                folder.fd, folder.ownName(besides: partial), O_WRONLY | O_CLOEXEC | 0o20_000_000 | O_DIRECTORY, 0o644)
            if fd < 0, errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL {
                unnamedPartsWork.store(false, ordering: .relaxed)
            }
            return fd
        #else
            return -1
        #endif
    }

    /// True when nothing is at `name` in `folder` (a part to be made unnamed: nothing to continue or replace there).
    static func nothingIsAt(_ name: String, in folder: HeldFolder) -> Bool {
        var info = stat()
        return fstatat(folder.fd, name, &info, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT
    }

    /// False once a file system refused an unnamed file (`O_TMPFILE`): parts are then named from their open.
    static let unnamedPartsWork = Atomic(true)

    /// Whether an unnamed file can be linked into place here: on Linux, when `/proc/self/fd` is there to link it by
    /// (checked once).
    static let canLinkUnnamed: Bool = {
        #if os(Linux)
            access("/proc/self/fd", F_OK) == 0
        #else
            false
        #endif
    }()

    /// Links the file `name` of `folder` at `target` of the same folder too (never replacing anything there); 0 or the
    /// error number.
    static func hardLink(_ name: String, in folder: Int32, to target: String) -> Int32 {
        linkat(folder, name, folder, target, 0) == 0 ? 0 : errno
    }

    /// Links the unnamed file open as `fd` at `name` of `folder`; 0, or the error number (`EEXIST` when something is
    /// there).
    ///
    /// By the descriptor itself (`AT_EMPTY_PATH`) while that works: older kernels allow it only to a process with
    /// `CAP_DAC_READ_SEARCH`, newer ones to any process for a file it opened (6.18 here, as an unprivileged user). It
    /// costs a fifth less than the link through `/proc/self/fd`, whose path the kernel resolves through procfs. Refused,
    /// the kernel answers `ENOENT`: the `/proc` link then decides, and is used from then on when it succeeds.
    static func link(_ fd: Int32, in folder: Int32, to name: String) -> Int32 {
        #if os(Linux)
            if linksByDescriptor.load(ordering: .relaxed) {
                // AT_EMPTY_PATH, which Glibc's module does not export.
                if linkat(fd, "", folder, name, 0x1000) == 0 { return 0 }
                let failure = errno
                guard failure == ENOENT || failure == EPERM else { return failure }
                guard linkat(AT_FDCWD, "/proc/self/fd/\(fd)", folder, name, AT_SYMLINK_FOLLOW) == 0 else {
                    return errno
                }
                linksByDescriptor.store(false, ordering: .relaxed)
                return 0
            }
            return linkat(AT_FDCWD, "/proc/self/fd/\(fd)", folder, name, AT_SYMLINK_FOLLOW) == 0 ? 0 : errno
        #else
            ENOTSUP
        #endif
    }

    #if os(Linux)
        /// False once a link by descriptor failed where the one through `/proc` succeeded (see ``link(_:in:to:)``).
        private static let linksByDescriptor = Atomic(true)
    #endif
}

/// `write(2)` (a free function: inside ``FileSink`` the name `write` is its own method's).
private func writeDescriptor(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int { write(fd, bytes, count) }
