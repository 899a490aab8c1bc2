import Foundation

/// A Metalink document: the files a publisher offers, each with its name, size, hashes, piece hashes and mirrors.
///
/// Reads Metalink 4 (RFC 5854, `.meta4`, namespace `urn:ietf:params:xml:ns:metalink`) and the older Metalink 3
/// (`.metalink`, namespace `http://www.metalinker.org/`). The document is checked whole before anything is fetched,
/// and refused with a ``MetalinkError`` that says why when it is malformed or hostile:
/// - a `DOCTYPE` or an entity declaration anywhere (a Metalink needs neither; entities are how an XML document
///   expands itself to gigabytes or reads a local file);
/// - more bytes, files, locations, pieces or text than its ``Limits`` allow, or elements nested deeper than 32;
/// - a file name that is not one safe name as it is (see ``File/name``), or two files of the same name;
/// - a size that is not a number, or larger than ``Limits/maximumFileSize``;
/// - a hash of a known type that is not hexadecimal of that type's length, or a file whose hashes are all of types
///   this library does not know;
/// - piece hashes whose count does not cover the file's size, or pieces of no length;
/// - a file with no `http` or `https` location.
///
/// Elements of other namespaces, and elements this reader does not use (`published`, `metaurl`, `signature`, …), are
/// skipped, as RFC 5854 §4 asks of an extension it does not know.
///
/// ```swift
/// let document = try Metalink(parsing: Data(contentsOf: metalinkFile))
/// let folder = try OutputFolder(path: "downloads")
/// for request in try document.requests(in: folder) { try queue.add(request) }
/// ```
public struct Metalink: Sendable, Equatable {
    /// The Metalink version a document was written in.
    public enum Version: Sendable, Equatable {
        /// RFC 5854 (`.meta4`).
        case metalink4
        /// Metalink 3.0 (`.metalink`).
        case metalink3
    }

    /// The version the document was written in.
    public var version: Version
    /// The files the document names, in its order (at least one).
    public var files: [File]

    /// One file of a document.
    public struct File: Sendable, Equatable {
        /// The file's name: one safe name as it is (``FileName/problem(with:)``: no `/`, `\`, `..`, control or
        /// format character, no leading or trailing dot or space, no suffix of the project's own, at most
        /// ``FileName/longestName`` bytes), checked when the document is read, and again by the output folder's
        /// guardian when it becomes a request (``Metalink/requests(in:fileOptions:validation:making:)``).
        public var name: String
        /// The file's size in bytes, when the document gives it.
        public var size: Int64?
        /// The file's hashes of the types this library knows, strongest first (see ``HashType``).
        public var hashes: [Hash]
        /// Hashes of the pieces of the file, when the document gives them in a type this library knows.
        public var pieces: Pieces?
        /// Where the file may be fetched: `http` and `https` URLs only (a Metalink 3 URL of another `type`, such as
        /// a `.torrent` file's, is skipped), best first (lowest ``Location/priority``, the document's order among
        /// equals).
        public var locations: [Location]

        /// The hash the whole file is checked against: the strongest of ``hashes`` that this library verifies
        /// (SHA-512, else SHA-256), or nil.
        public var checksum: Checksum? {
            for hash in hashes {
                switch hash.type {
                case .sha512: return .sha512(hash.hex)
                case .sha256: return .sha256(hash.hex)
                case .sha384, .sha1, .md5: continue
                }
            }
            return nil
        }

        /// True when the file's hashes are all weak (MD5, SHA-1): they cannot prove the bytes against a publisher
        /// who is lied for, and are not used to check it.
        public var hasOnlyWeakHashes: Bool { !hashes.isEmpty && hashes.allSatisfy(\.type.isWeak) }
    }

    /// A hash type a document may name, as RFC 5854 §4.2.4 names them (IANA's "Hash Function Textual Names"),
    /// or as Metalink 3 does (`sha256`, `sha1`…).
    public enum HashType: String, Sendable, Hashable, CaseIterable, Comparable {
        /// MD5: weak.
        case md5 = "md5"
        /// SHA-1: weak.
        case sha1 = "sha-1"
        /// SHA-256.
        case sha256 = "sha-256"
        /// SHA-384 (read and kept; not used to check a file).
        case sha384 = "sha-384"
        /// SHA-512.
        case sha512 = "sha-512"

        /// The type a document's `type` attribute names (either spelling, any case), or nil for one this library
        /// does not know.
        public init?(named name: String) {
            switch name.lowercased() {
            case "md5": self = .md5
            case "sha-1", "sha1": self = .sha1
            case "sha-256", "sha256": self = .sha256
            case "sha-384", "sha384": self = .sha384
            case "sha-512", "sha512": self = .sha512
            default: return nil
            }
        }

        /// The digest's length in bytes.
        public var byteCount: Int {
            switch self {
            case .md5: 16
            case .sha1: 20
            case .sha256: 32
            case .sha384: 48
            case .sha512: 64
            }
        }

