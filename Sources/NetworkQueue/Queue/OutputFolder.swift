import CurlShim
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The guardian of an output folder: every path below it is made from components it checked, and every folder
/// below it is made and entered without following a link, so that no name a server or a list gives reaches a
/// part, another line's file or anything outside.
///
/// ```swift
/// let folder = try OutputFolder(path: "downloads")
/// let place = try OutputFolder.Place(folders: ["2026", "reports"], name: "q3.pdf")
/// let request = NetworkRequest(
///     url: URL(string: "https://example.com/q3.pdf")!, destination: .file(folder.url(for: place)),
///     fileOptions: .init(outputFolder: folder))
/// ```
///
/// Given as a request's ``NetworkRequest/FileOptions-swift.struct/outputFolder``, the folder is asked about the
/// request's destination as the request is added: a destination that is not beneath it, whose name ends in one of
/// the ``FileName/reservedSuffixes``, or on whose way a symbolic link (or anything but a folder) lies fails alone
/// with ``NetworkQueueError/InvalidRequestReason/unsafeDestination(_:reason:)``, before anything is written. The
/// folders on the way are made as needed. On Linux the check is one `openat2` with `RESOLVE_BENEATH |
/// RESOLVE_NO_SYMLINKS` (kernels 5.6 and later), else a walk that opens each folder with `O_NOFOLLOW`. The folder
/// itself is the user's choice: a link on the way *to* it is followed, as any path a user gives.
///
/// The folder of each file is opened that way again as its part opens and held until the file is in place: every
/// later step of the file is relative to that open folder, and a folder swapped for a link while the file was written
/// fails the file with ``NetworkQueueError/fileError(path:reason:)``, nothing written through the link.
public final class OutputFolder: Sendable {
    /// The folder's absolute path, as given (made absolute against the working directory), without a trailing `/`.
    public let path: String
    /// The folder, open: folders below it are checked and made relative to it.
    private let descriptor: Int32
    /// `path` and a `/`: every path below the folder begins so.
    private let prefix: String

    /// Why a folder or a place cannot be used.
    public struct Problem: Error, CustomStringConvertible, Equatable, Sendable {
        public let description: String
    }

