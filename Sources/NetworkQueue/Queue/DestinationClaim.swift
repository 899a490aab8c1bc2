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
    /// The file's path, made once (`url.path`).
    let path: String
    private let key: String
    /// True when nothing was at the path when its request was added: the part's first open need not look again (see
    /// ``FileSink``).
    let wasAbsentAtAdd: Bool
    /// The request's origin (``FileOrigin``), recorded with its part and its file.
    let origin: String
    /// True when the file at the path recorded another origin when the request was added: the request's file goes
    /// beside it (the next free name), never over it.
    let isForeign: Bool
    /// The request's guarded output folder, which checks the destination's folders again as each part is opened.
    let outputFolder: OutputFolder?
    private let state = Locked((requestEnded: false, openFiles: 0, released: false))
    /// The partial file of the request's newest attempt, so that the next attempt's closes it first.
    private let newest = Locked(NewestSink())

    private struct NewestSink {
        weak var sink: FileSink?
    }

    private init(
        url: URL, path: String, key: String, wasAbsentAtAdd: Bool, origin: String, isForeign: Bool,
        outputFolder: OutputFolder?
    ) {
        self.outputFolder = outputFolder
        self.origin = origin
        self.isForeign = isForeign
        self.url = url
        self.path = path
        self.key = key
        self.wasAbsentAtAdd = wasAbsentAtAdd
    }

    /// Claims `url`, or returns nil when another request holds it. `path`: the URL's path, when the caller has it;
    /// `absentAtAdd`: nothing was at the path when the request was added; `origin`, `isForeign` and `outputFolder`:
    /// see the properties.
    static func claim(
        _ url: URL, path: String? = nil, absentAtAdd: Bool = false, origin: String = "", isForeign: Bool = false,
        outputFolder: OutputFolder? = nil
    ) -> DestinationClaim? {
        let path = path ?? url.path
        let key = isStandard(path) ? path : url.standardizedFileURL.path
        let isNew = claimed.withLock { $0.insert(key).inserted }
        return isNew
            ? DestinationClaim(
                url: url, path: path, key: key, wasAbsentAtAdd: absentAtAdd, origin: origin, isForeign: isForeign,
                outputFolder: outputFolder)
            : nil
    }

    /// True when `path` is already what standardizing it gives: absolute, with no `.` or `..` component and no
    /// empty one (`//`), not ending in `/`. Most are, and need no second look through Foundation.
    static func isStandard(_ path: String) -> Bool {
        var previous: UInt8 = 0
        var dots = 0
        for byte in path.utf8 {
            if byte == 0x2F {
                // A component ends: empty, "." or ".." are not standard.
                if previous == 0x2F || dots == 1 || dots == 2 { return false }
                dots = 0
            } else if byte == 0x2E, dots >= 0 {
                dots += 1
            } else {
                dots = -1
            }
            previous = byte
        }
        return path.utf8.first == 0x2F && previous != 0x2F && dots != 1 && dots != 2
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
