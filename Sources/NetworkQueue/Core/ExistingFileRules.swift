import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// When a file destination that exists already may be kept instead of downloaded again: the decision on a HEAD's
/// response (``NetworkRequest/ExistingFile/skipIfUnchanged``), and the conditional GET that asks for the file only
/// if it changed (``NetworkRequest/ExistingFile/revalidate``, DESIGN semantics 23). Pure.
enum ExistingFileRules {
    /// What the queue knows of a file on disk.
    struct FileState: Equatable, Sendable {
        /// Its size in bytes.
        var size: Int64
        /// Its modification time.
        var modified: Date
        /// The validator a conditional GET sends for it (``NetworkRequest/ExistingFile/revalidate``); nil: the file is
        /// judged by a HEAD (``NetworkRequest/ExistingFile/skipIfUnchanged``).
        var conditional: Conditional?
        /// Where it is, when that is not the request's destination (an earlier run's file, named by its response and
        /// found by its origin); nil: at the destination.
        var path: String?

        /// A file of `size` bytes modified at `modified`, judged by a HEAD.
        init(size: Int64, modified: Date, conditional: Conditional? = nil, path: String? = nil) {
            self.size = size
            self.modified = modified
            self.conditional = conditional
            self.path = path
        }
    }

    /// What a conditional GET asks: the file's entity tag (`If-None-Match`), else its date (`If-Modified-Since`).
    enum Conditional: Equatable, Sendable {
        /// The entity tag of the response the file was saved from, as the server sent it (a weak one too: the
        /// comparison of `If-None-Match` is weak, RFC 9110 §13.1.2).
        case entityTag(String)
        /// The file's modification time: the response's `Last-Modified`, which the queue gives every file it saves,
        /// or the time a file of another program was written (as `curl -z` and `wget -N` use it).
        case modifiedSince(Date)

        /// The request's field: its name and value.
        var field: (name: String, value: String) {
            switch self {
            case .entityTag(let tag): ("If-None-Match", tag)
            case .modifiedSince(let date): ("If-Modified-Since", HTTPDate.format(date))
            }
        }
    }

    /// What the queue recorded with a file it saved from a response with an entity tag (``SavedEntityTag``): the tag,
    /// and the file's size and modification time (whole seconds) as it was saved.
    struct SavedTag: Equatable, Sendable {
        var entityTag: String
        var size: Int64
        var modifiedSeconds: Int64
        /// The request's origin as its file records it (``FileOrigin``), written with the tag so that a rerun reads one
        /// attribute, not two; nil in a record written before it was (or for a request without one).
        var origin: String?

        /// The attribute's text: `size seconds tag`, then ` origin` when there is one (a version that reads three
        /// fields finds no entity tag in it, and asks by date).
        var text: String { "\(size) \(modifiedSeconds) \(entityTag)" + (origin.map { " " + $0 } ?? "") }

        init(entityTag: String, size: Int64, modifiedSeconds: Int64, origin: String? = nil) {
            self.entityTag = entityTag
            self.size = size
            self.modifiedSeconds = modifiedSeconds
            self.origin = origin.flatMap { $0.isEmpty ? nil : $0 }
        }

        /// Reads what ``text`` wrote; nil for anything else (a record we did not write is never trusted). Read on its
        /// bytes: a rerun reads one record a file.
        init?(text: String) {
            var text = text
            guard let saved = text.withUTF8({ Self.read($0) }) else { return nil }
            self = saved
        }

        private static func read(_ bytes: UnsafeBufferPointer<UInt8>) -> SavedTag? {
            // The first three spaces: after the size, after the seconds, after the tag (before the origin).
            var spaces = (-1, -1, -1)
            for index in bytes.indices where bytes[index] == 0x20 {
                if spaces.0 < 0 {
                    spaces.0 = index
                } else if spaces.1 < 0 {
                    spaces.1 = index
                } else {
                    spaces.2 = index
                    break
                }
            }
            guard spaces.0 > 0, spaces.1 > spaces.0 + 1,
                let size = ASCIIDecimal.value(of: bytes[..<spaces.0], signed: true), size >= 0,
                let seconds = ASCIIDecimal.value(of: bytes[(spaces.0 + 1)..<spaces.1], signed: true)
            else { return nil }
            let tagEnd = spaces.2 < 0 ? bytes.count : spaces.2
            let tag = String(decoding: UnsafeBufferPointer(rebasing: bytes[(spaces.1 + 1)..<tagEnd]), as: UTF8.self)
            guard ExistingFileRules.isEntityTag(tag) else { return nil }
            var origin: String?
            if spaces.2 >= 0 {
                let rest = bytes[(spaces.2 + 1)...]
                guard !rest.isEmpty, !rest.contains(0x20) else { return nil }
                origin = String(decoding: UnsafeBufferPointer(rebasing: rest), as: UTF8.self)
            }
            return SavedTag(entityTag: tag, size: size, modifiedSeconds: seconds, origin: origin)
        }

