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
        setAttribute(attribute, to: origin, fd: fd)
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
        guard let text = attributeText(attribute, fd: fd, path: path) else { return .none }
        return .url(text)
    }

    /// The text of the extended attribute `name` of `fd` (or of `path` when `fd` is -1, a link not followed): nil when
    /// there is none (or the file system keeps none), empty when it is longer than 64 KiB.
    static func attributeText(_ name: String, fd: Int32, path: String) -> String? {
        // Nearly every record fits the stack's 4 KiB: no allocation a file.
        let small = withUnsafeTemporaryAllocation(byteCount: 4_096, alignment: 1) { buffer -> String?? in
            let count = nq_get_attribute(fd, path, name, buffer.baseAddress, UInt(buffer.count))
            if count < 0 { return errno == ERANGE ? .none : .some(nil) }
            return String(decoding: UnsafeRawBufferPointer(rebasing: buffer[..<count]), as: UTF8.self)
        }
        if let small { return small }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = buffer.withUnsafeMutableBytes { nq_get_attribute(fd, path, name, $0.baseAddress, UInt($0.count)) }
        if count < 0, errno == ERANGE { return "" }
        guard count >= 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }

    /// Sets the extended attribute `name` of the open file `fd` to `text`; false when the file system keeps none.
    @discardableResult
    static func setAttribute(_ name: String, to text: String, fd: Int32) -> Bool {
        var text = text
        return text.withUTF8 { bytes in nq_set_attribute(fd, name, bytes.baseAddress, UInt(bytes.count)) == 0 }
    }
}

/// The entity tag a saved file was fetched under, recorded with it in the `user.networkqueue.etag` extended attribute
/// (the project's own: neither curl nor wget2 records one), with the file's size and modification second as it was
/// saved: a rerun asks for the file with `If-None-Match` (``NetworkRequest/ExistingFile/revalidate``) only while both
/// still describe the file.
enum SavedEntityTag {
    /// The attribute's name.
    static let attribute = "user.networkqueue.etag"

    /// What the file at `path` records (a link is not followed); nil: nothing, or something we did not write.
    static func recorded(atPath path: String) -> ExistingFileRules.SavedTag? {
        FileOrigin.attributeText(attribute, fd: -1, path: path).flatMap(ExistingFileRules.SavedTag.init(text:))
    }

    /// Records `tag` with the open file `fd`: false when its file system keeps no attributes.
    @discardableResult
    static func record(_ tag: ExistingFileRules.SavedTag, fd: Int32) -> Bool {
        FileOrigin.setAttribute(attribute, to: tag.text, fd: fd)
    }
}
