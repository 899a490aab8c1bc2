import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Opens the `--report` file, refusing the paths that would destroy what the run reads or writes: the `--input`
/// list itself (emptying it would end the run at "0/0"), anything inside the `--output` folder (a line would land
/// in a download, or the download would replace the report), and anything that is not a regular file (a FIFO
/// with no reader would hang the run before its first request; a device or a folder is not a report).
///
/// A refused path is bad usage and nothing is touched: the checks come before the file is created or emptied, and
/// the file is opened without blocking, then checked again on the descriptor, so a FIFO put there meanwhile is
/// refused too.
public enum ReportFile {
    /// Why a `--report` path is refused.
    public enum Refusal: Error, Equatable, CustomStringConvertible {
        /// The report is the `--input` list.
        case isTheInputList
        /// The report lies inside the `--output` folder.
        case insideOutput(String)
        /// Something other than a regular file is there.
        case notARegularFile
        /// A file is there that the run may not write (read-only to this user).
        case notWritable
        /// The file cannot be opened or emptied (errno's text).
        case cannotOpen(String)

        public var description: String {
            switch self {
            case .isTheInputList: "it is the --input list, which the run reads"
            case .insideOutput(let folder): "it is inside the --output folder \(folder), where downloads are written"
            case .notARegularFile: "it is not a regular file (a FIFO, a device or a folder is there)"
            case .notWritable: "the file there is read-only to this user"
            case .cannotOpen(let reason): reason
            }
        }

        /// True when the path was refused for what it is (bad usage), not for an error of the system.
        public var isUsage: Bool {
            if case .cannotOpen = self { false } else { true }
        }
    }

    /// Opens `path` for appending, emptied, after checking it against the `--input` list's path (`-`: standard
    /// input) and the `--output` folder. Returns the descriptor (close-on-exec).
    public static func openChecked(path: String, input: String?, output: URL?) throws(Refusal) -> Int32 {
        if let refusal = refusal(forReplacing: path, input: input, output: output) { throw refusal }
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK, 0o644)
        guard fd >= 0 else {
            if errno == ENXIO { throw .notARegularFile }
            throw .cannotOpen(String(cString: strerror(errno)))
        }
        var opened = stat()
        guard fstat(fd, &opened) == 0, (opened.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw .notARegularFile
        }
        if let input, isSameFile(opened, asInput: input) {
            close(fd)
            throw .isTheInputList
        }
        guard ftruncate(fd, 0) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw .cannotOpen(reason)
        }
        return fd
    }

    /// Why `path` may not be written by the run (a report, or a file written beside it and renamed over it at the end,
    /// as `--save-cookies` is), or nil when it may: the `--input` list, inside the `--output` folder, or something
    /// other than a regular file there. Checked before anything is created.
    public static func refusal(forReplacing path: String, input: String?, output: URL?) -> Refusal? {
        var info = stat()
        if stat(path, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFREG else { return .notARegularFile }
            if let input, isSameFile(info, asInput: input) { return .isTheInputList }
            // One rule for every file the run writes, replaced in place or beside and renamed over.
            if access(path, W_OK) != 0 { return .notWritable }
        }
        if let output, isInside(resolved(path), folder: resolved(output.path)) { return .insideOutput(output.path) }
        return nil
    }

    /// True when `info` is the file the `--input` list is read from.
    static func isSameFile(_ info: stat, asInput input: String) -> Bool {
        var other = stat()
        let found = input == "-" ? fstat(0, &other) == 0 : stat(input, &other) == 0
        return found && other.st_dev == info.st_dev && other.st_ino == info.st_ino
    }

    /// `path` absolute, with every link and `..` of its longest existing prefix resolved, and the rest appended
    /// as written (a report or an output folder may not exist yet). Built from its components: no Foundation path
    /// helper sees the text.
    static func resolved(_ path: String) -> String {
        var components: [Substring] = []
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        for component in absolute.split(separator: "/") {
            switch component {
            case ".": continue
            case "..": _ = components.popLast()
            default: components.append(component)
            }
        }
        var existing = components.count
        while existing > 0 {
            let head = "/" + components[..<existing].joined(separator: "/")
            if let real = realpath(head, nil) {
                defer { free(real) }
                let resolvedHead = String(cString: real)
                let tail = components[existing...].joined(separator: "/")
                return tail.isEmpty ? resolvedHead : (resolvedHead == "/" ? "" : resolvedHead) + "/" + tail
            }
            existing -= 1
        }
        return "/" + components.joined(separator: "/")
    }

    /// True when `path` is `folder` or lies under it (both resolved).
    static func isInside(_ path: String, folder: String) -> Bool {
        let base = folder.hasSuffix("/") ? folder : folder + "/"
        return path == folder || path.hasPrefix(base)
    }
}
