import Foundation

/// The digest a response body must have, as lowercase or uppercase hexadecimal: a request with one
/// (``NetworkRequest/Integrity-swift.struct/checksum``) fails with ``NetworkQueueError/integrityCheckFailed(expected:actual:)``
/// unless the whole body hashes to it.
public enum Checksum: Sendable, Hashable, CustomStringConvertible {
    /// SHA-256: 64 hexadecimal digits.
    case sha256(String)
    /// SHA-512: 128 hexadecimal digits.
    case sha512(String)

    /// A hash function.
    public enum Algorithm: String, Sendable, Hashable, CaseIterable {
        /// SHA-256 (FIPS 180-4).
        case sha256
        /// SHA-512 (FIPS 180-4).
        case sha512

        /// The digest's length in bytes: 32 or 64.
        public var byteCount: Int { self == .sha256 ? 32 : 64 }
    }

    /// The checksum of `algorithm` with these digest bytes.
    public init(_ algorithm: Algorithm, digest: some Sequence<UInt8>) {
        let hex = digest.map { byte in
            String(byte, radix: 16).count == 1 ? "0" + String(byte, radix: 16) : String(byte, radix: 16)
        }
        .joined()
        self = algorithm == .sha256 ? .sha256(hex) : .sha512(hex)
    }

    /// The checksum of `data` (hashed as a request's body would be).
    public init(hashing data: some DataProtocol, _ algorithm: Algorithm) {
        let digest = DigestEngine.preferred.make(algorithm)
        for region in data.regions { region.withUnsafeBytes { digest.update($0) } }
        self.init(algorithm, digest: digest.finalize())
    }

    /// Reads `sha256:HEX` or `sha512:HEX` (the algorithm's name in any case; the form ``description``
    /// prints). Returns nil for anything else, including hexadecimal of the wrong length.
    public init?(_ text: String) {
        let parts = text.split(separator: ":", maxSplits: 1)
        guard parts.count == 2, let algorithm = Algorithm(rawValue: parts[0].lowercased()) else { return nil }
        let checksum: Checksum = algorithm == .sha256 ? .sha256(String(parts[1])) : .sha512(String(parts[1]))
        guard checksum.isWellFormed else { return nil }
        self = checksum
    }

    /// The hash function.
    public var algorithm: Algorithm {
        switch self {
        case .sha256: .sha256
        case .sha512: .sha512
        }
    }

    /// The digest as given.
    public var hex: String {
        switch self {
        case .sha256(let hex), .sha512(let hex): hex
        }
    }

    /// `sha256:<hex>` or `sha512:<hex>`.
    public var description: String { "\(algorithm.rawValue):\(hex)" }

    /// True when ``hex`` is hexadecimal of the algorithm's length.
    public var isWellFormed: Bool {
        hex.utf8.count == algorithm.byteCount * 2
            && hex.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0 | 0x20) }
    }

    /// The digest's bytes, when ``isWellFormed``.
    var bytes: [UInt8]? {
        guard isWellFormed else { return nil }
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count, by: 2).map {
            UInt8(String(decoding: digits[$0..<($0 + 2)], as: UTF8.self), radix: 16)!
        }
    }

    /// Whether two checksums name the same digest (hexadecimal compared without regard to case).
    public func matches(_ other: Checksum) -> Bool {
        algorithm == other.algorithm && bytes != nil && bytes == other.bytes
    }
}

extension Checksum {
    /// Whether the file at `url` hashes to this checksum, read in 1 MiB pieces; false when it cannot be read.
    func matches(file url: URL) -> Bool {
        let digest = DigestEngine.preferred.make(algorithm)
        guard FilePieces.read(url, body: digest.update) else { return false }
        return matches(Checksum(algorithm, digest: digest.finalize()))
    }
}

/// Reads a file in pieces, for hashing it without holding it whole.
enum FilePieces {
    /// Hands `body` the first `limit` bytes of the file at `url` (all of it by default) in pieces of at most
    /// 1 MiB; false when the file cannot be opened or a read fails (a file shorter than `limit` is no failure).
    @discardableResult
    static func read(_ url: URL, upTo limit: Int64 = .max, body: (UnsafeRawBufferPointer) -> Void) -> Bool {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return false }
        defer { try? handle.close() }
        var remaining = limit
        while remaining > 0 {
            // nil or empty: the end of the file (Linux answers nil there); a throw: it cannot be read.
            let data: Data?
            do { data = try handle.read(upToCount: Int(min(remaining, 1 << 20))) } catch { return false }
            guard let data, !data.isEmpty else { break }
            remaining -= Int64(data.count)
            data.withUnsafeBytes(body)
        }
        return true
    }
}
