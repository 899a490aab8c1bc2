import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Streams one transfer's body to `<destination>.part`, coalescing writes; the queue renames it into
/// place when it decides the request succeeded. Writes happen outside the queue's lock on the transfer's
/// serial events; `commit()` and `discard()` come from the queue, hence the lock.
final class FileSink: Sendable {
    /// Writes are coalesced into chunks of about this size.
    static let chunkSize = 1 << 20

    private struct State {
        var handle: FileHandle?
        var buffer = Data()
        /// Committed or discarded: nothing more is written, and the claim's file is closed.
        var isClosed = false
    }

    let destination: URL
    let partial: URL
    private let claim: DestinationClaim
    private let state: Locked<State>

    /// Creates (or truncates) the partial file. Returns nil, creating nothing, when the request has
    /// already ended.
    init?(claim: DestinationClaim) throws(NetworkQueueError) {
        destination = claim.url
        partial = destination.appendingPathExtension("part")
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: destination.path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw .fileError(path: destination.path, reason: "is a directory")
        }
        guard claim.openFile() else { return nil }
        self.claim = claim
        // A retry's earlier attempt may still have its file (its deletion waits on another thread): delete
        // it now, before this one is created at the same path; its own deletion is then a no-op.
        claim.replaceSink(with: nil)?.discard()
        // O_NOFOLLOW: a symbolic link planted at the .part path is not followed to another file.
        let fd = open(partial.path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            claim.closeFile()
            throw .fileError(path: partial.path, reason: reason)
        }
        state = Locked(State(handle: FileHandle(fileDescriptor: fd, closeOnDealloc: true)))
        _ = claim.replaceSink(with: self)
    }

    deinit { discard() }

    /// The transfer restarted: start the file over.
    func restart() -> NetworkQueueError? {
        perform { state in
            state.buffer.removeAll(keepingCapacity: true)
            try state.handle?.truncate(atOffset: 0)
        }
    }

    func write(_ data: Data) -> NetworkQueueError? {
        perform { state in
            state.buffer.append(data)
            if state.buffer.count >= Self.chunkSize { try Self.flush(&state) }
        }
    }

    /// Writes what is buffered and closes the file, outside the queue's lock; ``commit()`` renames it.
    func finishWriting() -> NetworkQueueError? {
        perform { state in
            try Self.flush(&state)
            try state.handle?.close()
            state.handle = nil
        }
    }

    /// Renames the partial file to the destination, atomically replacing a file there. Called by the
    /// queue under its lock as it decides success, so that no cancel can come between the two. A
    /// directory at the destination is never replaced.
    func commit() -> NetworkQueueError? {
        let error: NetworkQueueError? = state.withLock { state in
            guard !state.isClosed else { return .fileError(path: partial.path, reason: "already closed") }
            // finishWriting() flushed and closed it on the transfer's thread: no writing under the lock.
            guard state.handle == nil else { return .fileError(path: partial.path, reason: "not finished writing") }
            guard rename(partial.path, destination.path) == 0 else {
                return .fileError(path: destination.path, reason: String(cString: strerror(errno)))
            }
            state.isClosed = true
            return nil
        }
        if error == nil { claim.closeFile() } else { discard() }
        return error
    }

    /// Closes and deletes the partial file. Does nothing once the file was committed or discarded; a call
    /// made while another is deleting returns only once the file is gone (the sink's lock is held
    /// throughout), so whoever reports a failure after calling it knows no partial file is left.
    func discard() {
        state.withLock { state in
            guard !state.isClosed else { return }
            state.isClosed = true
            state.buffer = Data()
            try? state.handle?.close()
            state.handle = nil
            unlink(partial.path)
            claim.closeFile()
        }
    }

    private func perform(_ body: (inout State) throws -> Void) -> NetworkQueueError? {
        state.withLock { state in
            guard !state.isClosed else { return nil }
            do {
                try body(&state)
                return nil
            } catch {
                return .fileError(path: partial.path, reason: error.localizedDescription)
            }
        }
    }

    private static func flush(_ state: inout State) throws {
        guard !state.buffer.isEmpty else { return }
        try state.handle?.write(contentsOf: state.buffer)
        state.buffer.removeAll(keepingCapacity: true)
    }
}
