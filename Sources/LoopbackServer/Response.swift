import Foundation

/// Writes one response, dropping the server's in-flight count just before the response's last byte.
final class Response {
    let fd: Int32
    private let id: Int
    private let server: LoopbackServer
    private var isFinished = false
    /// Set when a write found the client gone, or the client hung up while the body was paced.
    private var isAbandoned = false
    /// Fields every head of this response carries besides its own (the request's `spent=S`: see ``LoopbackServer``).
    var extraHeaders: [String: String] = [:]
    /// True when the request is a HEAD: ``send(_:_:body:)`` writes the head alone (a body after it would be read as
    /// the start of the next response on the connection).
    var isHead = false

    init(fd: Int32, id: Int, server: LoopbackServer) {
        self.fd = fd
        self.id = id
        self.server = server
    }

    /// Ends the request's in-flight period (once).
    func finishRequest() {
        guard !isFinished else { return }
        isFinished = true
        server.requestFinished(id, abandoned: isAbandoned)
    }

    /// The client hung up before the whole response: the request ends now, as abandoned.
    func clientHungUp() {
        isAbandoned = true
        finishRequest()
    }

    /// Sends nothing for `seconds` (a paced or stalled body); false when the client hung up meanwhile, and the
    /// request then ended as abandoned.
    func pause(_ seconds: Double) -> Bool {
        guard Socket.wait(fd, seconds: seconds) else {
            clientHungUp()
            return false
        }
        return true
    }

    /// Writes a response head; `isLast` when no body follows.
    @discardableResult
    func head(_ status: Int, _ headers: [String: String] = [:], isLast: Bool = false) -> Bool {
        var text = "HTTP/1.1 \(status) \(Self.reason(status))\r\n"
        let headers = headers.merging(extraHeaders) { own, _ in own }
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
        text += "\r\n"
        return write(Array(text.utf8), isLast: isLast)
    }

    /// Writes bytes; for the last write of a response the in-flight count drops before its final byte.
    @discardableResult
    func write(_ bytes: [UInt8], isLast: Bool) -> Bool {
        server.state.with { $0.statistics.bytesWritten += bytes.count }
        defer { server.state.with { $0.noteWritten(bytes.count) } }
        guard isLast, !bytes.isEmpty else {
            if isLast { finishRequest() }
            guard Socket.write(fd, bytes) else {
                clientHungUp()
                return false
            }
            return true
        }
        guard Socket.write(fd, bytes.dropLast()) else {
            clientHungUp()
            return false
        }
        finishRequest()
        return Socket.write(fd, bytes.suffix(1))
    }

    /// A whole response with a fixed body.
    @discardableResult
    func send(_ status: Int, _ headers: [String: String] = [:], body: String = "") -> Bool {
        var headers = headers
        headers["Content-Length"] = "\(body.utf8.count)"
        if headers["Content-Type"] == nil { headers["Content-Type"] = "text/plain" }
        let bodyless = body.isEmpty || isHead
        return head(status, headers, isLast: bodyless) && (bodyless || write(Array(body.utf8), isLast: true))
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 206: "Partial Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 307: "Temporary Redirect"
        case 304: "Not Modified"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 416: "Range Not Satisfiable"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        default: "Status"
        }
    }
}
