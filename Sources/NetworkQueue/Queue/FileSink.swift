import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Streams one transfer's body to `<destination>.part`, coalescing writes; the queue renames it into
/// place when it decides the request succeeded. Writes happen outside the queue's lock on the transfer's
/// serial events; `commit()` and `discard()` come from the queue, hence the lock.
///
/// Continuing: a part file left by an earlier attempt or run is continued when a validator file
/// (`<destination>.part.validator`, see ``RangeRules/Validator``) lies beside it; the transfer then asks
/// for the bytes from ``continuedFrom`` on, and ``begin(_:)`` appends or starts over by the answer.
///
/// The validator file is written only once the part is worth continuing: before body bytes reach the part ahead
/// of the body's end (so a killed process leaves a part it can continue), or when the part is kept for a retry or
/// a pause. A body that arrives whole in the buffer (every small file) is written once and renamed, no validator.
/// A validator is looked for only when a part is there already: a new part is one exclusive create.
///
/// On Linux a new part of one connection is *unnamed* (`O_TMPFILE` in the destination's folder) until it is worth
/// continuing: a small file is linked into place whole (``commit()``), one directory entry made where a named part
/// made two and removed one (on ext4, 20,000 files of 4 KB: 0.62 s of file work against 0.85 s). It is given its
/// `.part` name before its first bytes are written ahead of the body's end, or when it is kept for a retry or a
/// pause, so a big file is as safe from kill -9 as before; one killed while still unnamed leaves nothing behind.
final class FileSink: Sendable {
    /// Writes are coalesced into chunks of about this size.
    static let chunkSize = 1 << 20

    struct State {
        /// The part's descriptor, -1 once closed.
        var fd: Int32
        var buffer = Data()
        /// Committed or discarded: nothing more is written, and the claim's file is closed.
        var isClosed = false
        /// False while the response is not the body of the file (an error page, a refused range).
        var isAccepting = false
        /// True while a validator file lies beside the part (read at the start, or written since).
        var hasValidator = false
        /// The response whose body the part holds, its validator not yet written (see ``FileSink``): read only
        /// when the part becomes worth continuing.
        var pendingResponse: ResponseHead?
        /// True once the part holds bytes (continued, or written since the open).
        var hasBytes = false
        /// The bytes this sink wrote to the part from its start (a part neither continued nor split): then its length.
        var written: Int64 = 0
        /// The `Last-Modified` of the response whose body the file holds: the committed file's time (parsed when
        /// the file is finished).
        var lastModified: String?
        /// The entity tag of that response, recorded with the finished file (``SavedEntityTag``): a rerun asks with it.
        var entityTag: String?
        /// The ranges written and the buffers of each connection, while the part is split (see
        /// ``FileSink/beginSegments(_:done:)``).
        var segments: SegmentWriter?
        /// True while the record of a split part continued from before is still beside it, untouched.
        var recordIntact = false
        /// False while the part is unnamed (see ``FileSink``): nothing is at ``partialPath``.
        var isNamed = true
        /// True while the part is to be unnamed and is not made yet: it is made (``fd`` opened) only once a head says
        /// its body is the file (``begin(_:)``), so a revalidated file that is unchanged, or an error answer, costs no
        /// part (on ext4 an unnamed file is an inode made and freed).
        var opensUnnamedAtHead = false
        /// True once an unnamed part is written whole and dated: its descriptor stays open until ``commit()`` links
        /// it into place (a named part is closed then).
        var isFinished = false
        /// The name the response gave the file (``NetworkRequest/FileOptions-swift.struct/namesFileFromResponse``),
        /// the path chosen for it (the name, or its `-2`, `-3`…, free in the destination's folder when chosen), and
        /// the claim that keeps another request from that path.
        var responseName: String?
        var responseTarget: String?
        var targetClaim: DestinationClaim?
        /// True when the file at ``responseTarget`` records this request's origin (an earlier run's file of the same
        /// URL): it is replaced, where any other name is only ever linked where nothing is.
        var replacesTarget = false
        /// True once the part records its origin (``FileOrigin``).
        var recordsOrigin = false

