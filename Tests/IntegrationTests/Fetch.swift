import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A raw URLSession fetch, independent of NetworkQueue, for testing the server itself.
func fetch(_ request: URLRequest, session: URLSession = .shared) async -> (HTTPURLResponse?, Data, (any Error)?) {
    await withCheckedContinuation { continuation in
        session.dataTask(with: request) { data, response, error in
            continuation.resume(returning: (response as? HTTPURLResponse, data ?? Data(), error))
        }.resume()
    }
}

func fetch(_ url: URL, method: String = "GET", headers: [String: String] = [:], body: Data? = nil) async
    -> (HTTPURLResponse?, Data, (any Error)?)
{
    var request = URLRequest(url: url)
    request.httpMethod = method
    request.httpBody = body
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    return await fetch(request)
}

/// The server's body pattern: byte i is `i % 256`. Built from 256-byte runs: a byte-by-byte map is slow
/// in debug builds, and the soak compares megabytes.
func pattern(_ range: Range<Int>) -> Data {
    let cycle = Data((0..<256).map { UInt8($0) })
    var data = Data(capacity: range.count)
    var index = range.lowerBound
    while index < range.upperBound {
        let start = index % 256
        let count = min(256 - start, range.upperBound - index)
        data.append(cycle[start..<(start + count)])
        index += count
    }
    return data
}
