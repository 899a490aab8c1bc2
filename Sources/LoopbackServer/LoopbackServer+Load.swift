import Foundation

/// Routes of servers shaped by load, for adaptive concurrency: one whose throughput saturates at a number
/// of transfers and falls beyond, one that refuses above a number in flight, one with latency and no limit. Each
/// counts the transfers in flight on its own route (by its `key=`), HEADs excluded.
extension LoopbackServer {
    /// `/shared/N?rate=R&best=B&key=K`: N pattern bytes, every transfer of the route sharing a total of R bytes a second
    /// (default 20 MB) while at most B (default 4) run; beyond B the total falls by 8% for each one more (at least a
    /// fifth of R): a disk that seeks. Written in 16 KiB pieces, each transfer's pace set anew per piece from the
    /// count then.
    func serveShared(_ size: Int, _ request: HTTPRequest, _ response: Response) -> Bool {
        let headers = ["Content-Length": "\(size)", "Content-Type": "application/octet-stream"]
        guard request.method != "HEAD" else { return response.head(200, headers, isLast: true) }
        let key = "shared:" + (request.query["key"] ?? "")
        let rate = Double(request.int("rate") ?? 20_000_000)
        let best = max(1, request.int("best") ?? 4)
        state.with { $0.inFlight[key, default: 0] += 1 }
        defer { state.with { $0.inFlight[key, default: 1] -= 1 } }
        guard response.head(200, headers) else { return false }
        var sent = 0
        let piece = 16 << 10
        while sent < size {
            let running = max(1, state.with { $0.inFlight[key, default: 1] })
            let total =
                running <= best
                ? rate * Double(running) / Double(best) : rate * max(0.2, 1 - 0.08 * Double(running - best))
            let length = min(piece, size - sent)
            let began = DispatchTime.now().uptimeNanoseconds
            guard response.write(Self.patternBytes(length, from: sent), isLast: sent + length == size) else {
                return false
            }
            sent += length
            let due = Double(length) / (total / Double(running))
            let spent = Double(DispatchTime.now().uptimeNanoseconds - began) / 1e9
            if due > spent { Thread.sleep(forTimeInterval: due - spent) }
        }
        return true
    }

    /// `/capped/N?rate=R`: N pattern bytes (a `Range` of one span answered 206, with `Accept-Ranges` and an ETag), each
    /// response paced at R bytes a second (default 32 MB) from its first byte, with no burst: a server that caps each
    /// connection, whether it carries one long response or many short ranged ones (nginx's `limit_rate` lets each
    /// response's first second go at once).
    func serveCapped(_ size: Int, _ request: HTTPRequest, _ response: Response) -> Bool {
        let rate = Double(max(1, request.int("rate") ?? 32_000_000))
        var range = 0..<size
        var status = 200
        if let header = request.headers["range"] {
            guard let asked = Self.parseRange(header, size: size) else {
                return response.send(416, ["Content-Range": "bytes */\(size)"])
            }
            (range, status) = (asked, 206)
        }
        var headers = [
            "Content-Length": "\(range.count)", "Content-Type": "application/octet-stream", "Accept-Ranges": "bytes",
            "ETag": "\"capped-\(size)\"",
        ]
        if status == 206 { headers["Content-Range"] = "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(size)" }
        guard request.method != "HEAD" else { return response.head(status, headers, isLast: true) }
        guard response.head(status, headers) else { return false }
        let began = DispatchTime.now().uptimeNanoseconds
        var sent = range.lowerBound
        let piece = 64 << 10
        while sent < range.upperBound {
            let length = min(piece, range.upperBound - sent)
            guard response.write(Self.patternBytes(length, from: sent), isLast: sent + length == range.upperBound)
            else {
                return false
            }
            sent += length
            let due = Double(sent - range.lowerBound) / rate
            let spent = Double(DispatchTime.now().uptimeNanoseconds - began) / 1e9
            if due > spent { Thread.sleep(forTimeInterval: due - spent) }
        }
        return true
    }

    /// `/crowd/N?max=M&ms=L&key=K`: with more than M (default 6) of the route's transfers in flight, 503 at once (no
    /// Retry-After); else N pattern bytes after L milliseconds (default 50). ``refusedCrowd`` counts the 503s.
    func serveCrowd(_ size: Int, _ request: HTTPRequest, _ response: Response) -> Bool {
        guard request.method != "HEAD" else {
            return response.head(200, ["Content-Length": "\(size)"], isLast: true)
        }
        let key = "crowd:" + (request.query["key"] ?? "")
        let limit = request.int("max") ?? 6
        let running = state.with { state in
            state.inFlight[key, default: 0] += 1
            let running = state.inFlight[key, default: 0]
            state.peakInFlight[key] = max(state.peakInFlight[key] ?? 0, running)
            return running
        }
        defer { state.with { $0.inFlight[key, default: 1] -= 1 } }
        guard running <= limit else {
            state.with { $0.refusedCrowd += 1 }
            return response.send(503, body: "busy\n")
        }
        Thread.sleep(forTimeInterval: Double(max(0, request.int("ms") ?? 50)) / 1000)
        return serveBytes(size, request, response)
    }

    /// `/latency/N?ms=L`: N pattern bytes after L milliseconds (default 100), however many run.
    func serveLatency(_ size: Int, _ request: HTTPRequest, _ response: Response) -> Bool {
        if request.method != "HEAD" { Thread.sleep(forTimeInterval: Double(max(0, request.int("ms") ?? 100)) / 1000) }
        return serveBytes(size, request, response)
    }

    /// The `/crowd` requests refused with 503 since the start (or the last ``resetStatistics()``).
    public var refusedCrowd: Int { state.with { $0.refusedCrowd } }

    /// The most `/crowd` requests of `key` in flight at once (HEADs not counted), refused ones included.
    public func peakCrowd(key: String = "") -> Int { state.with { $0.peakInFlight["crowd:" + key] ?? 0 } }
}