    /// Makes the folder at `path` if it is missing (its parents too) and opens it. Throws when it cannot be made or
    /// opened, or when something other than a folder is there. With `creating` false (a dry run, which writes
    /// nothing), a missing folder is not made: places are named in it, and a destination in it is refused.
    public init(path: String, creating: Bool = true) throws(Problem) {
        guard !path.isEmpty, !path.utf8.contains(0) else { throw Problem(description: "no folder named") }
        var absolute = path.hasPrefix("/") ? path : Self.workingDirectory() + "/" + path
        while absolute.count > 1, absolute.hasSuffix("/") { absolute.removeLast() }
        self.path = absolute
        prefix = absolute == "/" ? "/" : absolute + "/"
        if creating {
            do {
                try FileManager.default.createDirectory(atPath: absolute, withIntermediateDirectories: true)
            } catch {
                throw Problem(description: Self.reason(ofMaking: absolute, error))
            }
        }
        let fd = open(absolute, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 || (!creating && errno == ENOENT) else {
            throw Problem(description: errno == ENOTDIR ? "it is not a folder" : String(cString: strerror(errno)))
        }
        descriptor = fd
    }

    deinit { if descriptor >= 0 { close(descriptor) } }

    /// A place below an output folder: folders and a name, each one checked path component.
    public struct Place: Hashable, Sendable {
        /// The folders from the output folder down, each one component.
        public let folders: [String]
        /// The file's name.
        public let name: String

        /// The place `name` in `folders`. Throws when a component is empty, `.` or `..`, holds `/` or NUL, or is
        /// longer than 255 bytes, or when `name` ends in one of the ``FileName/reservedSuffixes``.
        public init(folders: [String] = [], name: String) throws(Problem) {
            for folder in folders {
                if let problem = OutputFolder.problem(withComponent: folder) {
                    throw Problem(description: "folder '\(folder)' \(problem)")
                }
            }
            if let problem = OutputFolder.problem(withComponent: name) {
                throw Problem(description: "name '\(name)' \(problem)")
            }
            if let suffix = FileName.reservedSuffix(of: name) {
                throw Problem(
                    description: "name '\(name)' ends in \(suffix), a download's own file beside its destination")
            }
            self.folders = folders
            self.name = name
        }

        /// The path below the output folder: its components joined by `/`.
        public var relativePath: String { (folders + [name]).joined(separator: "/") }
    }

    /// Why `component` cannot be one path component, or nil.
    static func problem(withComponent component: String) -> String? {
        if component.isEmpty || component == "." || component == ".." { return "is not a name" }
        if component.utf8.contains(where: { $0 == UInt8(ascii: "/") || $0 == 0 }) { return "holds / or NUL" }
        if component.utf8.count > 255 { return "is longer than 255 bytes" }
        return nil
    }

    /// The file URL of `place` below this folder (no I/O: the components were checked when the place was made).
    public func url(for place: Place) -> URL { URL(fileURLWithPath: prefix + place.relativePath, isDirectory: false) }

    /// Makes the folders of `place` below this folder, none through a link: nil, or why not (a link, a file or
    /// anything but a folder on the way, or the system's reason).
    public func makeFolders(of place: Place) -> String? { makeFolders(place.folders[...]) }

    /// Why the file destination at `path` may not be written through this folder, or nil: it must lie below the
    /// folder, its name must not be reserved, and its folders are made below it without following a link.
    func refusal(forDestination path: String) -> String? {
        guard descriptor >= 0 else { return "the output folder \(self.path) does not exist" }
        guard path.hasPrefix(prefix), path.utf8.count > prefix.utf8.count else {
            return "it is not inside the output folder \(self.path)"
        }
        let relative = path.utf8.dropFirst(prefix.utf8.count)
        if !relative.contains(UInt8(ascii: "/")) {
            // A file in the folder itself, as most are: its name is the one component, checked on its bytes.
            let isName =
                relative.count <= 255 && !relative.contains(0) && !relative.elementsEqual(".".utf8)
                && !relative.elementsEqual("..".utf8)
            guard isName else { return "'\(String(decoding: relative, as: UTF8.self))' is not a name" }
            guard let suffix = FileName.reservedSuffix(of: path) else { return nil }
            return "its name ends in \(suffix), the name of a download's own file beside its destination"
        }
        let components = relative.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
            .map { String(decoding: $0, as: UTF8.self) }
        for component in components {
            if let problem = Self.problem(withComponent: component) { return "'\(component)' \(problem)" }
        }
        if let suffix = FileName.reservedSuffix(of: components[components.count - 1]) {
            return "its name ends in \(suffix), the name of a download's own file beside its destination"
        }
        return components.count == 1 ? nil : makeFolders(components.dropLast())
    }

    /// What is at `path`, a destination ``refusal(forDestination:)`` accepted, looked up in the folder held when the
    /// destination is directly in it (no path walked from the root, and the folder the files go to is the one asked);
    /// nil for a destination in a folder below it.
    func entry(ofDestination path: String) -> FileSink.Entry? {
        guard descriptor >= 0, path.hasPrefix(prefix) else { return nil }
        let relative = path.utf8.dropFirst(prefix.utf8.count)
        guard !relative.isEmpty, !relative.contains(UInt8(ascii: "/")) else { return nil }
        return FileSink.entry(at: String(Substring(relative)), in: descriptor)
    }

    /// Makes `folders` (components) below this folder, none through a link; nil, or why not.
    private func makeFolders(_ folders: ArraySlice<String>) -> String? {
        if folders.isEmpty { return nil }
        switch openFolder(folders: Array(folders)) {
        case .failure(let problem): return problem.description
        case .success(let fd):
            if fd != descriptor { close(fd) }
            return nil
        }
    }

    /// The folder's own descriptor (the output folder itself held open): not to be closed.
    var heldDescriptor: Int32 { descriptor }

    /// Opens the folder of the destination at `path` (a destination ``refusal(forDestination:)`` accepted), making
    /// what is missing, without following a link: its descriptor (``heldDescriptor`` for a file in the folder itself,
    /// else the caller's to close) and its folders below this one, or why not.
    func openFolder(of path: String) -> Result<(fd: Int32, folders: [String]), Problem> {
        guard descriptor >= 0 else {
            return .failure(Problem(description: "the output folder \(self.path) does not exist"))
        }
        let relative = path.utf8.dropFirst(prefix.utf8.count)
        guard path.hasPrefix(prefix), path.utf8.count > prefix.utf8.count else {
            return .failure(Problem(description: "it is not inside the output folder \(self.path)"))
        }
        guard let slash = relative.lastIndex(of: UInt8(ascii: "/")) else { return .success((descriptor, [])) }
        let folders = relative[..<slash].split(separator: UInt8(ascii: "/")).map { String(decoding: $0, as: UTF8.self) }
        return openFolder(folders: folders).map { ($0, folders) }
    }

    /// Opens `folders` (components) below this folder, none through a link, making what is missing (unless `making` is
    /// false): its descriptor (``heldDescriptor`` when `folders` is empty, else the caller's to close), or why not.
    func openFolder(folders: [String], making: Bool = true) -> Result<Int32, Problem> {
        if folders.isEmpty { return .success(descriptor) }
        guard descriptor >= 0 else { return .failure(Problem(description: "the output folder \(path) does not exist")) }
        // Most folders are there already: one call checks the whole way.
        let beneath = nq_open_beneath(descriptor, folders.joined(separator: "/"), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if beneath >= 0 { return .success(beneath) }
        // Missing, refused or not known to this kernel: the walk makes what is missing and says what is in the way.
        var parent = descriptor
        var walked = ""
        // The folder walked so far is closed with any failure (never the output folder's own).
        func failed(_ reason: String) -> Result<Int32, Problem> {
            if parent != descriptor { close(parent) }
            return .failure(Problem(description: reason))
        }
        for folder in folders {
            walked += walked.isEmpty ? folder : "/" + folder
            if making, mkdirat(parent, folder, 0o755) != 0, errno != EEXIST {
                return failed("cannot make the folder \(walked): \(String(cString: strerror(errno)))")
            }
            let next = openat(parent, folder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard next >= 0 else {
                let failure = errno
                var info = stat()
                let isLink =
                    fstatat(parent, folder, &info, AT_SYMLINK_NOFOLLOW) == 0 && (info.st_mode & S_IFMT) == S_IFLNK
                if isLink || failure == ELOOP {
                    return failed(
                        "\(walked) in the output folder is a symbolic link: nothing is written through a link")
                }
                if failure == ENOTDIR { return failed("\(walked) in the output folder is not a folder") }
                return failed("cannot open the folder \(walked): \(String(cString: strerror(failure)))")
            }
            if parent != descriptor { close(parent) }
            parent = next
        }
        return .success(parent)
    }

    /// The working directory's absolute path.
    private static func workingDirectory() -> String {
        guard let cwd = getcwd(nil, 0) else { return "." }
        defer { free(cwd) }
        return String(cString: cwd)
    }

    /// What went wrong making the folder at `path`: "is not a folder" when a file is there.
    private static func reason(ofMaking path: String, _ error: any Error) -> String {
        var info = stat()
        if stat(path, &info) == 0, (info.st_mode & S_IFMT) != S_IFDIR { return "it is not a folder" }
        return (error as NSError).localizedFailureReason ?? error.localizedDescription
    }
}
