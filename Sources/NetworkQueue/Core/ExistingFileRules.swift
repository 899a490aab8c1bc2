import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// When a file destination that exists already may be kept instead of downloaded again
/// (``NetworkRequest/ExistingFile/skipIfUnchanged``): the decision on a HEAD's response, pure.
enum ExistingFileRules {
    /// What the queue knows of a file on disk.
    struct FileState: Equatable, Sendable {
        /// Its size in bytes.
        var size: Int64
        /// Its modification time.
        var modified: Date
    }

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
    /// file destination that asks for it.
    static func checksExistingFile(_ request: NetworkRequest) -> Bool {
        guard request.existingFile == .skipIfUnchanged, case .file = request.destination, request.invalidReason == nil
        else { return false }
        return RangeRules.mayContinue(request)
    }
}
