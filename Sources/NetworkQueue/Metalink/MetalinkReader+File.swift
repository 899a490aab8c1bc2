import Foundation

/// A file of a document as it is read, checked whole at its end (``FileBuilder/make(limits:version:)``).
struct FileBuilder {
    var name: String?
    var size: String?
    /// (type, hex) as the document gives them.
    var hashes: [(String, String)] = []
    var pieceLists: [PiecesBuilder] = []
    var urls: [URLBuilder] = []

    /// How the file is named in a reason: its name, cut short.
    var label: String { String((name ?? "").prefix(64)) }

    func make(limits: Metalink.Limits, version: Metalink.Version) throws(MetalinkError) -> Metalink.File {
        guard let name else { throw MetalinkError(.unsafeName, "a file has no name") }
        if let problem = Self.problem(withName: name) {
            throw MetalinkError(.unsafeName, "file name '\(label)' \(problem)")
        }
        let bytes = try size.map { text throws(MetalinkError) in
            try Self.number(text, of: "size", file: label, limits: limits)
        }
        let hashes = try Self.hashes(hashes, file: label)
        let pieces = try Self.pieces(pieceLists, size: bytes, file: label, limits: limits)
        var locations: [Metalink.Location] = []
        var seen: Set<String> = []
        for candidate in urls {
            guard let location = candidate.location(version: version), seen.insert(location.url.absoluteString).inserted
            else { continue }
            locations.append(location)
        }
        // Stable: equal priorities keep the document's order.
        locations = locations.enumerated().sorted {
            ($0.element.priority, $0.offset) < ($1.element.priority, $1.offset)
        }
        .map(\.element)
        guard !locations.isEmpty else {
            throw MetalinkError(.noLocation, "file '\(label)' has no http or https location")
        }
        return Metalink.File(name: name, size: bytes, hashes: hashes, pieces: pieces, locations: locations)
    }

    /// Why `name` is not one safe name as it is, or nil: the rule every name in an output folder follows
    /// (``FileName/problem(with:)``), which a document's name must meet without being mended.
    static func problem(withName name: String) -> String? {
        if name.isEmpty { return "is empty" }
        return FileName.problem(with: name).map { "is \($0)" }
    }

    /// A size or a length: decimal digits (white space around them allowed), at most the limit's file size.
    static func number(_ text: String, of what: String, file: String, limits: Metalink.Limits) throws(MetalinkError)
        -> Int64
    {
        let digits = MetalinkReader.trimmed(text)
        guard !digits.isEmpty, digits.utf8.count <= 19, digits.utf8.allSatisfy({ (48...57).contains($0) }),
            let value = Int64(digits)
        else {
            throw MetalinkError(
                .badSize, "the \(what) of file '\(file)' is '\(digits.prefix(32))', not a number of bytes")
        }
        guard value <= limits.maximumFileSize else {
            throw MetalinkError(
                .badSize, "the \(what) of file '\(file)' is \(value) bytes, more than \(limits.maximumFileSize)")
        }
        return value
    }

    /// The known hashes, strongest first, each checked; unknown types are left out unless they are all there is.
    static func hashes(_ given: [(String, String)], file: String) throws(MetalinkError) -> [Metalink.Hash] {
        var known: [Metalink.Hash] = []
        var unknown: [String] = []
        for (typeName, hex) in given {
            guard let type = Metalink.HashType(named: typeName) else {
                unknown.append(String(typeName.prefix(32)))
                continue
            }
            let digest = try Self.digest(hex, type: type, of: "the \(type.rawValue) hash of file '\(file)'")
            if let other = known.first(where: { $0.type == type }) {
                guard other.hex == digest else {
                    throw MetalinkError(.badHash, "file '\(file)' has two different \(type.rawValue) hashes")
                }
                continue
            }
            known.append(Metalink.Hash(type: type, hex: digest))
        }
        if known.isEmpty, !unknown.isEmpty {
            throw MetalinkError(
                .badHash,
                "the hashes of file '\(file)' are all of types this library does not know: \(unknown.joined(separator: ", "))"
            )
        }
        return known.sorted { $0.type > $1.type }
    }

    /// `hex` as lowercase hexadecimal of `type`'s length.
    static func digest(_ hex: String, type: Metalink.HashType, of what: String) throws(MetalinkError) -> String {
        let lower = hex.lowercased()
        guard lower.utf8.count == type.byteCount * 2,
            lower.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
        else {
            throw MetalinkError(.badHash, "\(what) is not \(type.byteCount * 2) hexadecimal digits")
        }
        return lower
    }

    /// The strongest list of piece hashes of a known type, checked against the size.
    static func pieces(_ lists: [PiecesBuilder], size: Int64?, file: String, limits: Metalink.Limits)
        throws(MetalinkError) -> Metalink.Pieces?
    {
        var best: Metalink.Pieces?
        for list in lists {
            guard let type = Metalink.HashType(named: list.type) else { continue }
            let length = try number(list.length, of: "piece length", file: file, limits: limits)
            guard length > 0 else {
                throw MetalinkError(.badPieces, "the pieces of file '\(file)' have a length of 0")
            }
            var hashes: [String] = []
            hashes.reserveCapacity(list.hashes.count)
            for (index, hex) in list.hashes.enumerated() {
                hashes.append(
                    try digest(hex, type: type, of: "piece \(index)'s \(type.rawValue) hash of file '\(file)'"))
            }
            if let size {
                let expected = size == 0 ? 0 : (size - 1) / length + 1
                guard Int64(hashes.count) == expected else {
                    throw MetalinkError(
                        .badPieces,
                        "file '\(file)' of \(size) bytes in pieces of \(length) needs \(expected) piece hashes, not \(hashes.count)"
                    )
                }
            } else if hashes.isEmpty {
                throw MetalinkError(.badPieces, "the pieces of file '\(file)' have no hash")
            }
            let pieces = Metalink.Pieces(type: type, length: length, hashes: hashes)
            if best.map({ $0.type < type }) ?? true { best = pieces }
        }
        return best
    }
}

/// A `pieces` element as it is read.
struct PiecesBuilder {
    var type: String
    var length: String
    var hashes: [String] = []
}

/// A `url` element as it is read.
struct URLBuilder {
    var text: String
    var priority: String?
    var preference: String?
    var country: String?
    /// Metalink 3's `type` (`http`, `ftp`, `bittorrent`…): a URL of another type than `http` or `https` is not the
    /// file's bytes even when it is an http URL (a `.torrent` file's).
    var type: String?

    /// The location, or nil when its URL is not `http` or `https` with a host, or is said to be of another type
    /// (another scheme is skipped, as a `metaurl` is).
    func location(version: Metalink.Version) -> Metalink.Location? {
        if let type, !["http", "https"].contains(MetalinkReader.trimmed(type).lowercased()) { return nil }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty
        else { return nil }
        var rank = 1_000_000
        if let priority, let value = Int(MetalinkReader.trimmed(priority)), (1...999_999).contains(value) {
            rank = value
        } else if let preference, let value = Int(MetalinkReader.trimmed(preference)),
            (0...100).contains(value)
        {
            rank = 101 - value
        }
        let code = country.map { MetalinkReader.trimmed($0).lowercased() }
        let isCountry = code.map { $0.utf8.count == 2 && $0.utf8.allSatisfy { (97...122).contains($0) } } ?? false
        return Metalink.Location(url: url, priority: rank, country: isCountry ? code : nil)
    }
}
