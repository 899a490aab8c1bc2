import Foundation
import NetworkQueue

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// File names for `--output`: taken from each URL's last path component or the list's `out=` (or, with
/// `--content-disposition`, the response's name, which the library makes safe by the same rule), in the list's `dir=`
/// folder or the URL's (`--tree`), made safe by the one rule every name follows (``FileName``), and made unique
/// within the list.
public enum FileNames {
    /// True when `origin`'s file is there for a line named `url`: what `--no-clobber` keeps. That is a regular file
    /// (a link to one counts) at `url` that records `origin` or no origin at all (``FileOrigin``); where the file at
    /// `url` records another URL, it is another's, and the line's own file is the first of the names beside it
    /// (`-2`, `-3`…) that records `origin`, looked for until a name is free. A directory, a FIFO or a device under a
    /// download's name is not a download.
    public static func holdsFile(at url: URL, of origin: URL) -> Bool {
        let path = url.path
        guard let standing = standing(ofFileAt: path, to: origin) else { return false }
        guard standing == .foreign else { return true }
        let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")).map { path.index(after: $0) } ?? path.startIndex
        let (folder, name) = (String(path[..<slash]), String(path[slash...]))
        for counter in 2..<1_000 {
            switch Self.standing(ofFileAt: folder + FileName.numbered(name, counter), to: origin) {
            case nil: return false
            case .own?: return true
            case .unknown?, .foreign?: continue
            }
        }
        return false
    }

    /// How the regular file at `path` stands to `origin` (nil: no regular file there).
    private static func standing(ofFileAt path: String, to origin: URL) -> FileOrigin.Standing? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return FileOrigin.standing(ofFileAt: path, to: FileOrigin.text(of: origin))
    }

    /// A safe name for `url`: percent-decoded, `/`, `\` and `..` made `_`, then safe by ``FileName/safe(_:)``;
    /// "download" when nothing is left.
    public static func safeName(for url: URL) -> String { safeName(of: url.lastPathComponent) }

    /// `component` (a URL's path component, percent-encoded or not) made safe as ``safeName(for:)`` makes a URL's.
    public static func safeName(of component: String) -> String {
        if !component.utf8.contains(UInt8(ascii: "%")), let plain = FileName.safe(component), plain == component,
            plain != "_"
        {
            return plain
        }
        let decoded = component.removingPercentEncoding ?? component
        var name = String(
            decoded.unicodeScalars.map { scalar -> Character in
                scalar == "/" || scalar == "\\" ? "_" : Character(scalar)
            })
        while name.contains("..") { name = name.replacingOccurrences(of: "..", with: "_") }
        guard let safe = FileName.safe(name), safe != "_" else { return "download" }
        return safe
    }

    /// The folders `--tree` keeps for `url` under the output folder: its host (with `:port` when the URL gives one),
    /// then the folders of its path, each made safe, less the first `cutDirs` of them (wget's `-x --cut-dirs`).
    public static func treeFolders(for url: URL, cutDirs: Int) -> [String] {
        var host = safeName(of: (url.host ?? "host").lowercased())
        if let port = url.port { host += ":\(port)" }
        let folders = url.pathComponents.dropFirst().dropLast().dropFirst(max(0, cutDirs))
        return [host] + folders.map { safeName(of: $0) }
    }

    /// The place under the output folder (folders and name) a list entry's file is named from, before it is made
    /// unique: its `out=` name or its URL's, in its `dir=` folders, else `--tree`'s (`cutDirs` non-nil), else the
    /// output folder itself.
    public static func base(for url: URL, name: String?, folders: [String]?, treeCutDirs: Int?) -> NamedPlace {
        let name = name ?? safeName(for: url)
        if let folders { return NamedPlace(folders: folders, name: name) }
        if let cutDirs = treeCutDirs { return NamedPlace(folders: treeFolders(for: url, cutDirs: cutDirs), name: name) }
        return NamedPlace(folders: [], name: name)
    }

    /// Safe names for `urls`, in order (see ``FileNamer``).
    public static func names(for urls: [URL]) -> [String] {
        var namer = FileNamer()
        return urls.map { namer.name(for: $0) }
    }
}

