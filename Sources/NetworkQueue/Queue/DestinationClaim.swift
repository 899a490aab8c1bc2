import Foundation

/// One request's exclusive right to write a destination file, process-wide, so that two requests never
/// write, rename or delete the same `.part` file.
///
/// The right ends when both the request has ended and its partial file is closed (committed or deleted):
/// a partial file being created while its request is cancelled is still deleted before another request
/// can claim the path.
final class DestinationClaim: Sendable {
    private static let claimed = Locked(Set<String>())

    let url: URL
    private let key: String
    private let state = Locked((requestEnded: false, openFiles: 0, released: false))
    /// The partial file of the request's newest attempt, so that the next attempt's closes it first.
    private let newest = Locked(NewestSink())

    private struct NewestSink {
        weak var sink: FileSink?
    }

    private init(url: URL, key: String) {
        self.url = url
        self.key = key
    }

    /// Claims `url`, or returns nil when another request holds it.
    static func claim(_ url: URL) -> DestinationClaim? {
        let key = url.standardizedFileURL.path
        let isNew = claimed.withLock { $0.insert(key).inserted }
        return isNew ? DestinationClaim(url: url, key: key) : nil
    }

    /// Registers a partial file about to be opened; false once the request has ended (open nothing then).
    func openFile() -> Bool {
        state.withLock { state in
            guard !state.requestEnded else { return false }
            state.openFiles += 1
            return true
        }
    }

    /// Makes `sink` the newest attempt's partial file and returns the one before it, if still alive. A
    /// retried request's attempts share the path: the new attempt deletes the old file before it
    /// creates its own, so a late deletion of the old one (performed on another thread) cannot remove it.
    func replaceSink(with sink: FileSink?) -> FileSink? {
        newest.withLock { newest in
            defer { newest.sink = sink }
            return newest.sink
        }
    }

    /// The partial file was committed or deleted.
    func closeFile() {
        let release = state.withLock { state in
            state.openFiles -= 1
            return Self.takeRelease(&state)
        }
        if release { Self.release(key) }
    }

    /// The request ended.
    func endRequest() {
        let release = state.withLock { state in
            state.requestEnded = true
            return Self.takeRelease(&state)
        }
        if release { Self.release(key) }
    }

    deinit {
        // A queue released with pending requests never ends them: free their paths.
        if state.withLock({ !$0.released }) { Self.release(key) }
    }

    private static func takeRelease(_ state: inout (requestEnded: Bool, openFiles: Int, released: Bool)) -> Bool {
        guard state.requestEnded, state.openFiles == 0, !state.released else { return false }
        state.released = true
        return true
    }

    private static func release(_ key: String) { _ = claimed.withLock { $0.remove(key) } }
}
