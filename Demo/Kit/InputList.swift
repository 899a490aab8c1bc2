import Foundation
import NetworkQueue

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The `--input` list, in aria2's input-file format: one entry per URL line, `URL [mirror ...] [sha256:HEX|sha512:HEX]
/// [out=NAME] [dir=SUB]` (fields apart by TABs or spaces; more URLs on a line are mirrors of the first; `out=` and `dir=`
/// are aria2's names for the file's name and its folder under `--output`, and a TAB-separated one may hold spaces),
/// then the entry's option lines, each starting with a space or a TAB: ` out=NAME`, ` dir=SUB`,
/// ` checksum=sha-256=HEX` (or `sha-512`), ` header=Name: value` (repeatable). An option the Demo does not know (a
/// file aria2 saved holds `gid=`, `continue=` and others) is named once on standard error and ignored. Blank lines and
/// lines that start with `#` are skipped. Read as a stream, a chunk at a time: a list of any length in constant memory.
public enum InputList {
    public struct Entry: Sendable {
        public let url: URL
        public var checksum: Checksum?
        /// Other URLs serving the same file (the line's further URLs), in their order.
        public let mirrors: [URL]
        /// The 1-based number of its line.
        public let line: Int
        /// The file's name (`out=`), a single safe path component; nil: named from its URL.
        public var name: String? = nil
        /// The file's folder under `--output` (`dir=`), relative, its components safe and joined by `/`; nil: the
        /// output folder itself (or the URL's tree with `--tree`).
        public var folder: String? = nil

        /// Header fields of this entry alone (` header=` option lines), sent after the run's own.
        public var headers = SentHeaders()

        /// ``folder``'s components.
        public var folders: [String]? { folder.map { $0.split(separator: "/").map(String.init) } }
    }

    /// Where one line of an entry lies in the list (its text without the newline): what a session blanks when the
    /// entry finishes, or copies when the list is a pipe.
    public struct LineSpan: Sendable {
        public let offset: Int64
        public let length: Int
        public let text: Substring
    }

    /// Entries assembled from a list's lines, as aria2 reads them: an option line (one that starts with a space or a
    /// TAB) belongs to the URL line above it, so an entry is complete when the next URL line, or the end, is read.
    public struct Assembler {
        private var current: Entry?
        private var spans: [LineSpan] = []
        private var deferred: Problem?
        /// Called once for each option name the Demo does not know, with the first line that gave it.
        private let ignored: @Sendable (String, Int) -> Void
        private var named: Set<String> = []

        public init(ignored: @escaping @Sendable (String, Int) -> Void = { _, _ in }) { self.ignored = ignored }

        /// Reads line `number` (at `span` in the list). Returns the entry the line completes (the one above a new
        /// URL line), with the spans of its lines; throws for a malformed line, or an option line with no URL above.
        public mutating func feed(_ line: Substring, number: Int, offset: Int64, length: Int) throws(Problem) -> (
            entry: Entry, spans: [LineSpan]
        )? {
            if isOptionLine(line) {
                guard current != nil else {
                    throw Problem(
                        line: number, reason: "an option line (starting with a space or a TAB) before any URL")
                }
                let option = trimmed(line)
                guard option.contains("=") else {
                    throw Problem(line: number, reason: "\(quoted(option)) is not an option (NAME=VALUE)")
                }
                let known = try InputList.apply(option, number: number, to: &current!)
                if !known {
                    let name = String(option.prefix { $0 != "=" })
                    if named.insert(name).inserted { ignored(name, number) }
                }
                spans.append(LineSpan(offset: offset, length: length, text: line))
                return nil
            }
            let parsed: Entry?
            do throws(Problem) { parsed = try InputList.parse(line, number: number) } catch {
                // The entry above is whole and good: it is given first, and the problem with the next call.
                guard current != nil else { throw error }
                deferred = error
                return finish()
            }
            guard let entry = parsed else { return nil }
            let done = finish()
            current = entry
            spans = [LineSpan(offset: offset, length: length, text: line)]
            return done
        }

