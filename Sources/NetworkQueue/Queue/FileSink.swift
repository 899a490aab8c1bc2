import Foundation

/// Streams one transfer's body to `<destination>.part`, coalescing writes, and moves it into place on
/// success. Used outside the queue's lock; a transfer's events are serial, and `discard()` may race with
/// them from another thread, hence the lock.
final class FileSink: Sendable {
    /// Writes are coalesced into chunks of about this size.
    static let chunkSize = 1 << 20

    private struct State {
        var handle: FileHandle?
        var buffer = Data()
        var isClosed = false
    }

    let destination: URL
    let partial: URL
    private let state: Locked<State>

    /// Creates (or truncates) the partial file.
    init(destination: URL) throws(NetworkQueueError) {
        self.destination = destination
        self.partial = destination.appendingPathExtension("part")
        guard FileManager.default.createFile(atPath: partial.path, contents: nil) else {
            throw .fileError(path: partial.path, reason: "cannot create the file")
        }
        do {
            state = Locked(State(handle: try FileHandle(forWritingTo: partial)))
        } catch {
            throw .fileError(path: partial.path, reason: error.localizedDescription)
        }
    }

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

    /// Flushes, closes and moves the file to its destination, replacing any file there.
    func finish() -> NetworkQueueError? {
        perform { state in
            try Self.flush(&state)
            try state.handle?.close()
            state.handle = nil
            state.isClosed = true
            if FileManager.default.fileExists(atPath: destination.path) {
                try FileManager.default.removeItem(at: destination)
            }
            try FileManager.default.moveItem(at: partial, to: destination)
        }
    }

    /// Closes and deletes the partial file. Does nothing once the file was finished or discarded.
    func discard() {
        let handle = state.withLock { state -> FileHandle?? in
            guard !state.isClosed else { return nil }
            state.isClosed = true
            state.buffer = Data()
            defer { state.handle = nil }
            return state.handle
        }
        guard let handle else { return }
        try? handle?.close()
        try? FileManager.default.removeItem(at: partial)
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