        /// Nothing more is written: the buffers go now, not with the sink, which a transfer still winding down may
        /// hold for a while (a split file's connections' buffers are a MiB each).
        mutating func markClosed() {
            isClosed = true
            buffer = Data()
            segments = nil
            // The name it chose is in place now, or will never be: another request may choose it.
            targetClaim?.endRequest()
            targetClaim = nil
        }
    }

    /// The paths, made once: a file's few system calls are most of its cost, and building each path from a URL
    /// again would cost more than they do. For messages: the system calls name each entry relative to ``folder``.
    let destinationPath: String
    let partialPath: String
    /// The validator file beside the part.
    let validatorPath: String
    /// The folder the file is written in, held from the open to the commit: every entry of the file is named
    /// relative to it (DESIGN semantics 22).
    let folder: HeldFolder
    /// The entries of the file, as the `*at` calls name them relative to ``folder``: the destination, the part, its
    /// validator and its split record.
    let destinationName: String
    let names: Names
    /// The part file's URL (for hashing the bytes a continued part holds).
    var partial: URL { URL(fileURLWithPath: partialPath, isDirectory: false) }
    /// The bytes already in the part file that the transfer continues after (0: a fresh start).
    let continuedFrom: Int64
    /// The validator the continuing request sends in `If-Range`, when ``continuedFrom`` is above 0.
    let validator: RangeRules.Validator?
    /// The request's right to the destination, held across its attempts.
    let claim: DestinationClaim
    /// What a split part left by an earlier attempt or run holds (nil: none, or the part is not continued).
    let resumed: PartSegments?
    /// True when the open left the destination unchecked (an unnamed part of a request that found nothing there as it
    /// was added): naming the part, or the commit, refuses whatever is there that a file must not replace, before
    /// anything is named or renamed over it.
    let checksDestinationAtCommit: Bool
    /// True when the destination, found at the add, is checked when the part is made at its head (see
    /// ``State/opensUnnamedAtHead``): a directory, a FIFO or a device there is refused before a byte is written.
    let checksDestinationAtHead: Bool
    /// True when a response's `Content-Disposition` names the file (see
    /// ``NetworkRequest/FileOptions-swift.struct/namesFileFromResponse``).
    let namesFromResponse: Bool
    let state: Locked<State>

    /// True when the file may go elsewhere than its destination: a name its response gives, or the free name beside
    /// another origin's file at the destination (see ``committedPath``).
    var mayPlaceElsewhere: Bool { namesFromResponse || claim.isForeign }

    /// Where the file went (or goes): the name the response gave it, else the destination.
    var committedPath: String { state.withLock { $0.responseTarget } ?? destinationPath }