        /// Reads line `number`, one that ``InputList/isPlainWebURL(_:)`` found to be one plain URL, for a check that
        /// reads the list through and keeps nothing: as ``feed(_:number:offset:length:)`` does, without parsing it
        /// (the entry it begins holds ``InputList/checkedURL`` for its URL, and no span).
        public mutating func feedPlainURL(number: Int) -> (entry: Entry, spans: [LineSpan])? {
            let done = finish()
            current = Entry(url: InputList.checkedURL, checksum: nil, mirrors: [], line: number)
            return done
        }

        /// The problem of the URL line read after the entry ``feed(_:number:offset:length:)`` gave last, once: the
        /// list stops there.
        public mutating func takeDeferred() -> Problem? {
            defer { deferred = nil }
            return deferred
        }

        /// True while an entry is being read (its URL line given, the line after it not yet).
        public var hasEntry: Bool { current != nil }

        /// The list ended: its last entry, if one is being read.
        public mutating func finish() -> (entry: Entry, spans: [LineSpan])? {
            guard let entry = current else { return nil }
            current = nil
            defer { spans = [] }
            return (entry, spans)
        }
    }

    /// True for an option line: it starts with a space or a TAB and holds more than white space, and is no comment.
    static func isOptionLine(_ line: Substring) -> Bool {
        guard let first = line.utf8.first, first == 0x20 || first == 0x09 else { return false }
        let option = trimmed(line)
        return !option.isEmpty && !option.hasPrefix("#")
    }

    /// Applies the option `option` (`NAME=VALUE`) of line `number` to `entry`: `out`, `dir`, `checksum` and `header`
    /// are known (true), any other is not (false, nothing changed); a known one with a bad value throws.
    static func apply(_ option: String, number: Int, to entry: inout Entry) throws(Problem) -> Bool {
        guard let equals = option.firstIndex(of: "=") else { return false }
        let name = option[..<equals]
        let value = String(option[option.index(after: equals)...])
        switch name {
        case "out":
            guard entry.name == nil else { throw Problem(line: number, reason: "out= given twice") }
            guard safeComponent(value) != nil else {
                throw Problem(line: number, reason: "out=\(quoted(value)) is not a file name inside the output folder")
            }
            // The one rule every name follows: a name it would change is refused, with what to mend.
            if let problem = FileName.problem(with: value) {
                throw Problem(line: number, reason: "out=\(quoted(value)): \(problem)")
            }
            entry.name = value
        case "dir":
            guard entry.folder == nil else { throw Problem(line: number, reason: "dir= given twice") }
            // aria2 writes an absolute one into the sessions it saves: kept as such, and placed under --output only
            // when it lies inside it (see ListSource).
            let absolute = value.hasPrefix("/")
            guard let folder = safeFolder(absolute ? String(value.drop { $0 == "/" }) : value) else {
                throw Problem(
                    line: number,
                    reason: "dir=\(quoted(value)) is not a folder inside the output folder (a path without '..', '.' "
                        + "or empty parts, none ending in a download's own suffix such as .part)")
            }
            entry.folder = absolute ? "/" + folder : folder
        case "checksum":
            // aria2's TYPE=DIGEST, TYPE such as sha-256.
            guard let split = value.firstIndex(of: "=") else {
                throw Problem(line: number, reason: "checksum=\(quoted(value)) is not TYPE=DIGEST")
            }
            let type = value[..<split].lowercased().replacingOccurrences(of: "-", with: "")
            let digest = value[value.index(after: split)...]
            guard type == "sha256" || type == "sha512" else {
                throw Problem(
                    line: number,
                    reason: "checksum type '\(value[..<split])' is not one the Demo checks (sha-256 or sha-512): "
                        + "remove the line, or give the file's sha-256")
            }
            guard entry.checksum == nil else { throw Problem(line: number, reason: "a second checksum") }
            guard let checksum = Checksum("\(type):\(digest)") else {
                throw Problem(line: number, reason: "checksum=\(quoted(value)): the digest is not \(type) hex")
            }
            entry.checksum = checksum
        case "header":
            do throws(SentHeaders.Problem) { try entry.headers.add(line: value) } catch {
                throw Problem(line: number, reason: "header=: \(error.description)")
            }
        default:
            return false
        }
        return true
    }

