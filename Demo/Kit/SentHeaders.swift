import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The header fields every request of a run sends (`--header`, `--user-agent`), checked when the command line
/// is read: a field that could not be sent as written is bad usage, never a surprise on the wire.
public struct SentHeaders: Sendable, Equatable {
    /// One field.
    public struct Field: Sendable, Equatable {
        public let name: String
        public let value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// Why a field cannot be sent.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// The fields in the order given; a name given twice keeps its last value, in its first place (a request
    /// holds one value per name).
    public private(set) var fields: [Field] = []

    public init() {}

    /// True when no field is set: requests are then made from their URLs alone (the compact form).
    public var isEmpty: Bool { fields.isEmpty }

    /// The names, for the run's first line: values are never shown (they are often tokens).
    public var names: [String] { fields.map(\.name) }

    /// Adds a field written as curl's `-H` takes one, `Name: value` (spaces around the value dropped).
    public mutating func add(line: String) throws(Problem) {
        guard let colon = line.firstIndex(of: ":") else {
            // Not echoed: a mistyped line is often a token.
            throw Problem(description: "--header needs 'Name: value' (no ':' in the one given)")
        }
        try set(String(line[..<colon]), String(line[line.index(after: colon)...]))
    }

    /// Sets `name` to `value` (spaces and tabs around it dropped).
    public mutating func set(_ name: String, _ value: String) throws(Problem) {
        let tokenCharacters = Set("!#$%&'*+-.^_`|~")
        guard !name.isEmpty,
            name.unicodeScalars.allSatisfy({
                $0.isASCII
                    && (($0.properties.isAlphabetic || ("0"..."9").contains($0))
                        || tokenCharacters.contains(Character($0)))
            })
        else { throw Problem(description: "'\(Self.shown(name))' is not a header name (letters, digits, -, _ ...)") }
        let trimmed = value.trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
        guard !trimmed.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) else {
            throw Problem(description: "the value of header \(name) holds a line break or NUL")
        }
        let lowercased = name.lowercased()
        guard !["content-length", "transfer-encoding"].contains(lowercased) else {
            throw Problem(description: "header \(name) frames a request body, and these requests have none")
        }
        let field = Field(name: name, value: trimmed)
        if let index = fields.firstIndex(where: { $0.name.lowercased() == lowercased }) {
            fields[index] = field
        } else {
            fields.append(field)
        }
    }

    /// Removes the field `name` (any case), if set.
    public mutating func remove(_ name: String) {
        fields.removeAll { $0.name.lowercased() == name.lowercased() }
    }

    /// The `.netrc` whose credentials go to the hosts it names (`--netrc`, `--netrc-file`), as an `Authorization`
    /// field unless one is given; nil: none.
    public var netrc: Netrc?

    /// True when a request to `url` sends no field of these (it may be made from its URL alone).
    public func sendsNothing(to url: URL) -> Bool {
        fields.isEmpty && (netrc == nil || url.host.flatMap { netrc?.credentials(for: $0) } == nil)
    }

    /// A GET of `url` with these fields (and the `.netrc`'s credentials for its host, unless `Authorization` is given).
    public func request(for url: URL) -> URLRequest {
        var request = URLRequest(url: url)
        for field in fields { request.setValue(field.value, forHTTPHeaderField: field.name) }
        if let authorization = netrc?.authorization(for: url), request.value(forHTTPHeaderField: "Authorization") == nil
        {
            request.setValue(authorization, forHTTPHeaderField: "Authorization")
        }
        return request
    }

    /// `text` fit for an error message: at most 40 characters, control characters as `?`.
    private static func shown(_ text: String) -> String {
        let clean = String(text.unicodeScalars.map { $0.value < 32 || $0.value == 127 ? "?" : Character($0) })
        return clean.count > 40 ? clean.prefix(40) + "..." : clean
    }
}