/// A file's place under the output folder as the Demo names it: folders (each a safe component) and a safe name.
public struct NamedPlace: Hashable, Sendable {
    public var folders: [String]
    public var name: String

    public init(folders: [String], name: String) {
        self.folders = folders
        self.name = name
    }

    /// Its path under the output folder, components joined by `/`: how it is shown and made unique.
    public var relativePath: String { (folders + [name]).joined(separator: "/") }

    /// The folder's own place, checked by the output folder's guardian.
    public func place() throws(OutputFolder.Problem) -> OutputFolder.Place {
        try OutputFolder.Place(folders: folders, name: name)
    }
}

/// Names the URLs of a list in order, each unique: a name taken by an earlier URL (whatever the case) gets
/// `-2`, `-3`… before its extension, the first of those not taken.
///
/// Constant time per URL: each base name remembers the next counter to try (a name once taken stays taken,
/// so the counters below it need no second look), and the names taken are kept as 64-bit fingerprints of
/// their lowercased text: 8 bytes each in an open-addressed table, about 13 bytes per line at most. Two
/// different names with one fingerprint (about one chance in 10^12 for a million lines) would only give the
/// second a `-2` it did not need: still unique, and still the same in every run and every shard, which name
/// the whole list in the same order.
public struct FileNamer: Sendable {
    private var taken = FingerprintSet()
    /// For each base name that was taken twice or more: the next counter to try.
    private var nextCounter: [String: Int] = [:]

    public init() {}

    /// Marks `relativePath` (a path under the output folder, as ``NamedPlace/relativePath`` spells it) taken: a file
    /// of the program's own lies there (the list, say), which no line's file may replace.
    public mutating func reserve(_ relativePath: String) {
        _ = taken.insert(Fingerprint.of(relativePath.lowercased()))
    }

    /// The name of the next URL of the list.
    public mutating func name(for url: URL) -> String { name(forBase: FileNames.safeName(for: url)) }

    /// The name of the next entry whose safe base name is `base`.
    public mutating func name(forBase base: String) -> String {
        place(for: NamedPlace(folders: [], name: base)).name
    }

    /// The place of the next entry whose safe base place is `base`: the same folders, its name unique among the
    /// list's places (whatever the case), `-2`, `-3`… before its extension when taken (``FileName/numbered(_:_:)``).
    public mutating func place(for base: NamedPlace) -> NamedPlace {
        let key = base.relativePath.lowercased()
        if taken.insert(Fingerprint.of(key)) { return base }
        var counter = nextCounter[key] ?? 2
        while true {
            var candidate = base
            candidate.name = FileName.numbered(base.name, counter)
            counter += 1
            if taken.insert(Fingerprint.of(candidate.relativePath.lowercased())) {
                nextCounter[key] = counter
                return candidate
            }
        }
    }
}

/// FNV-1a, 64 bits: the same value for the same text in every process (unlike `Hasher`, seeded per process).
public enum Fingerprint {
    public static func of(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }
}

/// A set of 64-bit fingerprints in one open-addressed array (0 marks an empty slot; a fingerprint of 0 is
/// stored as 1).
struct FingerprintSet: Sendable {
    private var slots = [UInt64](repeating: 0, count: 1_024)
    private(set) var count = 0

    /// Inserts `fingerprint`; false when it was there already.
    mutating func insert(_ fingerprint: UInt64) -> Bool {
        if (count + 1) * 10 > slots.count * 7 { grow() }
        let value = fingerprint == 0 ? 1 : fingerprint
        let mask = slots.count - 1
        // Mixed, so that fingerprints alike in their low bits spread over the table.
        var index = Int(truncatingIfNeeded: (value &* 0x9E37_79B9_7F4A_7C15) >> 20) & mask
        while slots[index] != 0 {
            if slots[index] == value { return false }
            index = (index + 1) & mask
        }
        slots[index] = value
        count += 1
        return true
    }

    private mutating func grow() {
        let old = slots
        slots = [UInt64](repeating: 0, count: old.count * 2)
        count = 0
        for value in old where value != 0 { _ = insert(value) }
    }
}
