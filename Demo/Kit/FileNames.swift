import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// File names for `--output`: taken from each URL's last path component (never from a server's header) or the
/// list's `out=`, in the list's `dir=` folder or the URL's (`--tree`), made safe, and made unique within the list.
public enum FileNames {
    /// True when a regular file is at `url` (a link to one counts): what `--no-clobber` keeps. A directory, a
    /// FIFO or a device under a download's name is not a download.
    public static func isRegularFile(_ url: URL) -> Bool {
        var info = stat()
        return stat(url.path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }
    /// A safe name for `url`: percent-decoded, without `/`, `\`, NUL or control characters, no `..`,
    /// not starting with a dot, at most 200 bytes; "download" when nothing is left.
    public static func safeName(for url: URL) -> String { safeName(of: url.lastPathComponent) }

    /// `component` (a URL's path component, percent-encoded or not) made safe as ``safeName(for:)`` makes a URL's.
    public static func safeName(of component: String) -> String {
        if isPlain(component) { return component }
        let decoded = component.removingPercentEncoding ?? component
        var name = String(
            decoded.unicodeScalars.map { scalar -> Character in
                scalar == "/" || scalar == "\\" || scalar.properties.generalCategory == .control
                    ? "_" : Character(scalar)
            })
        while name.contains("..") { name = name.replacingOccurrences(of: "..", with: "_") }
        while name.hasPrefix(".") { name.removeFirst() }
        while name.utf8.count > 200 { name.removeLast() }
        return name.isEmpty || name == "_" ? "download" : name
    }

    /// True when `name` is already safe as it is, as most are: printable ASCII without `%`, `/`, `\\` or `..`, not
    /// starting with a dot, 1 to 200 bytes. Such a name needs no decoding and no look at each character.
    static func isPlain(_ name: String) -> Bool {
        let bytes = name.utf8
        guard !bytes.isEmpty, bytes.count <= 200, bytes.first != 0x2E else { return false }
        var previous: UInt8 = 0
        for byte in bytes {
            guard byte > 0x20, byte < 0x7F, byte != 0x25, byte != 0x2F, byte != 0x5C else { return false }
            if byte == 0x2E, previous == 0x2E { return false }
            previous = byte
        }
        return name != "_"
    }

    /// The folder `--tree` keeps for `url` under the output folder: its host (with `:port` when the URL gives one),
    /// then the folders of its path, each made safe, less the first `cutDirs` of them (wget's `-x --cut-dirs`).
    public static func treeFolder(for url: URL, cutDirs: Int) -> String {
        var host = safeName(of: (url.host ?? "host").lowercased())
        if let port = url.port { host += ":\(port)" }
        let folders = url.pathComponents.dropFirst().dropLast().dropFirst(max(0, cutDirs))
        return ([host] + folders.map { safeName(of: $0) }).joined(separator: "/")
    }

    /// The path under the output folder (`folder/name`, or `name`) a list entry's file is named from, before it is
    /// made unique: its `out=` name or its URL's, in its `dir=` folder, else `--tree`'s (`cutDirs` non-nil), else the
    /// output folder itself.
    public static func base(for url: URL, name: String?, folder: String?, treeCutDirs: Int?) -> String {
        let name = name ?? safeName(for: url)
        if let folder { return folder + "/" + name }
        if let cutDirs = treeCutDirs { return treeFolder(for: url, cutDirs: cutDirs) + "/" + name }
        return name
    }

    /// Safe names for `urls`, in order (see ``FileNamer``).
    public static func names(for urls: [URL]) -> [String] {
        var namer = FileNamer()
        return urls.map { namer.name(for: $0) }
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
public struct FileNamer {
    private var taken = FingerprintSet()
    /// For each base name that was taken twice or more: the next counter to try.
    private var nextCounter: [String: Int] = [:]

    public init() {}

    /// The name of the next URL of the list.
    public mutating func name(for url: URL) -> String { name(forBase: FileNames.safeName(for: url)) }

    /// The name of the next entry whose safe base name is `base`.
    public mutating func name(forBase base: String) -> String {
        let key = base.lowercased()
        if taken.insert(Fingerprint.of(key)) { return base }
        let (stem, ext) = Self.split(base)
        var counter = nextCounter[key] ?? 2
        while true {
            let candidate = ext.isEmpty ? "\(stem)-\(counter)" : "\(stem)-\(counter).\(ext)"
            counter += 1
            if taken.insert(Fingerprint.of(candidate.lowercased())) {
                nextCounter[key] = counter
                return candidate
            }
        }
    }

    /// `name` as its stem and extension (as `NSString`'s path extension rules: the part after the last dot,
    /// when the name does not start with it).
    private static func split(_ name: String) -> (stem: String, ext: String) {
        let ns = name as NSString
        return (ns.deletingPathExtension, ns.pathExtension)
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
struct FingerprintSet {
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
