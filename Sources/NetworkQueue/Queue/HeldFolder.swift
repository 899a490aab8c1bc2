import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The folder a file's part, its record and its destination lie in, held from the part's open to the file's commit
/// (issue 73, DESIGN semantics 22): every later step of the file (the part, its name, its rename or link, its
/// removal) names its entry relative to this folder (`openat`, `linkat`, `renameat`, `unlinkat`), so that a folder
/// swapped for a link after it was checked is never followed.
///
/// Below an ``OutputFolder`` the folder is opened by its guardian, without following a link, and held open; the
/// commit asks the guardian again whether the same folder still stands at its place (``refusalAtCommit()``). Without
/// one the folder is the user's path, followed as any path a user gives: names are then absolute paths relative to
/// the working directory's descriptor (`AT_FDCWD`), which costs no call.
final class HeldFolder: Sendable {
    /// The descriptor names are relative to: the folder's own, or `AT_FDCWD`.
    let fd: Int32
    /// The folder's absolute path, for messages.
    let path: String
    /// The guardian that opened it, and its folders below the guardian's (nil: the user's path, not guarded).
    private let guardian: OutputFolder?
    private let folders: [String]
    /// True when ``fd`` is this object's own (a folder below the guardian's), closed with it.
    private let ownsDescriptor: Bool

    private init(fd: Int32, path: String, guardian: OutputFolder?, folders: [String], ownsDescriptor: Bool) {
        self.fd = fd
        self.path = path
        self.guardian = guardian
        self.folders = folders
        self.ownsDescriptor = ownsDescriptor
    }

    deinit { if ownsDescriptor { closeDescriptor(fd) } }

    /// The folder of the file at the absolute `destination`: opened by `guardian` without following a link (nil:
    /// the user's path, unopened). Throws why it cannot be.
    static func of(_ destination: String, guardian: OutputFolder?) throws(NetworkQueueError) -> HeldFolder {
        let folderPath = destination.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(destination[..<$0]) } ?? ""
        guard let guardian else {
            return HeldFolder(
                fd: AT_FDCWD, path: folderPath.isEmpty ? "/" : folderPath, guardian: nil, folders: [],
                ownsDescriptor: false)
        }
        switch guardian.openFolder(of: destination) {
        case .failure(let problem): throw .fileError(path: destination, reason: problem.description)
        case .success(let (fd, folders)):
            return HeldFolder(
                fd: fd, path: folderPath, guardian: guardian, folders: folders,
                ownsDescriptor: fd != guardian.heldDescriptor)
        }
    }

    /// The name of the entry `leaf` of this folder, as the `*at` calls take it with ``fd``.
    func name(_ leaf: String) -> String { guardian == nil ? path + "/" + leaf : leaf }

    /// The name of the folder itself (where an unnamed file is made).
    var ownName: String { guardian == nil ? path : "." }

    /// True when the folder is held by a guardian.
    var isGuarded: Bool { guardian != nil }

    /// Why the file may not be moved into place now, or nil: below a guardian, the folder held must still be the one
    /// at its place, reached without a link (one that was swapped for a link, or for another folder, while the file was
    /// written fails the file: it never goes through the link, nor anywhere the user did not name).
    func refusalAtCommit() -> String? {
        guard let guardian, !folders.isEmpty else { return nil }
        switch guardian.openFolder(folders: folders) {
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
