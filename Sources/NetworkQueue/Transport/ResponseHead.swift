import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A final HTTP response head as the server sent it: status, version and fields in the order received,
/// looked up by name without allocating. The fields are kept as the bytes they arrived as: a field's strings are
/// made when it is read. The library's own type, so that a response costs no
/// `HTTPURLResponse` unless someone reads one: ``httpURLResponse`` is built on first use, once, and kept.
///
/// Field names keep their spelling; a repeated field's values are joined with ", " under the first
/// spelling (a transport that reports an `HTTPURLResponse` gets its fields as Foundation keeps them).
/// Immutable, and safe to share between threads.
///
/// `@unchecked Sendable`: the mutable properties, the built `HTTPURLResponse` and the parsed URL, are only read and
/// written under `buildLock`.
public final class ResponseHead: @unchecked Sendable, CustomStringConvertible {
    /// One header field.
    public struct Field: Sendable, Hashable {
        /// The name as received, e.g. `Content-Type`.
        public var name: String
        /// The value, without leading and trailing spaces and tabs.
        public var value: String

        /// Creates a field.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The URL of the response (the last one's, after redirects).
    public var url: URL {
        switch address {
        case .url(let url): return url
        case .text(let text):
            Self.buildLock.lock()
            defer { Self.buildLock.unlock() }
            if let parsed { return parsed }
            let url = URL(string: text) ?? URL(fileURLWithPath: "/")
            parsed = url
            return url
        }
    }
    /// Where the response came from: a URL, or the text a transport was given (``url`` parses it when first read,
    /// which most responses never are).
    enum Address {
        case url(URL)
        case text(String)
    }
    private let address: Address
    /// ``url`` once parsed from a text ``address``; guarded by `buildLock`.
    private var parsed: URL?
    /// The status code, e.g. 200.
    public let statusCode: Int
    /// The protocol as in the status line, e.g. `HTTP/1.1` or `HTTP/2`; empty when unknown.
    public let httpVersion: String
    /// The fields in the order received (made on each read: look one up with ``value(forHTTPHeaderField:)``).
    public var fields: [Field] { storage.fields }
    /// The fields' bytes; a lookup of an absent field (most are: `Content-Encoding`, the digest fields,
    /// `Location`) usually ends at its mask of name lengths without comparing names.
    let storage: HeadFields
    /// Guarded by `buildLock`.
    private var built: HTTPURLResponse?
    /// One lock for every head's ``built``: a head is read as Foundation's type rarely (and then once), so
    /// sharing costs nothing, where a lock of its own would cost every response an allocation.
    private static let buildLock = NSLock()

    /// Creates a head from its parts.
    public convenience init(url: URL, statusCode: Int, httpVersion: String, fields: [Field]) {
        self.init(
            url: url, statusCode: statusCode, httpVersion: httpVersion, storage: HeadFields(fields),
            contentLength: Self.contentLength(in: fields))
    }

    /// Creates a head from fields a parser kept as bytes, whose `Content-Length` it has read already (-1: none).
    convenience init(url: URL, statusCode: Int, httpVersion: String, storage: HeadFields, contentLength: Int64) {
        self.init(
            address: .url(url), statusCode: statusCode, httpVersion: httpVersion, storage: storage,
            contentLength: contentLength)
    }

    /// As ``init(url:statusCode:httpVersion:storage:contentLength:)``, from where the response came from.
    init(address: Address, statusCode: Int, httpVersion: String, storage: HeadFields, contentLength: Int64) {
        self.address = address
        self.statusCode = statusCode
        self.httpVersion = httpVersion
        self.storage = storage
        expectedContentLength = contentLength
    }

    /// Wraps a response a transport built itself (URLSession's, reported as ``TransferEvent/head(_:)``); ``httpURLResponse`` returns
    /// it, the same object.
    public init(_ response: HTTPURLResponse) {
        address = .url(response.url ?? URL(fileURLWithPath: "/"))
        statusCode = response.statusCode
        httpVersion = ""
        let fields: [Field] = response.allHeaderFields.compactMap { name, value in
            guard let name = name as? String, let value = value as? String else { return nil }
            return Field(name: name, value: value)
        }
        storage = HeadFields(fields)
        expectedContentLength = Self.contentLength(in: fields)
        built = response
    }

    /// The number in `Content-Length`, or -1 (read once, at creation: the queue asks for it several times).
    /// A length beside a `Transfer-Encoding` is no length (RFC 9112 §6.3): the transfer coding frames the body.
    private static func contentLength(in fields: [Field]) -> Int64 {
        if fields.contains(where: { HeaderName.equal($0.name.utf8, "transfer-encoding".utf8) }) { return -1 }
        let field = fields.first { HeaderName.equal($0.name.utf8, "content-length".utf8) }
        return field.flatMap { Int64($0.value) } ?? -1
    }

    /// The value of the field `name`, compared without regard to ASCII case; nil when absent.
    public func value(forHTTPHeaderField name: String) -> String? { storage.value(named: name) }

    /// The file name the response gives itself in `Content-Disposition` (RFC 6266; RFC 8187's `filename*` preferred),
    /// made safe to be one file in a folder (its last path component, no control characters, no leading dots, never
    /// `..`, at most 200 bytes), or nil when it gives none that is safe. What
    /// ``NetworkRequest/FileOptions-swift.struct/namesFileFromResponse`` names a file by.
    public var suggestedFileName: String? {
        value(forHTTPHeaderField: "Content-Disposition").flatMap(ContentDisposition.fileName(in:))
    }

    /// `Content-Length` as a number, or -1 when absent or not one (as `URLResponse` has it).
    public let expectedContentLength: Int64

    /// The media type of `Content-Type`, lowercased and without parameters (e.g. `text/html`); nil when absent.
    public var mimeType: String? {
        guard let type = value(forHTTPHeaderField: "Content-Type") else { return nil }
        let bare = type.prefix { $0 != ";" }.trimmingCharacters(in: .whitespaces).lowercased()
        return bare.isEmpty ? nil : bare
    }

    /// The head as Foundation's type, built on the first call (Foundation reads every field into a
    /// dictionary of its own) and the same object from then on.
    public var httpURLResponse: HTTPURLResponse {
        // Read before the lock, which a text address's first read takes too.
        let url = url
        Self.buildLock.lock()
        defer { Self.buildLock.unlock() }
        if let built { return built }
        var dictionary: [String: String] = [:]
        dictionary.reserveCapacity(storage.count)
        for field in fields where dictionary[field.name] == nil { dictionary[field.name] = field.value }
        let response =
            HTTPURLResponse(url: url, statusCode: statusCode, httpVersion: httpVersion, headerFields: dictionary)
            ?? HTTPURLResponse(url: url, statusCode: statusCode, httpVersion: nil, headerFields: nil)!
        built = response
        return response
    }

    /// Whether ``httpURLResponse`` has been built (or given): for tests of laziness.
    var hasHTTPURLResponse: Bool {
        Self.buildLock.lock()
        defer { Self.buildLock.unlock() }
        return built != nil
    }

    /// `HTTP/1.1 200, 3 fields`.
    public var description: String {
        "\(httpVersion.isEmpty ? "HTTP" : httpVersion) \(statusCode), \(storage.count) field\(storage.count == 1 ? "" : "s")"
    }
}
