import CurlShim
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where a file on disk came from: the URL recorded with it in the `user.xdg.origin.url` extended attribute, as
/// `curl --xattr` and `wget2 --xattr` write it (the freedesktop.org convention), without the URL's user and password.
///
/// The queue records it on every file it saves, and on a part before the part can be continued; a file is a
/// request's own only when its origin is the request's URL. A file that records another origin is another's: a
/// request never keeps it as unchanged, never replaces it and never continues it (its file takes the next free name,
/// `-2`, `-3`…). A file that records none (saved by another program, or on a file system that keeps no extended
/// attributes) is judged as before, by its size and date.
public enum FileOrigin {
    /// The attribute's name.
    public static let attribute = "user.xdg.origin.url"

    /// What a file records of its origin.
    public enum Recorded: Equatable, Sendable {
        /// No origin: the file has no such attribute, or its file system keeps none.
        case none
        /// The URL it came from, as recorded.
        case url(String)
    }

    /// The origin recorded with the file at `path` (a link is not followed: its own attributes are read).
    public static func recorded(atPath path: String) -> Recorded { read(fd: -1, path: path) }

    /// The origin recorded with the open file `fd`.
    static func recorded(fd: Int32) -> Recorded { read(fd: fd, path: "") }

    /// The text recorded for `url`: its absolute text without a user or password (which never go to disk).
    public static func text(of url: URL) -> String { text(ofURLText: url.absoluteString) }

    /// `text` (a URL's absolute text) without the user and password of its authority, if it has them.
    static func text(ofURLText text: String) -> String {
        let bytes = text.utf8
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")),
            bytes[colon...].starts(with: "://".utf8)
        else { return text }
        let authorityStart = bytes.index(colon, offsetBy: 3)
        let authorityEnd =
            bytes[authorityStart...].firstIndex {
                $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#")
            }
            ?? bytes.endIndex
        guard let at = bytes[authorityStart..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) else { return text }
        return String(text[..<authorityStart]) + String(text[bytes.index(after: at)...])
    }

    /// Records `origin` with the open file `fd`; false when the file system keeps no such attribute (nothing then
    /// tells this file's origin, and it is judged as a file with none).
    @discardableResult
    static func record(_ origin: String, fd: Int32) -> Bool {
        var text = origin
        return text.withUTF8 { bytes in nq_set_attribute(fd, attribute, bytes.baseAddress, UInt(bytes.count)) == 0 }
    }

    /// How the file at `path` (or open as `fd`) stands to a request whose origin is `origin`.
    public enum Standing: Equatable, Sendable {
        /// It records `origin`: the request's own.
        case own
        /// It records no origin: judged by its size and date, as before.
        case unknown
        /// It records another origin: another's file.
        case foreign
    }

    /// How the file at `path` stands to `origin` (an origin's text, as ``text(of:)`` gives it; a link is not followed).
    public static func standing(ofFileAt path: String, to origin: String) -> Standing {
        standing(recorded(atPath: path), origin)
    }

    /// How the open file `fd` stands to `origin`.
    static func standing(fd: Int32, to origin: String) -> Standing { standing(recorded(fd: fd), origin) }

    private static func standing(_ recorded: Recorded, _ origin: String) -> Standing {
        switch recorded {
        case .none: .unknown
        case .url(let text): text == origin ? .own : .foreign
        }
    }

    /// The attribute of `fd` (or of `path` when `fd` is -1), up to 64 KiB (a longer one is another's).
    private static func read(fd: Int32, path: String) -> Recorded {
        var buffer = [UInt8](repeating: 0, count: 4_096)
        var count = buffer.withUnsafeMutableBytes {
            nq_get_attribute(fd, path, attribute, $0.baseAddress, UInt($0.count))
        }
        if count < 0, errno == ERANGE {
            buffer = [UInt8](repeating: 0, count: 65_536)
            count = buffer.withUnsafeMutableBytes {
                nq_get_attribute(fd, path, attribute, $0.baseAddress, UInt($0.count))
            }
            if count < 0, errno == ERANGE { return .url("") }
        }
        guard count >= 0 else { return .none }
        return .url(String(decoding: buffer[..<count], as: UTF8.self))
    }
}