    /// A line that is not `URL [checksum]`, by its 1-based number.
    public struct Problem: Error, CustomStringConvertible, Sendable {
        public let line: Int
        public let reason: String
        public var description: String { "line \(line): \(reason)" }
    }

    /// The entry on line `number` (1-based), or nil for a blank line or a comment.
    public static func parse(_ rawLine: Substring, number: Int) throws(Problem) -> Entry? {
        let line = trimmed(rawLine)
        if line.isEmpty || line.hasPrefix("#") { return nil }
        // Most lines are one URL: one field, no splitting. A TAB-separated `out=` or `dir=` field is taken whole (a
        // name may hold spaces); everything else is split at spaces too.
        var fields: [String] = []
        var options: [String] = []
        if line.utf8.contains(where: { $0 == 0x20 || $0 == 0x09 }) {
            for part in line.split(separator: "\t") {
                let trimmed = part.trimmingCharacters(in: .whitespaces)
                if isOption(trimmed), line.utf8.contains(0x09) {
                    options.append(trimmed)
                    continue
                }
                for field in part.split(separator: " ") {
                    if isOption(field) { options.append(String(field)) } else { fields.append(String(field)) }
                }
            }
        } else {
            fields = [line]
        }
        guard fields.count <= 1 + maximumMirrors + 1 else {
            throw Problem(
                line: number,
                reason: "expected 'URL [mirror ...] [sha256:HEX]' with at most \(maximumMirrors) mirrors, found "
                    + "\(fields.count) fields")
        }
        guard let first = fields.first else { throw Problem(line: number, reason: "no URL before its options") }
        guard let url = webURL(first) else {
            throw Problem(line: number, reason: "\(quoted(first)) is not an http(s) URL with a host")
        }
        var checksum: Checksum?
        var mirrors: [URL] = []
        for (index, field) in fields.enumerated().dropFirst() {
            if let mirror = webURL(field), checksum == nil {
                mirrors.append(mirror)
                continue
            }
            guard index == fields.count - 1, let parsed = Checksum(field) else {
                let what =
                    field.contains("://")
                    ? "an http(s) URL with a host" : "sha256:<64 hex digits> or sha512:<128 hex digits>"
                throw Problem(line: number, reason: "\(quoted(field)) is not \(what)")
            }
            checksum = parsed
        }
        guard mirrors.count <= maximumMirrors else {
            throw Problem(line: number, reason: "\(mirrors.count) mirrors: at most \(maximumMirrors) may follow a URL")
        }
        var entry = Entry(url: url, checksum: checksum, mirrors: mirrors, line: number)
        for option in options { _ = try apply(option, number: number, to: &entry) }
        return entry
    }

    /// True for a field that is an option (`out=…`, `dir=…`).
    private static func isOption(_ field: some StringProtocol) -> Bool {
        field.hasPrefix("out=") || field.hasPrefix("dir=")
    }

    /// `text` when it is one safe path component: not empty, not `.` or `..`, no `/`, `\\`, NUL or control character,
    /// at most 255 bytes; else nil.
    static func safeComponent(_ text: String) -> String? {
        guard !text.isEmpty, text != ".", text != "..", text.utf8.count <= 255,
            !text.unicodeScalars.contains(where: {
                $0 == "/" || $0 == "\\" || $0.properties.generalCategory == .control
            })
        else { return nil }
        return text
    }

    /// `text` as a relative folder of safe components joined by `/` (a trailing `/` dropped), at most 4,096 bytes;
    /// nil when absolute, empty, or holding an empty, `.` or `..` part.
    static func safeFolder(_ text: String) -> String? {
        var trimmed = Substring(text)
        if trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard !trimmed.isEmpty, !trimmed.hasPrefix("/"), trimmed.utf8.count <= 4_096 else { return nil }
        let parts = trimmed.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.allSatisfy({ safeComponent($0) != nil && FileName.reservedSuffix(of: $0) == nil }) else {
            return nil
        }
        return parts.joined(separator: "/")
    }