    /// Opens the partial file: continues it when `continuing` allows and a saved validator describes it, else
    /// creates (or truncates) it. Returns nil, creating nothing, when the request has already ended.
    ///
    /// `revalidating`: the request asks whether the regular file found at its destination when it was added changed
    /// (a 304 keeps it): the destination is checked again only when the part is made, at a head that replaces it.
    init?(
        claim: DestinationClaim, continuing: Bool, segmented: Bool = false, namesFromResponse: Bool = false,
        revalidating: Bool = false
    ) throws(NetworkQueueError) {
        self.namesFromResponse = namesFromResponse
        destinationPath = claim.path
        partialPath = Self.partPath(of: destinationPath)
        validatorPath = Self.validatorPath(of: partialPath)
        // The folders were checked as the request was added; a link put on the way since (the request may have waited
        // long) is refused now, before anything is opened, and the folder is held from here on.
        let folder = try HeldFolder.of(destinationPath, guardian: claim.outputFolder)
        self.folder = folder
        let leaf = folder.isGuarded ? Self.lastComponent(of: destinationPath) : ""
        destinationName = folder.name(leaf: leaf, path: destinationPath)
        names = Names(
            folder: folder.fd, partial: folder.name(leaf: Self.partPath(of: leaf), path: partialPath),
            partialPath: partialPath)
        // Only a regular file (or a link, itself replaced) is replaced: never a directory, a FIFO or a device, refused
        // before a byte is fetched. Unless nothing was there when the request was added and the part is unnamed: its
        // link never replaces anything, and what appeared since is refused when the part is named or linked (an
        // `lstat` of a missing file is one of a small file's costliest calls). A regular file being revalidated is
        // looked at again when a head replaces it, before a byte is written: an unchanged one (a 304) never is.
        let mayBeUnnamed = !segmented && Self.canLinkUnnamed
        let checksLater = mayBeUnnamed && claim.wasAbsentAtAdd
        if segmented {
            // A split part's record and its temporary name must be free for files: a folder or a FIFO
            // there is an obstacle the user must remove, failing the request now, before anything is created.
            // The paths are made for the message alone (every split file asks: two names, no array).
            let record = names.record
            if let reason = Self.refusal(at: record, in: folder.fd) {
                throw .fileError(path: Self.recordPath(of: partialPath), reason: reason)
            }
            if let reason = Self.refusal(at: record + ".new", in: folder.fd) {
                throw .fileError(path: Self.recordPath(of: partialPath) + ".new", reason: reason)
            }
        }
        guard claim.openFile() else { return nil }
        self.claim = claim
        // A retry's earlier attempt may still have its file open (its closing waits on another thread):
        // close it now, keeping it for this attempt to continue, before this one opens the same path; its
        // own closing is then a no-op.
        claim.replaceSink(with: nil)?.close(keeping: continuing)
        var saved: RangeRules.Validator?
        var offset: Int64 = 0
        var resumed: PartSegments?
        // Most parts are new: unnamed when nothing is at the part's path, else one create that follows no link and
        // opens no FIFO, with nothing to continue. An unnamed part is made once a head says the body is the file
        // (``State/opensUnnamedAtHead``) where the folder is known to be there: held below a guardian, or where the add
        // found the file to revalidate (elsewhere the open is what finds a missing folder, before anything is sent).
        let unnamedMayBeMade =
            mayBeUnnamed && Self.unnamedPartsWork.load(ordering: .relaxed)
            && Self.nothingIsAt(names.partial, in: folder)
        let opensAtHead = unnamedMayBeMade && (folder.isGuarded || revalidating)
        let checksAtHead = opensAtHead && !checksLater && revalidating
        if !checksLater, !checksAtHead, let reason = Self.refusal(at: destinationName, in: folder.fd) {
            claim.closeFile()
            throw .fileError(path: destinationPath, reason: reason)
        }
        var fd: Int32 = unnamedMayBeMade && !opensAtHead ? Self.makeUnnamed(in: folder, besides: names.partial) : -1
        let isNamed = !opensAtHead && fd < 0
        if isNamed, checksLater, let reason = Self.refusal(at: destinationName, in: folder.fd) {
            claim.closeFile()
            throw .fileError(path: destinationPath, reason: reason)
        }
        if isNamed {
            fd = openat(folder.fd, names.partial, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        }
        if isNamed, fd < 0 {
            // Something is there (or the create failed: the open below says why).
            (fd, saved, offset, resumed) = try Self.openExisting(
                names, continuing: continuing, segmented: segmented, claim: claim)
        }
        continuedFrom = offset
        checksDestinationAtCommit = checksLater && !isNamed
        checksDestinationAtHead = checksAtHead
        validator = offset > 0 ? saved : nil
        self.resumed = resumed
        var opened = State(
            fd: fd, hasValidator: validator != nil, hasBytes: offset > 0, recordIntact: resumed?.length != nil,
            isNamed: isNamed, opensUnnamedAtHead: opensAtHead)
        if claim.isForeign {
            // Another origin's file is at the destination: this one goes beside it, under the next free name.
            (opened.responseTarget, opened.targetClaim, opened.replacesTarget) = Self.freeName(
                Self.lastComponent(of: destinationPath), besides: destinationPath, in: folder, claim: claim)
        }
        state = Locked(opened)
        _ = claim.replaceSink(with: self)
    }

    /// Writes the validator file, never through a symbolic link planted at its path.
    private func saveValidator(_ validator: RangeRules.Validator) throws(FileFailure) {
        let fd = Self.openRegular(
            names.validator, in: folder.fd, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw FileFailure(reason: "cannot write \(validatorPath): \(Self.openFailure(fd))") }
        defer { closeDescriptor(fd) }
        var text = validator.fileText
        try text.withUTF8 { bytes in Result { () throws(FileFailure) in try Self.writeAll(fd, .init(bytes)) } }.get()
    }

    deinit { discard() }

    /// The final response head arrived, as its pipeline read it: decides what the body is to the file. A
    /// fresh or restarted transfer starts the file over (saving the response's validator, so that a later
    /// attempt or run can continue it); a 206 that continues the part appends; a response that is not the
    /// file's body (an unacceptable status, a refused range) writes nothing and leaves the part as it was,
    /// for a retry to continue (a final failure deletes it).
    func begin(_ reading: HeadReading) -> NetworkQueueError? {
        let response = reading.head
        return perform { state throws(FileFailure) in
            state.buffer.removeAll(keepingCapacity: true)
            state.lastModified = response.value(forHTTPHeaderField: "Last-Modified")
            state.entityTag = ExistingFileRules.entityTag(of: response)
            state.isAccepting = reading.isAcceptable
            switch reading.continuation {
            case .append?, .restartWithoutRange?:
                break
            case .startOver?, .unrelated?, nil:
                guard state.isAccepting else { return }
                try openPartAtHead(&state)
                if state.hasBytes { try Self.check(ftruncate(state.fd, 0) == 0 && lseek(state.fd, 0, SEEK_SET) == 0) }
                state.hasBytes = false
                state.written = 0
                if state.hasValidator { remove(names.validator) }
                state.hasValidator = false
                if resumed != nil || state.segments != nil { remove(names.record) }
                state.recordIntact = false
                state.segments = nil
                // Its validator is written once the part is worth continuing (see ``FileSink``).
                state.pendingResponse = response
            }
            if namesFromResponse, state.isAccepting, state.responseName == nil,
                let field = response.value(forHTTPHeaderField: "Content-Disposition"),
                let name = ContentDisposition.fileName(in: field)
            {
                state.responseName = name
                state.targetClaim?.endRequest()
                (state.responseTarget, state.targetClaim, state.replacesTarget) = Self.freeName(
                    name, besides: destinationPath, in: folder, claim: claim)
            }
        }
    }

    /// Writes a piece of the body: a small piece is gathered into a chunk, a piece of ``directWriteSize`` or
    /// more is written where it is (after what was gathered), never copied. The piece may be lent by the
    /// transport (valid only during this call): nothing of it is kept but a copy.
    func write(_ bytes: UnsafeRawBufferPointer) -> NetworkQueueError? {
        perform { state throws(FileFailure) in
            guard state.isAccepting, let base = bytes.baseAddress else { return }
            if bytes.count >= Self.directWriteSize {
                // The buffered bytes first, and before them the validator.
                try flush(&state, final: false)
                try Self.writeAll(state.fd, bytes)
                state.hasBytes = true
                state.written += Int64(bytes.count)
                return
            }
            state.buffer.append(base.assumingMemoryBound(to: UInt8.self), count: bytes.count)
            if state.buffer.count >= Self.chunkSize { try flush(&state, final: false) }
        }
    }

    /// Pieces at least this big are written as they come, without gathering.
    static let directWriteSize = 64 << 10

    /// Writes what is buffered, dates the file from the response's `Last-Modified` and closes it, outside the
    /// queue's lock; ``commit()`` renames it.
    func finishWriting() -> NetworkQueueError? {
        perform { state throws(FileFailure) in
            try flush(&state, final: true)
            try state.segments?.flushAll(state.fd)
            let fd = state.fd
            recordOrigin(&state)
            var dated: Int64?
            if let date = state.lastModified.flatMap(HTTPDate.parse) {
                // As `curl -R` and `wget -N`: the file dates from the resource, so a rerun can tell it unchanged.
                // Set on the open descriptor: no path looked up again, and the rename keeps it.
                let seconds = date.timeIntervalSince1970.rounded(.down)
                var times = (timespec(tv_sec: Int(seconds), tv_nsec: 0), timespec(tv_sec: Int(seconds), tv_nsec: 0))
                let set = withUnsafePointer(to: &times) {
                    $0.withMemoryRebound(to: timespec.self, capacity: 2) { futimens(fd, $0) }
                }
                if set == 0 { dated = Int64(seconds) }
            }
            if let tag = state.entityTag {
                // Its size and time as saved: a file changed since is not the one the tag names. Known without a look
                // for a part written whole from its start and dated from the response.
                var size: Int64?
                var seconds: Int64?
                if continuedFrom == 0, resumed == nil, state.segments == nil, let dated {
                    (size, seconds) = (state.written, dated)
                } else {
                    var info = stat()
                    if fstat(fd, &info) == 0 {
                        #if canImport(Darwin)
                            (size, seconds) = (Int64(info.st_size), Int64(info.st_mtimespec.tv_sec))
                        #else
                            (size, seconds) = (Int64(info.st_size), Int64(info.st_mtim.tv_sec))
                        #endif
                    }
                }
                if let size, let seconds {
                    SavedEntityTag.record(
                        .init(entityTag: tag, size: size, modifiedSeconds: seconds, origin: claim.origin), fd: fd)
                }
            }
            // An unnamed part stays open: it is linked into place through its descriptor.
            guard state.isNamed else {
                state.isFinished = true
                return
            }
            state.fd = -1
            try Self.check(closeDescriptor(fd) == 0)
        }
    }

    /// Renames the partial file to the destination, atomically replacing a file there. Called on the
    /// transfer's thread once the engine has moved the request to committing (no cancel can reach it any
    /// more); the engine hears the outcome next. A directory at the destination is never replaced.
    func commit() -> NetworkQueueError? {
        let error: NetworkQueueError? = state.withLock { state in
            guard !state.isClosed else { return .fileError(path: partialPath, reason: "already closed") }
            // finishWriting() flushed and closed it on the transfer's thread: no writing under the lock.
            guard state.fd < 0 || state.isFinished else {
                return .fileError(path: partialPath, reason: "not finished writing")
            }
            // The folder held since the open must still be the one at its place: one swapped for a link (or another
            // folder) meanwhile fails the file, which never goes through it (the part, in the folder held, is removed).
            if let reason = folder.refusalAtCommit() { return .fileError(path: destinationPath, reason: reason) }
            if let target = state.responseTarget {
                // A name the response gave: it never replaces anything (the user asked for none of what is there).
                return place(&state, at: target)
            }
            var destinationChecked = !checksDestinationAtCommit
            if !state.isNamed {
                // Linked into place whole. Something at the destination already makes it a named part, renamed over
                // it as a named part is when it is a file (or a link); anything else there is refused, as the open
                // refuses it for a named part.
                let linked = Self.link(state.fd, in: folder.fd, to: destinationName)
                if linked == 0 || linked != EEXIST {
                    closeDescriptor(state.fd)
                    state.fd = -1
                    guard linked == 0 else {
                        return .fileError(path: destinationPath, reason: String(cString: strerror(linked)))
                    }
                    state.markClosed()
                    return nil
                }
                do throws(FileFailure) {
                    // Naming it checks the destination.
                    try name(&state)
                } catch {
                    return error.error(partialPath: partialPath)
                }
                destinationChecked = true
                closeDescriptor(state.fd)
                state.fd = -1
            }
            // A part unnamed at the open and named since (kept ahead of its end) is checked as the open checks a
            // named one.
            if !destinationChecked, let reason = Self.refusal(at: destinationName, in: folder.fd) {
                return .fileError(path: destinationPath, reason: reason)
            }
            // A split part's record goes first: a part left without one is started over, never misread.
            if state.segments != nil { remove(names.record) }
            guard renameat(folder.fd, names.partial, folder.fd, destinationName) == 0 else {
                let failure = errno
                // The part is gone and the file is there: another process on the same folder (a second run of the
                // same list) finished it first and moved it into place. The file is kept, not failed.
                if failure == ENOENT, Self.regularFile(at: destinationName, in: folder.fd) != nil {
                    if state.hasValidator { remove(names.validator) }
                    state.markClosed()
                    return nil
                }
                return .fileError(path: destinationPath, reason: String(cString: strerror(failure)))
            }
            if state.hasValidator { remove(names.validator) }
            state.markClosed()
            return nil
        }
        if error == nil { claim.closeFile() } else { discard() }
        return error
    }

    /// Links the finished file at `target` (a name the response gave, or the free name beside another origin's file),
    /// never replacing what is there but a file that records this request's origin: a name taken since it was chosen
    /// gives way to the next free one (`-2`, `-3`…). The part's own name and validator go.
    private func place(_ state: inout State, at target: String) -> NetworkQueueError? {
        if state.replacesTarget { return replace(&state, at: target) }
        var target = target
        for _ in 0..<Self.freeNameTries {
            let name = folder.name(leaf: Self.lastComponent(of: target), path: target)
            let linked =
                state.isNamed
                ? Self.hardLink(names.partial, in: folder.fd, to: name) : Self.link(state.fd, in: folder.fd, to: name)
            if linked == EEXIST {
                // Taken since: the names are looked at again (this one, now taken, among them).
                state.targetClaim?.endRequest()
                (state.responseTarget, state.targetClaim, state.replacesTarget) = Self.freeName(
                    state.responseName ?? Self.lastComponent(of: destinationPath), besides: destinationPath,
                    in: folder, claim: claim)
                guard let next = state.responseTarget else { break }
                if state.replacesTarget { return replace(&state, at: next) }
                target = next
                continue
            }
            guard linked == 0 else { return .fileError(path: target, reason: String(cString: strerror(linked))) }
            if state.fd >= 0 { closeDescriptor(state.fd) }
            state.fd = -1
            if state.isNamed { remove(names.partial) }
            if state.segments != nil || resumed != nil { remove(names.record) }
            if state.hasValidator { remove(names.validator) }
            state.markClosed()
            return nil
        }
        return .fileError(path: target, reason: "no free name for the response's file name")
    }

    /// Renames the finished part over `target`, a file that records this request's origin (an earlier run's).
    private func replace(_ state: inout State, at target: String) -> NetworkQueueError? {
        do throws(FileFailure) {
            try name(&state)
        } catch {
            return error.error(partialPath: partialPath)
        }
        if state.fd >= 0 { closeDescriptor(state.fd) }
        state.fd = -1
        if state.segments != nil || resumed != nil { remove(names.record) }
        let name = folder.name(leaf: Self.lastComponent(of: target), path: target)
        guard renameat(folder.fd, names.partial, folder.fd, name) == 0 else {
            return .fileError(path: target, reason: String(cString: strerror(errno)))
        }
        if state.hasValidator { remove(names.validator) }
        state.markClosed()
        return nil
    }

    /// How many names ``freeName(_:besides:in:claim:)`` tries before it gives up.
    static let freeNameTries = 1_000

    /// A path for `name` in the folder of `destination`, with `-2`, `-3`… before its extension when taken, that no
    /// other request claims and where nothing is, or a file that records this request's origin (``FileOrigin``: an
    /// earlier run's, which it replaces, the third value); and its claim. Nil (the destination, already the
    /// request's) when `name` is the destination's own name, unless another origin's file is there.
    static func freeName(_ name: String, besides destination: String, in held: HeldFolder, claim: DestinationClaim)
        -> (String?, DestinationClaim?, Bool)
    {
        let folder = destination.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(destination[..<$0]) } ?? "."
        for counter in 1...freeNameTries {
            let candidate = counter == 1 ? name : FileName.numbered(name, counter)
            let path = folder + "/" + candidate
            if path == destination {
                if claim.isForeign { continue }
                return (nil, nil, false)
            }
            var info = stat()
            let entry = held.name(leaf: candidate, path: path)
            let isFree = fstatat(held.fd, entry, &info, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT
            let isOwn =
                !isFree && !claim.origin.isEmpty && (info.st_mode & S_IFMT) == S_IFREG
                && Self.standing(of: entry, in: held.fd, to: claim.origin) == .own
            guard isFree || isOwn else { continue }
            guard let taken = DestinationClaim.claim(URL(fileURLWithPath: path, isDirectory: false), path: path) else {
                continue
            }
            return (path, taken, isOwn)
        }
        return (nil, nil, false)
    }

    /// How the regular file `name` of `folder` (never through a link, never a FIFO) stands to `origin`.
    private static func standing(of name: String, in folder: Int32, to origin: String) -> FileOrigin.Standing {
        let fd = openRegular(name, in: folder, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return .unknown }
        defer { closeDescriptor(fd) }
        return FileOrigin.standing(fd: fd, to: origin)
    }

    /// Removes the entry `name` of the folder held (never through a link: a link there is removed itself).
    private func remove(_ name: String) { unlinkat(folder.fd, name, 0) }

    /// The last component of the absolute `path`.
    static func lastComponent(of path: String) -> String {
        path.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(path[path.index(after: $0)...]) } ?? path
    }

