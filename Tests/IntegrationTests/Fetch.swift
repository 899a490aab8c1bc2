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

/// The server's body pattern: byte i is `i % 256`. Built by doubling one 256-byte cycle (a few dozen
/// appends even for 50 MB): a byte-by-byte loop is slow in debug builds and slower under a sanitizer.
func pattern(_ range: Range<Int>) -> Data {
    guard !range.isEmpty else { return Data() }
    let offset = range.lowerBound % 256
    var data = Data((0..<256).map { UInt8(truncatingIfNeeded: $0 + offset) })
    while data.count < range.count { data.append(data) }
    return Data(data.prefix(range.count))
}
