import Foundation
import NetworkQueue

/// A `.netrc` file (curl's, wget's and aria2's format): `machine HOST login USER password SECRET` entries, tokens apart
/// by white space or newlines, values in double quotes when they hold spaces (`\"` and `\\` escaped), `#` comments,
/// `macdef` blocks skipped to their blank line. Credentials go only to the host their entry names: a `default` entry,
/// which would hand them to every server, is read and not used.
public struct Netrc: Sendable, Equatable {
    /// A file that is not a `.netrc`, by its 1-based line.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let line: Int
        public let reason: String
        public var description: String { "line \(line): \(reason)" }
    }

    /// A machine's login and password.
    public struct Credentials: Sendable, Equatable {
        public let login: String
        public let password: String

        /// Credentials of `login` and `password`.
        public init(login: String, password: String) {
            self.login = login
            self.password = password
        }
    }

    /// The credentials of each machine (lowercased), the first entry of a host winning (as curl reads it).
    private var machines: [String: Credentials] = [:]

    /// The machines with a login and a password.
    public var machineCount: Int { machines.count }

    /// Reads `text`.
    public init(parsing text: String) throws(Problem) {
        var tokens = Tokens(text)
        var current: (machine: String?, login: String?, password: String?)?
        func close() {
            guard let entry = current, let machine = entry.machine, let login = entry.login,
                let password = entry.password, machines[machine] == nil
            else { return }
            machines[machine] = Credentials(login: login, password: password)
        }
        while let (token, line) = try tokens.next() {
            switch token {
            case "machine":
                close()
                guard let (name, _) = try tokens.next(), !name.isEmpty else {
                    throw Problem(line: line, reason: "'machine' without a host name")
                }
                current = (name.lowercased(), nil, nil)
            case "default":
                close()
                // Read, never used: it would send its credentials to every server.
                current = (nil, nil, nil)
            case "login", "password", "account":
                guard current != nil else { throw Problem(line: line, reason: "'\(token)' before any 'machine'") }
                guard let (value, _) = try tokens.next() else {
                    throw Problem(line: line, reason: "'\(token)' without a value")
                }
                if token == "login" { current?.login = value }
                if token == "password" { current?.password = value }
            case "macdef":
                close()
                current = nil
                tokens.skipMacro()
            default:
                // Not shown: it may be the rest of a password with a space in it.
                throw Problem(
                    line: line, reason: "a word that is not machine, default, login, password, account or macdef")
            }
        }
        close()
    }

    /// Reads the file at `path`.
    public init(path: String) throws {
        // Read once, whole: `--netrc-file <(gpg -d …)` is a pipe.
        let text = try TextFile.read(atPath: path)
        try self.init(parsing: text)
    }

    /// The login and password for `host` (compared without case), or nil.
    public func credentials(for host: String) -> Credentials? { machines[host.lowercased()] }

    /// The `Authorization` value of each machine, by host: what a redirect or a mirror into that host sends
    /// (``RedirectPolicy/hostAuthorizations``).
    public var authorizationsByHost: [String: String] {
        Dictionary(
            machines.map { ($0.key.lowercased(), Self.basic($0.value)) }, uniquingKeysWith: { first, _ in first })
    }

    private static func basic(_ credentials: Credentials) -> String {
        "Basic " + Data("\(credentials.login):\(credentials.password)".utf8).base64EncodedString()
    }

    /// The `Authorization` value (Basic) for a request to `url`'s host, or nil when the file names no such machine.
    public func authorization(for url: URL) -> String? {
        guard let host = url.host, let credentials = credentials(for: host) else { return nil }
        return Self.basic(credentials)
    }

    /// The file's words with their line numbers.
    private struct Tokens {
        private let scalars: [Unicode.Scalar]
        private var index = 0
        private var line = 1

        init(_ text: String) { scalars = Array(text.unicodeScalars) }

        private var current: Unicode.Scalar? { index < scalars.count ? scalars[index] : nil }

        private mutating func advance() {
            if scalars[index] == "\n" { line += 1 }
            index += 1
        }

        /// The next word (quotes removed, escapes read) and its line; nil at the end.
        mutating func next() throws(Problem) -> (String, Int)? {
            while let scalar = current {
                if scalar == "#" {
                    while let next = current, next != "\n" { advance() }
                } else if scalar.properties.isWhitespace {
                    advance()
                } else {
                    break
                }
            }
            guard let first = current else { return nil }
            let start = line
            var word = ""
            if first == "\"" {
                advance()
                while true {
                    guard let scalar = current else { throw Problem(line: start, reason: "a quoted value never ends") }
                    advance()
                    if scalar == "\"" { break }
                    if scalar == "\\", let escaped = current {
                        advance()
                        word.unicodeScalars.append(escaped == "n" ? "\n" : escaped == "t" ? "\t" : escaped)
                    } else {
                        word.unicodeScalars.append(scalar)
                    }
                }
            } else {
                while let scalar = current, !scalar.properties.isWhitespace {
                    word.unicodeScalars.append(scalar)
                    advance()
                }
            }
            return (word, start)
        }

        /// Skips a `macdef` block: its name's line, then every line up to an empty one.
        mutating func skipMacro() {
            while let scalar = current, scalar != "\n" { advance() }
            while current != nil {
                advance()  // the newline
                if current == "\n" || current == nil { return }
                while let scalar = current, scalar != "\n" { advance() }
            }
        }
    }
}