    /// Records the request's origin with the part (once), so that the file, and a part left to continue, say whose
    /// they are. Nothing when the request has none; a file system that keeps no attributes records nothing.
    func recordOrigin(_ state: inout State) {
        guard !state.recordsOrigin, state.fd >= 0, !claim.origin.isEmpty else { return }
        state.recordsOrigin = true
        FileOrigin.record(claim.origin, fd: state.fd)
    }

    /// Closes and deletes the partial file and its validator. Does nothing once the file was committed or
    /// closed; a call made while another is deleting returns only once the file is gone (the sink's lock is
    /// held throughout), so whoever reports a failure after calling it knows no partial file is left.
    func discard() { close(keeping: false) }

    /// Deletes the part file of the claim's destination and its validator, left by an attempt that kept them for
    /// the next one (the request ended instead). The caller holds the claim.
    static func removePart(of claim: DestinationClaim) {
        // Below a guardian, the folder is reached without a link: one swapped in since holds nothing of ours.
        guard let folder = try? HeldFolder.of(claim.path, guardian: claim.outputFolder) else { return }
        let partial = folder.name(leaf: partPath(of: lastComponent(of: claim.path)), path: partPath(of: claim.path))
        unlinkat(folder.fd, partial, 0)
        unlinkat(folder.fd, validatorPath(of: partial), 0)
        unlinkat(folder.fd, recordPath(of: partial), 0)
    }

