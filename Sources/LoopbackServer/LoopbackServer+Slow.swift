import Foundation

/// Routes of servers that never end, or end only very slowly: what a request's deadline, lowest speed and size
/// cap are for.
extension LoopbackServer {
    /// `/trickle/N/K/MS`: N pattern bytes in K pieces, MS milliseconds apart (the first at once, the last with what
    /// is left), under a `Content-Length`: a server never silent for long, so an idle timeout never ends it.
    /// `forever=1`: a chunked body of such pieces that never ends (until the client goes).
    func serveTrickle(_ size: Int, pieces: Int, interval: Int, _ request: HTTPRequest, _ response: Response)
        -> Bool
    {
        let forever = request.query["forever"] == "1"
        let headers =
            forever
            ? ["Transfer-Encoding": "chunked", "Content-Type": "application/octet-stream"]
            : ["Content-Length": "\(size)", "Content-Type": "application/octet-stream"]
        let isHead = request.method == "HEAD"
        guard response.head(200, headers, isLast: isHead && !forever) else { return false }
        if isHead { return !forever || response.write(Array("0\r\n\r\n".utf8), isLast: true) }
        let piece = max(1, size / max(1, pieces))
        var sent = 0
        var index = 0
        while forever || sent < size {
            if index > 0 { Thread.sleep(forTimeInterval: Double(max(0, interval)) / 1000) }
            let length = forever ? piece : (index + 1 >= pieces ? size - sent : min(piece, size - sent))
            var bytes: [UInt8] = []
            bytes.reserveCapacity(length)
            while bytes.count < length {
                // Byte i is i % 256: a run of up to a chunk from the pattern at `sent + bytes.count`.
                let start = (sent + bytes.count) % 256
                bytes += Self.pattern[start..<(start + min(Self.chunkSize, length - bytes.count))]
            }
            if forever { bytes = Array((String(length, radix: 16) + "\r\n").utf8) + bytes + [13, 10] }
            guard response.write(bytes, isLast: !forever && sent + length == size) else { return false }
            sent += length
            index += 1
        }
        return true
    }

    /// `/endless`: a chunked body of pattern bytes at full speed that never ends (until the client goes).
    func serveEndless(_ request: HTTPRequest, _ response: Response) -> Bool {
        guard response.head(200, ["Transfer-Encoding": "chunked", "Content-Type": "application/octet-stream"])
        else { return false }
        let terminator = Array("0\r\n\r\n".utf8)
        if request.method == "HEAD" { return response.write(terminator, isLast: true) }
        let size = Array((String(Self.chunkSize, radix: 16) + "\r\n").utf8)
        let chunk = size + Self.patternBytes(Self.chunkSize) + [13, 10]
        while true {
            guard response.write(chunk, isLast: false) else { return false }
        }
    }
}
