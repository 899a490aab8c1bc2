import Foundation

/// Routes of servers that never end, or end only very slowly: what a request's deadline, lowest speed and size
/// cap are for.
extension LoopbackServer {
    /// `/trickle/N/K/MS`: N pattern bytes in K pieces, MS milliseconds apart (the first at once, the last with what
    /// is left), under a `Content-Length` and an ETag (`"trickle-N"`): a server never silent for long, so an idle
    /// timeout never ends it. A `Range` (with a matching or no `If-Range`) is answered 206 from its first byte, the
    /// pieces as they would have come. `forever=1`: a chunked body of such pieces that never ends (until the client
    /// goes).
    func serveTrickle(_ size: Int, pieces: Int, interval: Int, _ request: HTTPRequest, _ response: Response)
        -> Bool
    {
        let forever = request.query["forever"] == "1"
        let etag = "\"trickle-\(size)\""
        var status = 200
        var start = 0
        if !forever, let header = request.headers["range"], request.headers["if-range"].map({ $0 == etag }) ?? true {
            guard let range = Self.parseRange(header, size: size), range.upperBound == size else {
                return response.send(416, ["Content-Range": "bytes */\(size)"])
            }
            (status, start) = (206, range.lowerBound)
        }
        var headers =
            forever
            ? ["Transfer-Encoding": "chunked", "Content-Type": "application/octet-stream"]
            : [
                "Content-Length": "\(size - start)", "Content-Type": "application/octet-stream", "ETag": etag,
                "Accept-Ranges": "bytes",
            ]
        if status == 206 { headers["Content-Range"] = "bytes \(start)-\(size - 1)/\(size)" }
        let isHead = request.method == "HEAD"
        // A HEAD's response has no body, not even a chunked one's last chunk.
        guard response.head(status, headers, isLast: isHead) else { return false }
        if isHead { return true }
        let piece = max(1, size / max(1, pieces))
        var sent = start
        var index = 0
        while forever || sent < size {
            if index > 0 { Thread.sleep(forTimeInterval: Double(max(0, interval)) / 1000) }
            let length = forever ? piece : (sent / piece + 1 >= pieces ? size - sent : min(piece, size - sent))
            var bytes = Self.patternBytes(length, from: sent)
            if forever { bytes = Self.chunk(bytes) }
            guard response.write(bytes, isLast: !forever && sent + length == size) else { return false }
            sent += length
            index += 1
        }
        return true
    }

    /// `/endless`: a chunked body of pattern bytes at full speed that never ends (until the client goes). With
    /// `nohead=1`, a HEAD is refused (405), as some servers do; with `sndbuf=N`, the connection's kernel send buffer
    /// is N bytes (loopback's grows to megabytes at once), so that what the server manages to write is close to what
    /// its client read.
    func serveEndless(_ request: HTTPRequest, _ response: Response) -> Bool {
        let isHead = request.method == "HEAD"
        if isHead, request.int("nohead") == 1 { return response.send(405, ["Allow": "GET"]) }
        if let bytes = request.int("sndbuf"), bytes > 0 { Socket.setSendBuffer(response.fd, bytes: Int32(bytes)) }
        let headers = ["Transfer-Encoding": "chunked", "Content-Type": "application/octet-stream"]
        guard response.head(200, headers, isLast: isHead) else { return false }
        if isHead { return true }
        let chunk = Self.chunk(Self.patternBytes(Self.chunkSize))
        while true {
            guard response.write(chunk, isLast: false) else { return false }
        }
    }
}
