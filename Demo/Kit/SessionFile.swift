import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `--save-session FILE`: the lines of the `--input` list not finished yet, in the list's own format, kept exact as the
/// run goes, so that after any end (a kill -9 too) `--input FILE` continues exactly the rest.
///
/// A regular list is copied whole at the start (written beside the file and renamed over it); a list read from a
/// pipe has each line appended as it is read (a pipe's later lines are the producer's to send again). When a line's
/// request finishes, its bytes in the session file are overwritten in place by a comment of the same length (`#` and
/// spaces): one small write at a known offset, no rewrite of the file, so a session of millions of lines costs one
/// `pwrite` a request. Every field of an unfinished line is kept as it was written; line numbers are kept for a
/// copied list. Failed, cancelled and unstarted lines stay. The file is readable by its owner only (a list's URLs may
/// carry signatures or tokens).
public final class SessionFile: @unchecked Sendable {
    private let fd: Int32
    private let lock = NSLock()
    /// True when the list was copied whole: a line is where it is in the list. Else lines are appended as read.
    private let isCopy: Bool
    /// Where the lines of each entry read and not ended lie in the session file (bytes, without their newlines): its
    /// URL line, then its option lines.
    private var lines: [Int: [(offset: Int64, length: Int)]] = [:]
    /// The requests not finished yet of the lines that gave several (a Metalink document's files).
    private var outstanding: [Int: Int] = [:]
    private var end: Int64 = 0
    private var failedToWrite = false

    /// Why the session file could not be made.
    public struct Problem: Error, CustomStringConvertible {
        public let description: String
    }

    /// Makes the session file at `path` for the list at `list` (`-`: standard input): a copy of a regular file's
    /// content, else empty.
    public init(path: String, list: String) throws(Problem) {
        var info = stat()
        let copies = list != "-" && stat(list, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
        // Written beside the file and renamed over it: its folder is what comes before its last `/` ("." for none).
        let folder = path.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(path[..<$0]) } ?? "."
        var template = Array((folder + "/.session.XXXXXX").utf8CString)
        let temporary = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard temporary >= 0 else { throw Problem(description: String(cString: strerror(errno))) }
        let temporaryPath = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var copied: Int64 = 0
        if copies {
            let source = open(list, O_RDONLY | O_CLOEXEC)
            guard source >= 0 else {
                let reason = String(cString: strerror(errno))
                close(temporary)
                unlink(temporaryPath)
                throw Problem(description: reason)
            }
            defer { close(source) }
            let size = 1 << 20
            let chunk = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
            defer { chunk.deallocate() }
            while true {
                let got = read(source, chunk, size)
                if got < 0, errno == EINTR { continue }
                if got == 0 { break }
                guard got > 0, writeWhole(temporary, UnsafeRawBufferPointer(start: chunk, count: got)) else {
                    let reason = String(cString: strerror(errno))
                    close(temporary)
                    unlink(temporaryPath)
                    throw Problem(description: reason)
                }
                copied += Int64(got)
            }
        }
        // Owner-only, as --save-cookies is: the list's URLs may be signed, its lines private.
        guard fchmod(temporary, 0o600) == 0, rename(temporaryPath, path) == 0 else {
            let reason = String(cString: strerror(errno))
            close(temporary)
            unlink(temporaryPath)
            throw Problem(description: reason)
        }
        fd = temporary
        isCopy = copies
        end = copied
    }

    deinit { close(fd) }

    /// The entry of line `number` was read: its lines lie at `spans` in the list; `tracks`: this run fetches it (false
    /// for an entry of another shard, which stays as it is).
    public func noteRead(line number: Int, spans: [InputList.LineSpan], tracks: Bool = true) {
        lock.withLock {
            if isCopy {
                if tracks { lines[number] = spans.map { ($0.offset, $0.length) } }
            } else {
                // The entry's lines are appended together, so that no option line is ever left without its URL.
                var bytes: [UInt8] = []
                var placed: [(offset: Int64, length: Int)] = []
                for span in spans {
                    placed.append((end + Int64(bytes.count), span.text.utf8.count))
                    bytes.append(contentsOf: span.text.utf8)
                    bytes.append(UInt8(ascii: "\n"))
                }
                let at = end
                if bytes.withUnsafeBytes({ writeWhole(fd, $0, at: at) }) {
                    if tracks { lines[number] = placed }
                    end += Int64(bytes.count)
                } else {
                    reportFailure()
                }
            }
        }
    }

    /// Line `number` gives `count` requests (a Metalink document's files): it leaves the session only once each of
    /// them finished.
    public func expect(line number: Int, requests count: Int) {
        lock.withLock { if lines[number] != nil, count > 1 { outstanding[number] = count } }
    }

    /// The entry of line `number` finished (or its file was there already): it leaves the session, each of its lines
    /// overwritten in place by a comment of its length (the newlines stay: every later line keeps its number). A line
    /// of several requests (``expect(line:requests:)``) leaves it when the last of them finished.
    public func finished(line number: Int) {
        lock.withLock {
            if let left = outstanding[number] {
                guard left <= 1 else {
                    outstanding[number] = left - 1
                    return
                }
                outstanding[number] = nil
            }
            guard let spans = lines.removeValue(forKey: number) else { return }
            for (offset, length) in spans where length > 0 {
                let comment = [UInt8(ascii: "#")] + [UInt8](repeating: UInt8(ascii: " "), count: length - 1)
                if !comment.withUnsafeBytes({ writeWhole(fd, $0, at: offset) }) { reportFailure() }
            }
        }
    }

    /// Line `number` ended without finishing (failed, cancelled): it stays in the session as it is (and so does a
    /// line of several requests when one of them did not finish).
    public func keep(line number: Int) {
        lock.withLock {
            lines.removeValue(forKey: number)
            outstanding[number] = nil
        }
    }

    private func reportFailure() {
        guard !failedToWrite else { return }
        failedToWrite = true
        FileHandle.standardError.write(
            Data("Demo: error: cannot write --save-session: \(String(cString: strerror(errno)))\n".utf8))
    }
}
