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
        if isHead { return !forever || response.write(Self.lastChunk, isLast: true) }
        let piece = max(1, size / max(1, pieces))
        var sent = 0
        var index = 0
        while forever || sent < size {
            if index > 0 { Thread.sleep(forTimeInterval: Double(max(0, interval)) / 1000) }
            let length = forever ? piece : (index + 1 >= pieces ? size - sent : min(piece, size - sent))
            var bytes = Self.patternBytes(length, from: sent)
            if forever { bytes = Self.chunk(bytes) }
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
        if request.method == "HEAD" { return response.write(Self.lastChunk, isLast: true) }
        let chunk = Self.chunk(Self.patternBytes(Self.chunkSize))
        while true {
            guard response.write(chunk, isLast: false) else { return false }
        }
    }
}
