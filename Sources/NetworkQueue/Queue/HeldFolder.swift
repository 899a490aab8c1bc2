import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The folder a file's part, its record and its destination lie in, held from the part's open to the file's commit
/// (DESIGN semantics 22): every later step of the file (the part, its name, its rename or link, its
/// removal) names its entry relative to this folder (`openat`, `linkat`, `renameat`, `unlinkat`), so that a folder
/// swapped for a link after it was checked is never followed.
///
/// Below an ``OutputFolder`` the folder is opened by its guardian, without following a link, and held open; the
/// commit asks the guardian again whether the same folder still stands at its place (``refusalAtCommit()``). Without
/// one the folder is the user's path, followed as any path a user gives: names are then absolute paths relative to
/// the working directory's descriptor (`AT_FDCWD`), which costs no call, and one shared object (``unguarded``) stands
/// for every such folder.
final class HeldFolder: Sendable {
    /// The descriptor names are relative to: the folder's own, or `AT_FDCWD`.
    let fd: Int32
    /// The guardian that opened it, and its folders below the guardian's (nil: the user's path, not guarded).
    private let guardian: OutputFolder?
    private let folders: [String]
    /// True when ``fd`` is this object's own (a folder below the guardian's), closed with it.
    private let ownsDescriptor: Bool

    private init(fd: Int32, guardian: OutputFolder?, folders: [String], ownsDescriptor: Bool) {
        self.fd = fd
        self.guardian = guardian
        self.folders = folders
        self.ownsDescriptor = ownsDescriptor
    }

    deinit { if ownsDescriptor { closeDescriptor(fd) } }

    /// Every folder no guardian holds: names are absolute paths, relative to `AT_FDCWD`.
    static let unguarded = HeldFolder(fd: AT_FDCWD, guardian: nil, folders: [], ownsDescriptor: false)

    /// The folder of the file at the absolute `destination`: opened by `guardian` without following a link (nil:
    /// the user's path, unopened: ``unguarded``). Throws why it cannot be.
    static func of(_ destination: String, guardian: OutputFolder?) throws(NetworkQueueError) -> HeldFolder {
        guard let guardian else { return unguarded }
        switch guardian.openFolder(of: destination) {
        case .failure(let problem): throw .fileError(path: destination, reason: problem.description)
        case .success(let (fd, folders)):
            return HeldFolder(
                fd: fd, guardian: guardian, folders: folders, ownsDescriptor: fd != guardian.heldDescriptor)
        }
    }

    /// The name of the entry at the absolute `path` in this folder (its last component `leaf`), as the `*at` calls
    /// take it with ``fd``: the leaf in a folder held, the path itself otherwise (nothing is made).
    func name(leaf: @autoclosure () -> String, path: String) -> String { guardian == nil ? path : leaf() }

    /// The name of this folder itself, the folder of the absolute `path` (where an unnamed file is made).
    func ownName(besides path: String) -> String {
        guard guardian == nil else { return "." }
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")), slash != path.utf8.startIndex else { return "/" }
        return String(path[..<slash])
    }

    /// True when the folder is held by a guardian.
    var isGuarded: Bool { guardian != nil }

    /// Why the file may not be moved into place now, or nil: below a guardian, the folder held must still be the one
    /// at its place, reached without a link (one that was swapped for a link, or for another folder, while the file was
    /// written fails the file: it never goes through the link, nor anywhere the user did not name).
    func refusalAtCommit() -> String? {
        guard let guardian, !folders.isEmpty else { return nil }
        // Opened as it stands, nothing made: a folder removed meanwhile is not made again by a look.
        switch guardian.openFolder(folders: folders, making: false) {
        case .failure(let problem):
            return "\(problem.description) (the folder was replaced while the file was written)"
        case .success(let fd):
            defer { if fd != guardian.heldDescriptor { closeDescriptor(fd) } }
            var now = stat()
            var held = stat()
            guard fstat(fd, &now) == 0, fstat(self.fd, &held) == 0 else { return String(cString: strerror(errno)) }
            if now.st_dev == held.st_dev, now.st_ino == held.st_ino { return nil }
            return
                "the folder \(folders.joined(separator: "/")) in the output folder was replaced while the file was written"
        }
    }
}
