import Foundation

/// The plan of an ``OrderedDownload``: a file of known length cut into chunks, fetched over several connections at
/// once, handed on strictly in order. Which chunk to ask for next, when the window is full, and whether a chunk's
/// answer is the range asked for. Pure: no time, no I/O.
///
/// The window bounds what is held: chunks asked for and not yet handed on are never more than ``windowChunks`` (the
/// window's chunks less the one the reader holds and one for the transfers' buffers), so the bytes in memory never exceed the window however slow the
/// reader or one connection is; a connection that would fetch beyond waits until the reader takes the first chunk.
struct OrderedWindow: Equatable, Sendable {
    /// The file's length in bytes.
    let length: Int64
    /// The bytes of each chunk (the last may be shorter).
    let chunkSize: Int64
    /// Chunks fetched at once, at most.
    let connections: Int
    /// Chunks asked for and not handed on, at most.
    let windowChunks: Int
    /// The next chunk to ask for, the next to hand on, and the chunks being fetched.
    private(set) var nextToRequest = 0
    private(set) var nextToYield = 0
    private(set) var inFlight = 0

    /// A plan for `length` bytes over `connections` (1 or more) within `window` bytes: chunks of `chunkSize`, or when
    /// nil of a twice-`connections`th of the window (so that each connection can have a chunk ahead while the reader
    /// takes one), within 256 KiB and 16 MiB.
    init(length: Int64, connections: Int, window: Int64, chunkSize: Int64? = nil) {
        self.length = max(0, length)
        self.connections = max(1, connections)
        let window = max(1, window)
        let chosen = chunkSize ?? window / Int64(2 * self.connections)
        self.chunkSize = min(16 << 20, max(256 << 10, chosen))
        // Two chunks of the window are the reader's and the transfers': the one handed on last, still being written, and
        // room for the pieces in flight (a transport's buffers, a body's storage as it is grown once).
        windowChunks = max(self.connections, Int(window / self.chunkSize) - 2)
    }

    /// How many chunks the file has.
    var chunkCount: Int { Int((length + chunkSize - 1) / chunkSize) }

    /// The bytes of `chunk`, first and last.
    func range(of chunk: Int) -> ClosedRange<Int64> {
        let first = Int64(chunk) * chunkSize
        return first...(min(length, first + chunkSize) - 1)
    }

    /// True when every chunk was handed on.
    var isComplete: Bool { nextToYield >= chunkCount }

    /// The next chunk to ask for, now counted as being fetched; nil while the connections or the window are full, or
    /// every chunk was asked for.
    mutating func nextRequest() -> Int? {
        guard nextToRequest < chunkCount, inFlight < connections, nextToRequest - nextToYield < windowChunks else {
            return nil
        }
        defer {
            nextToRequest += 1
            inFlight += 1
        }
        return nextToRequest
    }

    /// A chunk being fetched arrived (or failed for good): one connection free.
    mutating func fetched() { inFlight = max(0, inFlight - 1) }

    /// The first chunk not handed on was: the window moves by one.
    mutating func handedOn() { nextToYield += 1 }

    /// Why an answer to `chunk` is not its bytes, or nil when it is: a 206 for exactly its range of a file of this
    /// length, with as many bytes (a 200 is the whole file again, or another version of it: its `If-Range` no longer
    /// matched).
    func problem(with chunk: Int, status: Int, contentRange: String?, bodyLength: Int) -> String? {
        let expected = range(of: chunk)
        guard status == 206 else {
            return status == 200
                ? "the server sent the whole file for a range: it changed since the download began, or ignores ranges"
                : "HTTP status \(status) for bytes \(expected.lowerBound)-\(expected.upperBound)"
        }
        guard let got = RangeRules.contentRange(contentRange), got.first == expected.lowerBound,
            got.last == expected.upperBound
        else {
            return "bytes \(expected.lowerBound)-\(expected.upperBound) were asked for, and "
                + "Content-Range says \(contentRange ?? "nothing")"
        }
        guard got.total == nil || got.total == length else {
            return "the file is \(got.total ?? 0) bytes now, \(length) when the download began"
        }
        guard Int64(bodyLength) == Int64(expected.count) else {
            return "\(bodyLength) bytes came for a range of \(expected.count)"
        }
        return nil
    }
}