    /// The part file a download to `destination` is written in.
    private static func partPath(of destination: String) -> String { destination + ".part" }

    /// The validator file beside the part file `partial`.
    static func validatorPath(of partial: String) -> String { partial + ".validator" }

    /// The record of a split part `partial` (see ``SegmentRecord``).
    static func recordPath(of partial: String) -> String { partial + ".segments" }

    /// Closes the partial file; with `keeping`, a part that a saved validator describes stays (all its
    /// bytes written) for the next attempt to continue, else it is deleted with its validator.
    func close(keeping: Bool) {
        state.withLock { state in
            guard !state.isClosed else { return }
            // Kept only under a validator: the one read at the start, or the response's, written now.
            var keep = keeping && (state.hasValidator || state.pendingResponse.flatMap(RangeRules.validator) != nil)
            // Its buffered bytes reach the part, the pending validator first; a part not written whole is not kept.
            if keep { keep = (try? flush(&state, final: false)) != nil }
            // A split part is kept with the record of every byte written, its connections' buffers too.
            if keeping, state.segments != nil { keep = (try? keepSegments(&state)) != nil }
            // A continued split part whose attempt failed before it wrote (a 503, say) stays as it was, record and all.
            if keeping, state.segments == nil, state.recordIntact { keep = true }
            if state.fd >= 0 { closeDescriptor(state.fd) }
            state.fd = -1
            if !keep {
                if state.isNamed { remove(names.partial) }
                if state.hasValidator { remove(names.validator) }
                if state.segments != nil || resumed != nil { remove(names.record) }
            }
            state.markClosed()
            claim.closeFile()
        }
    }

