import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The files of a folder by the origin each records (``FileOrigin``), read once per folder and queue: where an earlier
/// run saved the file of a URL whose response named it (``NetworkRequest/FileOptions-swift.struct/namesFileFromResponse``),
/// so that a rerun revalidates that file (``NetworkRequest/ExistingFile/revalidate``) instead of fetching a second copy.
///
/// Reading a folder costs one attribute read a regular file (about 0.3 s for 100,000 files), and happens only for
/// requests that both name their files from responses and revalidate.
final class OriginIndex: Sendable {
    /// Folder path → origin text → the file's name in it (the first found, when several record one origin).
    private let folders = Locked([String: [String: String]]())

    /// The path of the regular file in `folder` that records `origin`, read when the folder is first asked about.
    func file(recording origin: String, in folder: String) -> String? {
        if let known = folders.withLock({ $0[folder] }) { return known[origin].map { folder + "/" + $0 } }
        let read = Self.read(folder)
        let index = folders.withLock { folders in
            if let known = folders[folder] { return known }
            folders[folder] = read
            return read
        }
        return index[origin].map { folder + "/" + $0 }
    }

    /// The origins of the regular files directly in `folder` (links, parts and their records left out).
    private static func read(_ folder: String) -> [String: String] {
        guard let directory = opendir(folder) else { return [:] }
        defer { closedir(directory) }
        var index: [String: String] = [:]
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            guard name != ".", name != "..", FileName.reservedSuffix(of: name) == nil else { continue }
            let path = folder + "/" + name
            guard case .regular = FileSink.entry(at: path), case .url(let origin) = FileOrigin.recorded(atPath: path),
                !origin.isEmpty, index[origin] == nil
            else { continue }
            index[origin] = name
        }
        return index
    }
}
