import Foundation

/// A fresh ext4 file system for the small files' second row: an image in `/dev/shm` (so that the disk under the
/// machine does not decide), made with `mkfs.ext4` and loop-mounted on a folder of its own, unmounted and deleted by
/// ``stop()``. The kind of file system users have, which charges more for each metadata step than tmpfs does (a
/// loop device's latency is RAM's, not a disk's). Nil when this process cannot make one: it needs root, `mkfs.ext4`
/// and a loop device; the row is then left out, and said so.
final class Ext4Folder {
    let mountPoint: URL
    private let image: String

    init?() {
        let mkfs = ["/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"].first(
            where: FileManager.default.isExecutableFile(atPath:))
        guard getuid() == 0, let mkfs, FileManager.default.isWritableFile(atPath: "/dev/shm") else { return nil }
        image = "/dev/shm/nq-peers-ext4-\(getpid()).img"
        mountPoint = URL(fileURLWithPath: "/tmp/nq-peers-ext4-\(getpid())", isDirectory: true)
        guard Self.succeeds("/usr/bin/truncate", ["-s", "3G", image]), Self.succeeds(mkfs, ["-q", "-F", image]) else {
            unlink(image)
            return nil
        }
        try? FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        guard Self.succeeds("/bin/mount", ["-o", "loop", image, mountPoint.path]) else {
            try? FileManager.default.removeItem(at: mountPoint)
            unlink(image)
            return nil
        }
    }

    /// Unmounts the file system and deletes its image.
    func stop() {
        _ = Self.succeeds("/bin/umount", [mountPoint.path])
        try? FileManager.default.removeItem(at: mountPoint)
        unlink(image)
    }

    /// Runs `tool` with `arguments` (``run(_:_:)``, its output discarded); true when it exits with 0.
    private static func succeeds(_ tool: String, _ arguments: [String]) -> Bool { (try? run(tool, arguments)) != nil }
}