    func perform(_ body: (inout State) throws(FileFailure) -> Void) -> NetworkQueueError? {
        state.withLock { state -> NetworkQueueError? in
            guard !state.isClosed else { return nil }
            do throws(FileFailure) {
                try body(&state)
                return nil
            } catch {
                return error.error(partialPath: partialPath)
            }
        }
    }

    /// Writes what is buffered; unless it is the whole body (`final`), the pending validator first: a part on disk
    /// is always described.
    private func flush(_ state: inout State, final: Bool) throws(FileFailure) {
        if !final {
            recordOrigin(&state)
            try name(&state)
            try saveValidatorIfPending(&state)
        }
        guard !state.buffer.isEmpty else { return }
        let fd = state.fd
        try state.buffer.withUnsafeBytes { bytes in Result { () throws(FileFailure) in try Self.writeAll(fd, bytes) } }
            .get()
        state.written += Int64(state.buffer.count)
        state.buffer.removeAll(keepingCapacity: true)
        state.hasBytes = true
    }

    /// Gives an unnamed part its `.part` name (see ``FileSink``). A part that appeared at that path since the open
    /// (another process) is replaced, as the open would have truncated it; anything else there (a folder, a FIFO) is
    /// left alone and refused, as the open refuses it (``refusal(at:)``).
    ///
    /// A part whose open left its destination unchecked checks it here, as a named part's open does: a body bigger than
    /// the file's buffer stops at its first chunk when a folder or a FIFO has appeared where the file would go.
    private func name(_ state: inout State) throws(FileFailure) {
        guard !state.isNamed else { return }
        if checksDestinationAtCommit, let reason = Self.refusal(at: destinationName, in: folder.fd) {
            throw FileFailure(reason: reason, path: destinationPath)
        }
        var linked = Self.link(state.fd, in: folder.fd, to: names.partial)
        if linked == EEXIST {
            if let reason = Self.refusal(at: names.partial, in: folder.fd) { throw FileFailure(reason: reason) }
            remove(names.partial)
            linked = Self.link(state.fd, in: folder.fd, to: names.partial)
        }
        guard linked == 0 else {
            throw FileFailure(reason: "cannot name \(partialPath): \(String(cString: strerror(linked)))")
        }
        state.isNamed = true
    }

