/// The one rule for a file's name in an output folder, shared by every name a server or a list gives: a
/// `Content-Disposition` name, a URL's last path component (the Demo's), a list's `out=` and the `-2`, `-3`… that
/// makes a name unique. Pure.
///
/// A safe name is one path component that shows what it is and stands for no file of the project's own:
/// - no control character, NUL, format character (U+202E, the right-to-left override, would show
///   `invoice\u{202E}fdp.exe` as `invoiceexe.pdf`; U+200B and the byte-order mark hide), line or paragraph separator
///   (U+2028, U+2029), `/` or `\`;
/// - no leading or trailing dot or space, never `..`;
/// - at most ``longestName`` bytes, its extension kept when it is short;
/// - never ending in one of the ``reservedSuffixes`` (a part, its validator, a split part's record), so that no
///   response or line can plant a part another download would continue: such a name gets `_` after it.
public enum FileName {
    /// The longest name taken, in UTF-8 bytes: 200, so that the longest suffix a name is given on disk (`-N` and
    /// `.part.segments.new`) still fits the 255 bytes a file system holds.
    public static let longestName = 200

    /// The suffixes of the files a download keeps beside its destination (compared case-insensitively, for file
    /// systems that do): the part, its validator, a split part's record and the record's temporary name.
    public static let reservedSuffixes = [".part", ".part.validator", ".part.segments", ".part.segments.new"]

    /// `text` as one safe name, or nil when nothing of it is left (see ``FileName``). A name that is safe already
    /// comes back as it is.
    public static func safe(_ text: String) -> String? {
        if isPlain(text) { return text }
        var name = String(
            String.UnicodeScalarView(
                text.unicodeScalars.compactMap { scalar -> Unicode.Scalar? in
                    if scalar == "/" || scalar == "\\" { return "_" }
                    return isHidden(scalar) ? nil : scalar
                }))
        while name.contains("..") { name = name.replacingOccurrences(of: "..", with: ".") }
        while let first = name.first, first == "." || first == " " { name.removeFirst() }
        while let last = name.last, last == " " || last == "." { name.removeLast() }
        guard !name.isEmpty else { return nil }
        if name.utf8.count > longestName {
            let ext = split(name).ext
            let keep = ext.isEmpty || ext.utf8.count > 16 ? "" : "." + ext
            var stem = keep.isEmpty ? name : String(name.dropLast(keep.count))
            while stem.utf8.count + keep.utf8.count > longestName { stem.removeLast() }
            name = stem + keep
        }
        if reservedSuffix(of: name) != nil { name += "_" }
        return name
    }

    /// The reserved suffix `name` ends in (see ``reservedSuffixes``), or nil.
    public static func reservedSuffix(of name: String) -> String? {
        // Compared on the bytes, ASCII letters without case: no lowercased copy of every name with a dot.
        let bytes = name.utf8
        return reservedSuffixes.last { suffix in
            let wanted = suffix.utf8
            guard bytes.count >= wanted.count else { return false }
            return zip(bytes.suffix(wanted.count), wanted).allSatisfy { $0 | 0x20 == $1 | 0x20 }
        }
    }

    /// Why `name` (a name a user gave, as a list's `out=`) is not safe as it is, or nil when it is: said so that the
    /// user can mend it, with the limit when it is too long.
    public static func problem(with name: String) -> String? {
        if name.utf8.count > longestName {
            return "longer than \(longestName) bytes (\(name.utf8.count)): the limit leaves room for the -N and .part "
                + "a download adds on disk within the 255 bytes a file system holds"
        }
        if let suffix = reservedSuffix(of: name) {
            return "it ends in \(suffix), the name of a download's own file beside its destination"
        }
        return safe(name) == name
            ? nil : "not a safe file name (no /, \\, control or format characters, leading or trailing dots or spaces)"
    }

    /// `name` with `-counter` before its extension (`f.bin` → `f-2.bin`, `h.tar.gz` → `h.tar-2.gz`, `g` → `g-2`):
    /// how a taken name is made unique, by the library and the Demo alike.
    public static func numbered(_ name: String, _ counter: Int) -> String {
        let (stem, ext) = split(name)
        return ext.isEmpty ? "\(stem)-\(counter)" : "\(stem)-\(counter).\(ext)"
    }

    /// `name` as its stem and extension: the extension is what follows the last dot, when that dot is neither the
    /// first nor the last character.
    static func split(_ name: String) -> (stem: String, ext: String) {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex, name.index(after: dot) != name.endIndex
        else { return (name, "") }
        return (String(name[..<dot]), String(name[name.index(after: dot)...]))
    }

    /// True for a character a name never holds: a control or format character, a line or paragraph separator.
    static func isHidden(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: true
        default: false
        }
    }

    /// True when `name` is safe as it is, as most are: printable ASCII without `/` or `\`, no `..`, no leading or
    /// trailing dot, 1 to ``longestName`` bytes, no reserved suffix. Such a name needs no look at each character.
    static func isPlain(_ name: String) -> Bool {
        let bytes = name.utf8
        guard !bytes.isEmpty, bytes.count <= longestName, bytes.first != 0x2E, bytes.last != 0x2E else { return false }
        var previous: UInt8 = 0
        var dots = 0
        for byte in bytes {
            guard byte > 0x20, byte < 0x7F, byte != 0x2F, byte != 0x5C else { return false }
            if byte == 0x2E {
                if previous == 0x2E { return false }
                dots += 1
            }
            previous = byte
        }
        return dots == 0 || reservedSuffix(of: name) == nil
    }
}
