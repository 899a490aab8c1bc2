import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A cookie jar a program holds: filled from a cookie file before a batch, shared by transports, written back to a
/// file after it (curl's `-b`/`-c`, wget's `--load-cookies`/`--save-cookies`).
///
/// Give it to a transport with ``CurlTransport/CookiePolicy/store(_:)`` or ``URLSessionTransport/CookiePolicy/store(_:)``:
/// the transport then stores the cookies servers set in it and sends them back by RFC 6265's rules (domain, path,
/// `Secure`, expiry), exactly as its own ephemeral jar would; a cookie loaded from a file is held to the same rules.
///
/// The file format is the Netscape one curl and wget read and write: a line per cookie, seven TAB-separated fields
/// (domain, whether subdomains match, path, secure, expiry in Unix seconds with 0 for a session cookie, name, value),
/// `#HttpOnly_` before the domain of an HttpOnly cookie, other `#` lines comments. Bounded as the transports' jars
/// are: at most 50 cookies a domain and 3,000 in all, none over 4 KiB.
public final class CookieStore: Sendable, Hashable {
    let jar = Locked(CookieJar())

    /// An empty store.
    public init() {}

    /// A store filled from the cookie file at `file` (see ``load(contentsOf:now:)``).
    public convenience init(contentsOf file: URL, now: Date = Date()) throws {
        self.init()
        try load(contentsOf: file, now: now)
    }

    /// How many cookies the store holds (expired ones included until a request or a write drops them).
    public var count: Int { jar.withLock { $0.cookies.count } }

    /// What ``load(contentsOf:now:)`` read.
    public struct LoadResult: Sendable, Equatable {
        /// Cookies added (or replacing one of the same name, domain and path).
        public let added: Int
        /// Lines that were neither a cookie nor a comment, or held a cookie expired at the time given, or one the
        /// store's rules refuse (a domain cookie for a whole top-level domain or an address, control characters,
        /// over 4 KiB).
        public let skipped: Int
        /// The number of the first line skipped (1 for the file's first line), nil when none was: where to look.
        public let firstSkippedLine: Int?
    }

    /// Adds the cookies of the cookie file at `file`, read at `now` (default: the current time), in time linear in its
    /// lines. Throws ``TextFile/Problem`` when the file cannot be read (a missing file too: pass only a file that
    /// exists; a folder), or is not UTF-8 text. The file is read once, whole: a pipe may be given.
    @discardableResult
    public func load(contentsOf file: URL, now: Date = Date()) throws -> LoadResult {
        // Read once, whole: a pipe (`<(command)`) too; a folder is refused as such.
        let text = try TextFile.read(atPath: file.path)
        let read = jar.withLock { $0.loadNamingSkipped(netscape: text, now: now) }
        return LoadResult(added: read.added, skipped: read.skipped, firstSkippedLine: read.firstSkippedLine)
    }

    /// The store as a cookie file's text at `now` (default: the current time): every cookie not expired, session
    /// cookies with an expiry of 0.
    public func fileText(now: Date = Date()) -> String { jar.withLock { $0.netscapeText(now: now) } }

    /// Writes the store to `file` at `now`, replacing it whole (a temporary file beside it, renamed over it: a reader
    /// never sees half a file), readable by its owner only (cookies are credentials). Throws when the file cannot be
    /// written; nothing is left beside it then.
    public func write(to file: URL, now: Date = Date()) throws {
        let data = Data(fileText(now: now).utf8)
        // Beside the file: its folder is what comes before its last `/`.
        let path = file.path
        let slash = path.utf8.lastIndex(of: UInt8(ascii: "/"))
        let folder = slash.map { String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        var template = Array((folder + "/." + name + ".XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: file.path]) }
        let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var ok = fchmod(fd, 0o600) == 0
        ok = ok && data.withUnsafeBytes { writeWhole(fd, $0) }
        ok = close(fd) == 0 && ok
        guard ok, rename(temporary, file.path) == 0 else {
            unlink(temporary)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: file.path])
        }
    }

    /// True when both are the same store (a store is compared by identity: two jars with the same cookies are two).
    public static func == (lhs: CookieStore, rhs: CookieStore) -> Bool { lhs === rhs }
    /// Hashes the store's identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// Writes all of `bytes` to `fd`, retrying short writes and interruptions; false on an error.
private func writeWhole(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
    var offset = 0
    while offset < bytes.count {
        let written = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
        if written < 0, errno == EINTR { continue }
        guard written > 0 else { return false }
        offset += written
    }
    return true
}
