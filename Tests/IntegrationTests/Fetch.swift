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

/// The server's body pattern: byte i is `i % 256`.
func pattern(_ range: Range<Int>) -> Data { Data(range.map { UInt8(truncatingIfNeeded: $0) }) }
