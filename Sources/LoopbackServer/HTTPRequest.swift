import Foundation

/// A parsed HTTP/1.1 request head; the body is read separately, streaming.
struct HTTPRequest {
    var method: String
    /// The path without the query.
    var path: String
    var query: [String: String]
    /// Header names lowercased.
    var headers: [String: String]

    var target: String {
        query.isEmpty
            ? path : path + "?" + query.sorted { $0.key < $1.key }.map { "\($0)=\($1)" }.joined(separator: "&")
    }
    var wantsClose: Bool { headers["connection"]?.lowercased() == "close" }
    func int(_ name: String) -> Int? { query[name].flatMap { Int($0) } }
}

/// Reads requests from one connection: heads, then bodies by Content-Length or chunked encoding.
struct RequestReader {
    let fd: Int32
    private var buffer: [UInt8] = []
    private var scratch = [UInt8](repeating: 0, count: 64 * 1024)
    static let maximumHeadSize = 64 * 1024

    init(fd: Int32) { self.fd = fd }

    enum Failure: Error {
        case closed
        case malformed
    }

    /// The next request head, or nil when the peer closed the connection.
    mutating func nextHead() throws(Failure) -> HTTPRequest? {
        let terminator: [UInt8] = [13, 10, 13, 10]
        var end: Int?
        while true {
            end = buffer.firstRange(of: terminator)?.upperBound
            if end != nil { break }
            guard buffer.count < Self.maximumHeadSize else { throw .malformed }
            guard fill() else {
                if buffer.isEmpty { return nil }
                throw .closed
            }
        }
        let head = String(decoding: buffer[..<end!], as: UTF8.self)
        buffer.removeFirst(end!)
        var lines = head.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        guard !lines.isEmpty else { throw .malformed }
        let parts = lines.removeFirst().split(separator: " ")
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1.") else { throw .malformed }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { throw .malformed }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            headers[name] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let target = String(parts[1])
        let components = URLComponents(string: target)
        var query: [String: String] = [:]
        for item in components?.queryItems ?? [] { query[item.name] = item.value ?? "" }
        return HTTPRequest(method: String(parts[0]), path: components?.path ?? target, query: query, headers: headers)
    }

    /// Reads and discards the request body; returns its length.
    mutating func consumeBody(of request: HTTPRequest) throws(Failure) -> Int {
        if request.headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
            var total = 0
            while true {
                let line = try readLine()
                guard let size = Int(line.split(separator: ";")[0].trimmingCharacters(in: .whitespaces), radix: 16)
                else {
                    throw .malformed
                }
                if size == 0 {
                    while try !readLine().isEmpty {}
                    return total
                }
                try skip(size)
                total += size
                _ = try readLine()
            }
        }
        let length = request.headers["content-length"].flatMap { Int($0) } ?? 0
        try skip(length)
        return length
    }

    private mutating func readLine() throws(Failure) -> String {
        while true {
            if let range = buffer.firstRange(of: [13, 10]) {
                let line = String(decoding: buffer[..<range.lowerBound], as: UTF8.self)
                buffer.removeFirst(range.upperBound)
                return line
            }
            guard fill() else { throw .closed }
        }
    }

    private mutating func skip(_ count: Int) throws(Failure) {
        var left = count
        while left > 0 {
            if buffer.isEmpty, !fill() { throw .closed }
            let taken = min(left, buffer.count)
            buffer.removeFirst(taken)
            left -= taken
        }
    }

    private mutating func fill() -> Bool {
        guard let count = Socket.read(fd, into: &scratch) else { return false }
        buffer.append(contentsOf: scratch[..<count])
        return true
    }
}
