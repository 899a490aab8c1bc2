import Foundation

/// File names for `--output`: taken from each URL's last path component only (never from a server's
/// header), made safe, and made unique within one run.
enum FileNames {
    /// A safe name for `url`: percent-decoded, without `/`, `\`, NUL or control characters, no `..`,
    /// not starting with a dot, at most 200 bytes; "download" when nothing is left.
    static func safeName(for url: URL) -> String {
        let component = url.lastPathComponent
        let decoded = component.removingPercentEncoding ?? component
        var name = String(decoded.unicodeScalars.map { scalar -> Character in
            scalar == "/" || scalar == "\\" || scalar.properties.generalCategory == .control ? "_" : Character(scalar)
        })
        while name.contains("..") { name = name.replacingOccurrences(of: "..", with: "_") }
        while name.hasPrefix(".") { name.removeFirst() }
        while name.utf8.count > 200 { name.removeLast() }
        return name.isEmpty || name == "_" ? "download" : name
    }

    /// Safe names for `urls`, in order; a name taken by an earlier URL gets `-2`, `-3`… before its extension.
    static func names(for urls: [URL]) -> [String] {
        var taken: Set<String> = []
        return urls.map { url in
            let base = safeName(for: url)
            var name = base
            var counter = 2
            while taken.contains(name.lowercased()) {
                let ext = (base as NSString).pathExtension
                let stem = (base as NSString).deletingPathExtension
                name = ext.isEmpty ? "\(stem)-\(counter)" : "\(stem)-\(counter).\(ext)"
                counter += 1
            }
            taken.insert(name.lowercased())
            return name
        }
    }
}