    /// Makes the part whose making waited for the head (``State/opensUnnamedAtHead``): unnamed, or where the file system
    /// cannot, a named part made as the open makes one (the destination checked first when the open left it unchecked;
    /// a part that appeared at its path since is started over, never followed or continued).
    private func openPartAtHead(_ state: inout State) throws(FileFailure) {
        guard state.opensUnnamedAtHead else { return }
        state.opensUnnamedAtHead = false
        if checksDestinationAtHead, let reason = Self.refusal(at: destinationName, in: folder.fd) {
            throw FileFailure(reason: reason, path: destinationPath)
        }
        state.fd = Self.makeUnnamed(in: folder, besides: names.partial)
        if state.fd >= 0 { return }
        if checksDestinationAtCommit, let reason = Self.refusal(at: destinationName, in: folder.fd) {
            throw FileFailure(reason: reason, path: destinationPath)
        }
        let fd = Self.openRegular(
            names.partial, in: folder.fd, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_TRUNC)
        guard fd >= 0 else { throw FileFailure(reason: Self.openFailure(fd)) }
        state.fd = fd
        state.isNamed = true
    }

    /// Writes the pending response's validator file, if it has one.
    private func saveValidatorIfPending(_ state: inout State) throws(FileFailure) {
        guard let response = state.pendingResponse else { return }
        state.pendingResponse = nil
        guard let validator = RangeRules.validator(of: response) else { return }
        try saveValidator(validator)
        state.hasValidator = true
        // A record of an earlier split part would describe other bytes than this part's.
        remove(names.record)
    }
}