    /// `line` without the white space (Unicode's, and `\r`) at its ends. A line of printable ASCII at both ends,
    /// as nearly every line is, is taken as it is: no Foundation call per line.
    static func trimmed(_ line: Substring) -> String {
        func plain(_ byte: UInt8?) -> Bool { byte.map { $0 > 0x20 && $0 < 0x7F } ?? false }
        if plain(line.utf8.first), plain(line.utf8.last) { return String(line) }
        return line.trimmingCharacters(in: .whitespaces.union(CharacterSet(charactersIn: "\r")))
    }

    /// Every entry of `text`, in order (for a list held in memory).
    public static func parse(_ text: String) throws(Problem) -> [Entry] {
        var entries: [Entry] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if let entry = try parse(line, number: index + 1) { entries.append(entry) }
        }
        return entries
    }

    /// `text` as an http(s) URL with a host, or nil.
    public static func webURL(_ text: String) -> URL? {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty
        else { return nil }
        return url
    }

    /// The URL an entry read by a check holds in place of its own (``Assembler/feedPlainURL(number:)``).
    public static let checkedURL = URL(string: "http://checked.invalid/")!

    /// The most mirrors one line may list: 16.
    public static let maximumMirrors = 16

    /// The longest line a list may hold, in bytes without its newline: 65,536. A longer one (or a list that never
    /// ends its line, such as `/dev/zero`) is refused with its number, as a malformed line is.
    public static let longestLine = 65_536

    /// `text` cut to at most 80 characters for a message, so that a long field is not echoed whole.
    static func quoted(_ text: String) -> String {
        text.count <= 80 ? "'\(text)'" : "'\(text.prefix(80))…' (\(text.utf8.count) bytes)"
    }
}

extension InputList {
    /// True when `line` is certainly one URL line that ``parse(_:number:)`` reads as one http(s) URL with a host and
    /// nothing else: `http://` or `https://` (lower case), a host of letters, digits, `.` and `-`, an optional port of
    /// at most five digits up to 65,535, then a path and query of RFC 3986's characters (unreserved, sub-delimiters,
    /// `:`, `@`, `/`, `?`, and `%` with two hex digits). Read byte by byte, with no allocation: a list of millions is
    /// checked at the speed it is read. False says nothing: the line is then parsed in full (a fragment, user
    /// information, an IPv6 host, a mirror, an option, white space, any other byte).
    public static func isPlainWebURL(_ line: UnsafeRawBufferPointer) -> Bool {
        URLBytes.table.withUnsafeBufferPointer { isPlainWebURL(line, kinds: $0) }
    }

    private static func isPlainWebURL(_ line: UnsafeRawBufferPointer, kinds: UnsafeBufferPointer<UInt8>) -> Bool {
        let count = line.count
        guard count <= longestLine, count > 7, line[0] == 0x68, line[1] == 0x74, line[2] == 0x74, line[3] == 0x70
        else { return false }
        var index = 4
        if line[index] == 0x73 { index += 1 }  // "s"
        guard index + 3 <= count, line[index] == 0x3A, line[index + 1] == 0x2F, line[index + 2] == 0x2F else {
            return false
        }
        index += 3
        let host = index
        while index < count, kinds[Int(line[index])] == URLBytes.host { index += 1 }
        guard index > host else { return false }
        if index < count, line[index] == 0x3A {  // ":"
            index += 1
            let digits = index
            var port = 0
            while index < count, line[index] >= 0x30, line[index] <= 0x39, index - digits < 5 {
                port = port * 10 + Int(line[index] - 0x30)
                index += 1
            }
            guard index > digits, port <= 65_535 else { return false }
        }
        guard index < count else { return true }
        guard line[index] == 0x2F || line[index] == 0x3F else { return false }  // "/" or "?"
        while index < count {
            switch kinds[Int(line[index])] {
            case URLBytes.host, URLBytes.path:
                index += 1
            case URLBytes.percent:
                guard index + 2 < count, URLBytes.isHex(line[index + 1]), URLBytes.isHex(line[index + 2]) else {
                    return false
                }
                index += 3
            default:
                return false
            }
        }
        return true
    }

