import Foundation
import NetworkQueue
import Testing

/// The transports the integration suite runs against: each test runs once per transport available on
/// the platform (libcurl's and URLSession's on Linux; URLSession's on Apple platforms).
enum TransportKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case curl
    case urlSession

    static var allCases: [TransportKind] {
        #if os(Linux)
            [.curl, .urlSession]
        #else
            [.urlSession]
        #endif
    }

    var testDescription: String { rawValue }

    /// A new transport of this kind following `redirects`; `cookies: false` turns its cookie store off.
    func make(cookies: Bool = true, redirects: RedirectPolicy = .default) -> any Transport {
        switch self {
        case .curl:
            #if os(Linux)
                var options = CurlTransport.Options()
                if !cookies { options.cookies = .disabled }
                options.redirects = redirects
                do {
                    return try CurlTransport(options: options)
                } catch {
                    fatalError("libcurl must load on Linux for these tests: \(error)")
                }
            #else
                fatalError("CurlTransport is Linux-only")
            #endif
        case .urlSession:
            return URLSessionTransport(cookies: cookies ? .ephemeral : .disabled, redirects: redirects)
        }
    }
}
