import Foundation
import NetworkQueue

/// The `--input` list: one request per line, `URL [sha256:HEX|sha512:HEX]`; blank lines and lines that
/// start with `#` are skipped.
enum InputList {
    struct Entry {
        let url: URL
        let checksum: Checksum?
    }

    /// A line that is not `URL [checksum]`, by its 1-based number.
    struct Problem: Error, CustomStringConvertible {
        let line: Int
        let reason: String
        var description: String { "line \(line): \(reason)" }
    }

    static func parse(_ text: String) throws(Problem) -> [Entry] {
        var entries: [Entry] = []
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespaces.union(CharacterSet(charactersIn: "\r")))
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard fields.count <= 2 else {
                throw Problem(line: index + 1, reason: "expected 'URL [sha256:HEX]', found \(fields.count) fields")
            }
            guard let url = DemoOptions.webURL(fields[0]) else {
                throw Problem(line: index + 1, reason: "'\(fields[0])' is not an http(s) URL with a host")
            }
            var checksum: Checksum?
            if fields.count == 2 {
                guard let parsed = Checksum(fields[1]) else {
                    throw Problem(line: index + 1, reason: "'\(fields[1])' is not sha256:<64 hex digits> or sha512:<128 hex digits>")
                }
                checksum = parsed
            }
            entries.append(Entry(url: url, checksum: checksum))
        }
        return entries
    }

    /// Reads the list at `path` (`-`: standard input).
    static func read(_ path: String) throws -> String {
        let data = path == "-" ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: path))
        return String(decoding: data, as: UTF8.self)
    }
}