    /// What each byte may be in a plain URL (``isPlainWebURL(_:)``): a table, one load a byte.
    private enum URLBytes {
        static let other: UInt8 = 0
        /// Letters, digits, `.` and `-`: a host's (and a path's).
        static let host: UInt8 = 1
        /// The rest of RFC 3986's unreserved and sub-delimiters, and `:`, `@`, `/`, `?`: a path's and a query's.
        static let path: UInt8 = 2
        static let percent: UInt8 = 3

        static func isHex(_ byte: UInt8) -> Bool {
            (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x66)
        }

        static let table: [UInt8] = (0...255).map { value -> UInt8 in
            let scalar = Unicode.Scalar(UInt8(value))
            if ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
                || scalar == "." || scalar == "-"
            {
                return host
            }
            if "_~!$&'()*+,;=:@/?".unicodeScalars.contains(scalar) { return path }
            return scalar == "%" ? percent : other
        }
    }
}

/// The lines of a file (or of standard input for `-`), read a chunk at a time, once: a pipe, a FIFO or a process
/// substitution (`<(command)`) is read as it comes and never opened twice.
public struct LineReader: Sendable {
    private let descriptor: Int32
    /// The descriptor's owner, shared by every copy of the reader (nil: standard input, never closed): it closes it
    /// once, however many copies finish, so that no copy closes a number the process has since given another file.
    private let owner: DescriptorOwner?
    private var buffer: [UInt8] = []
    private var start = 0
    /// Bytes from `start` up to here hold no newline (so that a long line is scanned once, not once per chunk).
    private var scanned = 0
    private var isAtEnd = false
    private var number = 0
    /// Bytes of the file before `buffer[0]` (dropped as the buffer moved on).
    private var consumed: Int64 = 0
    /// Where the line ``next()`` returned last starts in the file, and its length in bytes (without its newline).
    public private(set) var lastLine: (offset: Int64, length: Int) = (0, 0)

    /// Opens `path` (`-`: standard input).
    public init(path: String) throws {
        if path == "-" {
            descriptor = STDIN_FILENO
            owner = nil
        } else {
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            owner = DescriptorOwner(descriptor)
        }
        isStream = Self.isStream(descriptor)
    }

    /// Closes the file (not standard input), once: a second call, from this reader or a copy, does nothing.
    public func finish() { owner?.close() }

    /// True for a list read as it comes (a pipe, a FIFO, a terminal, a socket): its next line may be long in coming.
    public let isStream: Bool

    /// True when `descriptor` is no regular file.
    private static func isStream(_ descriptor: Int32) -> Bool {
        var info = stat()
        return fstat(descriptor, &info) != 0 || (info.st_mode & S_IFMT) != S_IFREG
    }

    /// True when a line (or the end) can be read within `milliseconds`: one is buffered already, or the descriptor
    /// becomes readable by then. For a stream only: a file is always ready.
    public func isReady(within milliseconds: Int32) -> Bool {
        if isAtEnd || buffer[scanned...].contains(UInt8(ascii: "\n")) { return true }
        var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        while true {
            let got = poll(&waiting, 1, milliseconds)
            if got < 0, errno == EINTR { continue }
            // An error is ready too: the read says what it is.
            return got != 0
        }
    }

    /// The number of lines (blank lines and comments included) of a regular file, counted from where reading
    /// starts without moving it (newlines only: a fraction of a second for millions); nil for anything that
    /// can be read only once (a pipe, a FIFO, a terminal), which is never read twice.
    public func countLines() throws -> Int? {
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        var offset = lseek(descriptor, 0, SEEK_CUR)
        guard offset >= 0 else { return nil }
        let size = 1 << 20
        let chunk = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
        defer { chunk.deallocate() }
        var lines = 0
        var last = UInt8(ascii: "\n")
        while true {
            let got = pread(descriptor, chunk, size, offset)
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            if got == 0 { break }
            offset += off_t(got)
            var position = chunk
            let end = chunk + got
            while position < end, let found = memchr(position, Int32(UInt8(ascii: "\n")), end - position) {
                lines += 1
                position = found + 1
            }
            last = chunk.load(fromByteOffset: got - 1, as: UInt8.self)
        }
        // A last line without its newline counts too.
        return last == UInt8(ascii: "\n") ? lines : lines + 1
    }

