import Foundation

extension NetworkRequest {
    /// Which pending request starts first: the highest priority, then the queue's ``NetworkQueue/order``
    /// among requests of one priority. An integer literal gives any other level.
    public struct Priority: RawRepresentable, Comparable, Hashable, Sendable, ExpressibleByIntegerLiteral {
        /// Higher starts first.
        public var rawValue: Int

        /// -8.
        public static let veryLow = Priority(rawValue: -8)
        /// -4.
        public static let low = Priority(rawValue: -4)
        /// 0: the default.
        public static let normal = Priority(rawValue: 0)
        /// 4.
        public static let high = Priority(rawValue: 4)
        /// 8.
        public static let veryHigh = Priority(rawValue: 8)

        /// A priority of `rawValue` (higher starts first).
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// A priority of `value`.
        public init(integerLiteral value: Int) { rawValue = value }

        /// True when `lhs` starts after `rhs`.
        public static func < (lhs: Priority, rhs: Priority) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// What a request with a file destination does when its file already exists as it is about to start.
    public enum ExistingFile: Sendable, Hashable {
        /// Download it again and replace the file when the download succeeds. The default.
        case replace
        /// Ask the server first (a HEAD): if it announces the same size and a `Last-Modified` no newer than
        /// the file's modification time, the request finishes at once with the file as it is
        /// (``NetworkResponse/fileURL`` set, the HEAD's response, no GET). Otherwise, or when the HEAD fails
        /// or announces no size or no date, the GET runs as usual. The queue sets each file it writes to the
        /// `Last-Modified` of its response (as `curl -R` and `wget -N` do), so a rerun of the same batch
        /// skips what it already has. With a ``NetworkRequest/Integrity-swift.struct/checksum``, a file is kept only if it also
        /// hashes to it (read once, when the request is added); one that does not is fetched with no HEAD.
        case skipIfUnchanged
        /// Ask for the file only if it changed, in one request (DESIGN semantics 23): a GET with the validator the
        /// file was saved under, `If-None-Match` with its entity tag, else `If-Modified-Since` with its
        /// modification time. 304 Not Modified keeps the file as it is and finishes the request
        /// (``NetworkResponse/keptExistingFile`` true, ``NetworkResponse/fileURL`` the file, the 304's head); any other
        /// answer is the GET's as usual, and a 200 replaces the file through its part, as any download does. No HEAD
        /// is sent for such a file, even with ``NetworkQueue/showsAccurateProgress`` on.
        ///
        /// The queue records each file's entity tag as it saves it (the `user.networkqueue.etag` extended attribute,
        /// with the file's size and modification second, and its origin: a rerun reads that one attribute), beside its
        /// origin (``FileOrigin``); a file whose size or time no longer match the record was changed since, and is
        /// fetched whole. A file with no record (another
        /// program's, or on a file system that keeps no attributes) is asked for by its modification time, which the
        /// queue sets to the response's `Last-Modified`. A file that records another origin is never revalidated.
        /// A part left beside the file by an interrupted replacement is continued instead (the file changed).
        ///
        /// With ``NetworkRequest/FileOptions-swift.struct/namesFileFromResponse``, the file is the one in the
        /// destination's folder that records the request's URL as its origin: the folder's files are read once per
        /// folder and queue (one attribute each), so that a rerun asks for it rather than downloading a second copy.
        /// With a ``NetworkRequest/Integrity-swift.struct/checksum``, a file is revalidated only if it hashes to it.
        case revalidate
    }

    /// The largest response body a request accepts. An integer literal means ``bytes(_:)``.
    public enum ResponseSizeLimit: Sendable, Hashable, ExpressibleByIntegerLiteral {
        /// ``defaultMemoryLimit`` (64 MiB) for the memory destination; no limit for a file destination.
        case automatic
        /// At most this many bytes (decoded), whatever the destination.
        case bytes(Int64)
        /// No limit. Beware: an endless body held in memory grows until the process runs out of memory.
        case unlimited

        /// The limit ``automatic`` sets for bodies held in memory: 64 MiB.
        public static let defaultMemoryLimit: Int64 = 64 << 20

        /// Creates ``bytes(_:)``.
        public init(integerLiteral value: Int64) { self = .bytes(value) }
    }
}
