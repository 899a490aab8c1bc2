import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes all of `bytes` to `fd` (at `offset` when given), retrying short writes and interruptions; false on an error
/// (errno says which): the session file's writes and `-o -`'s.
public func writeWhole(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64? = nil) -> Bool {
    var done = 0
    while done < bytes.count {
        let pointer = bytes.baseAddress! + done
        let written =
            offset.map { pwrite(fd, pointer, bytes.count - done, off_t($0) + off_t(done)) }
            ?? write(fd, pointer, bytes.count - done)
        if written < 0, errno == EINTR { continue }
        guard written > 0 else { return false }
        done += written
    }
    return true
}