        /// True while the record describes a file of `size` bytes modified at `modified` (the file it was written for,
        /// unchanged since).
        func describes(size: Int64, modified: Date) -> Bool {
            self.size == size && modifiedSeconds == Int64(modified.timeIntervalSince1970.rounded(.down))
        }
    }

    /// True for an entity tag as RFC 9110 §8.8.3 writes it: `"…"` or `W/"…"`, its characters visible ASCII other than
    /// the quote, at most ``longestEntityTag`` bytes. Only such a tag is recorded or sent: nothing else ever reaches a
    /// request's fields.
    static func isEntityTag<S: StringProtocol>(_ text: S) -> Bool {
        var bytes = Substring(text).utf8[...]
        guard bytes.count <= longestEntityTag else { return false }
        if bytes.starts(with: "W/".utf8) { bytes = bytes.dropFirst(2) }
        guard bytes.count >= 2, bytes.first == UInt8(ascii: "\""), bytes.last == UInt8(ascii: "\"") else {
            return false
        }
        return bytes.dropFirst().dropLast().allSatisfy { $0 == 0x21 || (0x23...0x7E).contains($0) }
    }

    /// The longest entity tag recorded: 1 KiB (servers send tens of bytes; an attribute of a few KiB may not fit).
    static let longestEntityTag = 1_024

    /// The entity tag of `head` worth recording with its file; nil when it has none or a malformed one. Read for every
    /// file saved, so not trimmed: a head's values come without their surrounding spaces and tabs, and a tag with any
    /// left is malformed.
    static func entityTag(of head: ResponseHead) -> String? {
        guard let tag = head.value(forHTTPHeaderField: "ETag"), isEntityTag(tag) else { return nil }
        return tag
    }

    /// What a rerun asks the server about a file of `size` bytes modified at `modified`, with `saved` recorded with it
    /// (nil: no record, or a file system that keeps none):
    /// - its entity tag, when the record still describes the file (same size and modification second);
    /// - nil when the record describes another file: the file was changed since it was saved, and is fetched whole
    ///   (a conditional request would keep the changed file);
    /// - its modification time, when there is no record.
    static func conditional(size: Int64, modified: Date, saved: SavedTag?) -> Conditional? {
        guard let saved else { return .modifiedSince(modified) }
        guard saved.describes(size: size, modified: modified) else { return nil }
        return .entityTag(saved.entityTag)
    }

    /// True when `head` answers a conditional GET with 304 Not Modified: the file on disk is the resource.
    static func isNotModified(_ head: ResponseHead) -> Bool { head.statusCode == 304 }

    /// True when `head` describes the same file: a 2xx response that announces exactly the file's size
    /// (an unencoded length: an encoded one counts other bytes) and a `Last-Modified` no newer than the
    /// file's modification time. A missing size or date means the file may have changed.
    static func isUnchanged(_ head: ResponseHead, file: FileState) -> Bool {
        guard (200..<300).contains(head.statusCode), let length = ResponseRules.knownLength(of: head),
            length == file.size,
            let lastModified = head.value(forHTTPHeaderField: "Last-Modified").flatMap(HTTPDate.parse)
        else { return false }
        return lastModified <= file.modified
    }

    /// Whether a request is checked against its existing file: a GET (without a `Range` of its own) to a
    /// file destination that asks for it (``NetworkRequest/ExistingFile/skipIfUnchanged`` or
    /// ``NetworkRequest/ExistingFile/revalidate``).
    static func checksExistingFile(_ request: NetworkRequest) -> Bool {
        guard request.existingFile != .replace, case .file = request.destination, request.invalidReason == nil
        else { return false }
        return RangeRules.mayContinue(request)
    }
}