    /// The next line without its newline, with its 1-based number; nil at the end. A line longer than
    /// ``InputList/longestLine`` throws ``InputList/Problem`` with its number.
    public mutating func next() throws -> (line: Substring, number: Int)? {
        try nextBytes { bytes, number in (Substring(Self.text(of: bytes, number: number)), number) }
    }

    /// `body` over the next line's bytes (without its newline, valid only during the call) and its 1-based number;
    /// nil at the end, without calling it. No string is made: what ``next()`` does for a reader that needs only some
    /// lines as text. A line longer than ``InputList/longestLine`` throws ``InputList/Problem`` with its number.
    public mutating func nextBytes<Result>(
        _ body: (_ line: UnsafeRawBufferPointer, _ number: Int) throws -> Result
    ) throws -> Result? {
        while true {
            let newline = buffer.withUnsafeBytes { bytes -> Int? in
                guard scanned < bytes.count,
                    let found = memchr(bytes.baseAddress! + scanned, Int32(UInt8(ascii: "\n")), bytes.count - scanned)
                else { return nil }
                return bytes.baseAddress!.distance(to: UnsafeRawPointer(found))
            }
            let end: Int
            if let newline {
                end = newline
            } else {
                scanned = buffer.count
                try checkLength(buffer.count - start)
                guard isAtEnd else {
                    try fill()
                    continue
                }
                guard start < buffer.count else { return nil }
                end = buffer.count
            }
            try checkLength(end - start)
            lastLine = (consumed + Int64(start), end - start)
            let line = start..<end
            start = min(end + 1, buffer.count)
            scanned = start
            number += 1
            return try buffer.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[line]), number) }
        }
    }

    /// Line `number`'s bytes as text (UTF-8, an invalid sequence replaced), the byte-order mark a list saved by
    /// Notepad begins with dropped from the first line.
    public static func text(of line: UnsafeRawBufferPointer, number: Int) -> String {
        withoutByteOrderMark(String(decoding: line, as: UTF8.self), number - 1)
    }

    /// The first line (`before`: the lines read before it, 0) without the UTF-8 byte-order mark a list saved by Notepad
    /// begins with: a text reader skips it. Any other line as it is.
    private static func withoutByteOrderMark(_ line: String, _ before: Int) -> String {
        guard before == 0, line.unicodeScalars.first == "\u{FEFF}" else { return line }
        return String(line.unicodeScalars.dropFirst())
    }

    /// Refuses the line being read once it is longer than ``InputList/longestLine``.
    private func checkLength(_ length: Int) throws {
        guard length > InputList.longestLine else { return }
        throw InputList.Problem(line: number + 1, reason: "longer than \(InputList.longestLine) bytes")
    }

    /// Reads the next chunk, keeping the unread part of the buffer.
    private mutating func fill() throws {
        if start > 0 {
            consumed += Int64(start)
            buffer.removeSubrange(0..<start)
            scanned -= start
            start = 0
        }
        let chunk = 1 << 16
        let old = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: chunk))
        var got = 0
        repeat {
            got = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + old, chunk) }
        } while got < 0 && errno == EINTR
        guard got >= 0 else {
            buffer.removeLast(chunk)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        buffer.removeLast(chunk - got)
        if got == 0 { isAtEnd = true }
    }
}

/// A descriptor closed exactly once (see ``LineReader``).
final class DescriptorOwner: @unchecked Sendable {
    private let lock = NSLock()
    private var descriptor: Int32

    init(_ descriptor: Int32) { self.descriptor = descriptor }

    /// Closes the descriptor the first time; later calls do nothing.
    func close() {
        let open: Int32 = lock.withLock {
            defer { descriptor = -1 }
            return descriptor
        }
        #if canImport(Glibc)
            if open >= 0 { _ = Glibc.close(open) }
        #elseif canImport(Darwin)
            if open >= 0 { _ = Darwin.close(open) }
        #endif
    }
}
