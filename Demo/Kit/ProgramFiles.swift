import Foundation
import NetworkQueue

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The program's own files (the `--input` list, `--report`, `--save-session`, `--progress-json`, the cookie files and
/// the netrc file), checked together before anything is created, emptied or sent: each is a file of its own, and
/// each that is written may be written (``ReportFile/refusal(forReplacing:input:output:)``). One file under two of
/// them is bad usage (exit 2), through links and other spellings of its path: by device and inode where it exists,
/// else by its resolved path. Two pairs may share a file: `--load-cookies` and `--save-cookies` (a jar read and
/// written back, as curl's `-b jar -c jar`), and `--input` and `--save-session` (a list continued where it is, as
/// aria2's `-i S --save-session S`).
public enum ProgramFiles {
    /// One of the program's files: the option that names it, its path, and whether the run writes it.
    public struct Role: Sendable {
        public let option: String
        public let path: String
        public let writes: Bool

        public init(_ option: String, _ path: String, writes: Bool) {
            self.option = option
            self.path = path
            self.writes = writes
        }
    }

    /// Why `roles` cannot be used together with the `--output` folder `output` (the `--input` list is the role of
    /// `--input`), or nil. Standard input and output (`-`) are nobody's file.
    public static func problem(with roles: [Role], output: URL?) -> String? {
        let files = roles.filter { $0.path != "-" }
        if let output {
            var info = stat()
            if stat(output.path, &info) == 0, (info.st_mode & S_IFMT) != S_IFDIR {
                return "cannot use \(output.path) for --output: it is not a folder"
            }
        }
        let input = roles.first { $0.option == "--input" }?.path
        for (index, first) in files.enumerated() {
            for second in files[(index + 1)...] where !mayShare(first.option, second.option) {
                guard isSameFile(first.path, second.path) else { continue }
                if first.option == "--input" || second.option == "--input" {
                    let other = first.option == "--input" ? second : first
                    return "cannot use \(other.option) \(other.path): it is the --input list, which the run reads"
                }
                return
                    "\(first.option) \(first.path) and \(second.option) \(second.path) are one file: give each its own"
            }
            // The session may be the list it continues (aria2's `-i S --save-session S`): it is made beside the list
            // and renamed over it, while the run reads the list it opened before.
            let replacing = first.option == "--save-session" ? nil : input
            if first.writes,
                let refusal = ReportFile.refusal(forReplacing: first.path, input: replacing, output: output)
            {
                return "cannot write \(first.option) \(first.path): \(refusal)"
            }
        }
        return nil
    }

    /// The paths under `output` of the files of `roles` that lie inside it (read ones: the written ones are refused
    /// there), each as ``NamedPlace/relativePath`` spells a place: no line's file may take one of these names.
    public static func placesInside(_ output: URL, of roles: [Role]) -> [String] {
        let folder = ReportFile.resolved(output.path)
        let prefix = folder.hasSuffix("/") ? folder : folder + "/"
        return roles.filter { $0.path != "-" }.compactMap { role in
            let path = ReportFile.resolved(role.path)
            return path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : nil
        }
    }

    /// True for the options that may name one file: the cookie jar read and written back.
    private static func mayShare(_ first: String, _ second: String) -> Bool {
        let pair = Set([first, second])
        return pair == ["--load-cookies", "--save-cookies"] || pair == ["--input", "--save-session"]
    }

    /// True when `first` and `second` are one file: the same device and inode where both exist, else the same
    /// resolved path.
    static func isSameFile(_ first: String, _ second: String) -> Bool {
        var one = stat()
        var other = stat()
        if stat(first, &one) == 0, stat(second, &other) == 0 {
            return one.st_dev == other.st_dev && one.st_ino == other.st_ino
        }
        return ReportFile.resolved(first) == ReportFile.resolved(second)
    }
}