        /// True for MD5 and SHA-1, whose collisions are made at will.
        public var isWeak: Bool { self == .md5 || self == .sha1 }

        /// Weaker first: MD5, SHA-1, SHA-256, SHA-384, SHA-512.
        public static func < (lhs: HashType, rhs: HashType) -> Bool { lhs.strength < rhs.strength }

        private var strength: Int {
            switch self {
            case .md5: 0
            case .sha1: 1
            case .sha256: 2
            case .sha384: 3
            case .sha512: 4
            }
        }
    }

    /// A digest of a whole file.
    public struct Hash: Sendable, Equatable {
        /// The hash function.
        public var type: HashType
        /// The digest as lowercase hexadecimal of ``HashType/byteCount`` bytes.
        public var hex: String
    }

    /// The hashes of a file's pieces: piece `i` is the bytes from `i × length` up to the next piece or the end.
    public struct Pieces: Sendable, Equatable {
        /// The hash function.
        public var type: HashType
        /// Each piece's length in bytes (the last may be shorter).
        public var length: Int64
        /// The pieces' digests, in order, as lowercase hexadecimal.
        public var hashes: [String]
    }

    /// A place the file may be fetched from.
    public struct Location: Sendable, Equatable {
        /// The URL (`http` or `https`).
        public var url: URL
        /// Lower is preferred, 1 to 999,999 (RFC 5854 §4.2.16); a location without one comes after those with one.
        /// A Metalink 3 `preference` (100 best) is read as 101 minus it.
        public var priority: Int
        /// The location's country as ISO 3166-1 alpha-2 (`de`), when the document gives it.
        public var country: String?
    }

    /// The most a document may hold; beyond any of them it is refused.
    public struct Limits: Sendable, Equatable {
        /// The most bytes of the document. Default 16 MiB.
        public var maximumDocumentBytes: Int
        /// The most files. Default 10,000.
        public var maximumFiles: Int
        /// The most locations of one file. Default 1,000.
        public var maximumLocationsPerFile: Int
        /// The most piece hashes of one file. Default 1,048,576.
        public var maximumPiecesPerFile: Int
        /// The largest file size. Default 2^50 bytes (1 PiB).
        public var maximumFileSize: Int64
        /// The most bytes of one element's text or attribute (a URL, a hash, a name). Default 8 KiB.
        public var maximumTextBytes: Int

        /// Limits; every parameter defaults as its property says.
        public init(
            maximumDocumentBytes: Int = 16 << 20, maximumFiles: Int = 10_000, maximumLocationsPerFile: Int = 1_000,
            maximumPiecesPerFile: Int = 1 << 20, maximumFileSize: Int64 = 1 << 50, maximumTextBytes: Int = 8 << 10
        ) {
            self.maximumDocumentBytes = maximumDocumentBytes
            self.maximumFiles = maximumFiles
            self.maximumLocationsPerFile = maximumLocationsPerFile
            self.maximumPiecesPerFile = maximumPiecesPerFile
            self.maximumFileSize = maximumFileSize
            self.maximumTextBytes = maximumTextBytes
        }
    }

    /// Reads a document, checking it whole (see ``Metalink``); throws ``MetalinkError`` with the reason when it is
    /// refused.
    public init(parsing data: Data, limits: Limits = Limits()) throws(MetalinkError) {
        self = try MetalinkReader.read(data, limits: limits)
    }

    /// Creates a document from its parts (tests, a document built by hand).
    public init(version: Version = .metalink4, files: [File]) {
        self.version = version
        self.files = files
    }
}

/// Why a Metalink document was refused. Nothing of a refused document is fetched.
public struct MetalinkError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong, in the terms a test or a program checks.
    public enum Kind: Sendable, Equatable {
        /// The document is larger than ``Metalink/Limits/maximumDocumentBytes``.
        case tooLarge
        /// It declares a `DOCTYPE` or an entity.
        case declaresEntities
        /// It is not well-formed XML.
        case notXML
        /// Its root is not a Metalink 4 or 3 `metalink` element.
        case notMetalink
        /// It names no file.
        case noFiles
        /// More files, locations, pieces, text or nesting than the limits allow.
        case tooMany
        /// A file's name is not one safe path component, or two files share one.
        case unsafeName
        /// A size or a piece length is not a number, or is out of bounds.
        case badSize
        /// A hash is malformed, or a file's hashes are all of types this library does not know.
        case badHash
        /// Piece hashes that do not cover the file.
        case badPieces
        /// A file with no `http` or `https` location.
        case noLocation
    }

    /// What was wrong.
    public var kind: Kind
    /// The reason, for a person: names the file and the value.
    public var reason: String

    /// An error of `kind` saying `reason`.
    public init(_ kind: Kind, _ reason: String) {
        self.kind = kind
        self.reason = reason
    }

    /// "metalink refused: " and the reason.
    public var description: String { "metalink refused: \(reason)" }
}
