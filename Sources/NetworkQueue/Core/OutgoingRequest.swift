import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a transfer sends: a GET of a URL's text with `URLRequest`'s defaults (a request made with
/// ``NetworkRequest/init(url:destination:validation:integrity:fileOptions:retryPolicy:timeLimits:priority:handlers:tag:userInfo:)``),
/// or a whole `URLRequest`.
///
/// The text form is what a list's requests are, and it goes to libcurl as it is: no `URL` is parsed and no
/// `URLRequest` built on the way (parsing the text again cost about 3,500 instructions a request, 3% of one). Whatever
/// needs Foundation's types asks ``urlRequest``, which builds them then: a transport other than libcurl, an adapt
/// hook, a HEAD preflight, a range.
enum OutgoingRequest: Sendable {
    /// A GET of this URL text (already validated: it parses), no header of its own, a 60-second timeout.
    case get(String)
    /// This request, as it is.
    case request(URLRequest)

    /// The request as Foundation's type (built for the text form).
    var urlRequest: URLRequest {
        switch self {
        case .get(let text): URLRequest(url: URL(string: text)!)
        case .request(let request): request
        }
    }

    /// The URL's text (nil for a `URLRequest` without a URL).
    var urlText: String? {
        switch self {
        case .get(let text): text
        case .request(let request): request.url?.absoluteString
        }
    }

    /// The URL (parsed, for the text form).
    var url: URL? {
        switch self {
        case .get(let text): URL(string: text)
        case .request(let request): request.url
        }
    }

    /// The method, uppercased as sent (`GET` when the request names none).
    var method: String {
        switch self {
        case .get: "GET"
        case .request(let request): RequestRules.sentMethod(request.httpMethod)
        }
    }

    /// The timeout, in seconds (`URLRequest`'s default of 60 for the text form).
    var timeoutInterval: TimeInterval {
        switch self {
        case .get: RequestRules.defaultTimeout
        case .request(let request): request.timeoutInterval
        }
    }

    /// A header field the request sends (the text form sends none of its own).
    func value(forHTTPHeaderField name: String) -> String? {
        switch self {
        case .get: nil
        case .request(let request): request.value(forHTTPHeaderField: name)
        }
    }

    /// Sets a header field, making the text form a `URLRequest` first.
    mutating func setValue(_ value: String?, forHTTPHeaderField name: String) {
        var request = urlRequest
        request.setValue(value, forHTTPHeaderField: name)
        self = .request(request)
    }
}
