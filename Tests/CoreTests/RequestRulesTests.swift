import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.admitted, .timeLimit(.minutes(10))) struct RequestRulesTests {
    @Test(arguments: [
        (60.0, RequestRules.IdleTimeout.seconds(60)),
        (0.003, .seconds(0.003)),
        (999_999, .seconds(999_999)),
        (1_000_000, RequestRules.IdleTimeout.none),
        (1e300, RequestRules.IdleTimeout.none),
        (TimeInterval.infinity, RequestRules.IdleTimeout.none),
        (TimeInterval.nan, RequestRules.IdleTimeout.none),
    ])
    func timeoutsMeanAnIdleTimeoutOrNone(interval: TimeInterval, expected: RequestRules.IdleTimeout) {
        #expect(RequestRules.idleTimeout(interval) == expected)
    }

    /// The text's answer is Foundation's wherever the text answers: a URL the plain-host check accepts is one whose
    /// scheme and host Foundation accepts, and every other URL is left to Foundation.
    @Test(arguments: [
        ("http://example.com/a.bin", true), ("https://a-b.example.com", true), ("http://127.0.0.1:8080/x", true),
        ("http://host:/x", true), ("http://:80/x", false), ("http://h:8x/", false),
        ("http://user@host/x", false), ("http://[::1]/x", false), ("http://h%41st/x", false), ("HTTP://host/", false),
        ("ftp://host/x", false), ("http:///x", false), ("http://?q", false), ("https://host?q=1#f", true),
        ("http://host#f", true), ("file:///tmp/a", false), ("mailto:a@b", false),
    ])
    func aPlainHostIsReadFromTheTextAsFoundationReadsIt(text: String, plain: Bool) {
        #expect(RequestRules.hasPlainHTTPHost(text) == plain)
        // Not a URL to Foundation: there is nothing to compare.
        guard let url = URL(string: text) else { return }
        let byFoundation = RequestRules.validate(url: url, timeout: 60)
        #expect(RequestRules.validate(url: url, timeout: 60, text: url.absoluteString) == byFoundation)
        if plain { #expect(byFoundation == nil) }
    }

    @Test(arguments: [0.0, -1, -TimeInterval.infinity, -TimeInterval.leastNonzeroMagnitude])
    func aNonPositiveTimeoutIsInvalid(interval: TimeInterval) {
        var request = URLRequest(url: URL(string: "http://host/")!)
        request.timeoutInterval = interval
        #expect(RequestRules.idleTimeout(interval) == nil)
        #expect(RequestRules.validate(request) == .invalidTimeout(interval))
    }

    /// Only a GET without a `Range` of its own may continue a part or be checked against an existing file; a
    /// request made from a URL answers without building its `URLRequest`, the same as the one it builds.
    @Test func onlyAPlainGetMayContinueOrBeChecked() {
        let url = URL(string: "http://host/a.bin")!
        let file = NetworkRequest.Destination.file(URL(fileURLWithPath: "/tmp/a.bin"))
        func request(_ change: (inout URLRequest) -> Void) -> NetworkRequest {
            var urlRequest = URLRequest(url: url)
            change(&urlRequest)
            return NetworkRequest(urlRequest, destination: file, fileOptions: .init(existingFile: .skipIfUnchanged))
        }
        let compact = NetworkRequest(url: url, destination: file, fileOptions: .init(existingFile: .skipIfUnchanged))
        #expect(RangeRules.mayContinue(compact) && RangeRules.mayContinue(compact.urlRequest))
        #expect(ExistingFileRules.checksExistingFile(compact))
        let cases: [(NetworkRequest, Bool)] = [
            (request { _ in }, true),
            (request { $0.httpMethod = "get" }, true),
            (request { $0.httpMethod = "POST" }, false),
            (request { $0.httpMethod = "HEAD" }, false),
            (request { $0.setValue("bytes=0-9", forHTTPHeaderField: "Range") }, false),
            (request { $0.setValue("bytes=5-", forHTTPHeaderField: "range") }, false),
        ]
        for (request, plain) in cases {
            #expect(RangeRules.mayContinue(request) == plain && RangeRules.mayContinue(request.urlRequest) == plain)
            #expect(ExistingFileRules.checksExistingFile(request) == plain)
        }
        // Memory bodies and `.replace` are never checked, whatever the request.
        #expect(!ExistingFileRules.checksExistingFile(NetworkRequest(url: url)))
        #expect(!ExistingFileRules.checksExistingFile(NetworkRequest(url: url, destination: file)))
    }

    @Test func fileDestinationsMustNameAFile() {
        let request = URLRequest(url: URL(string: "http://host/")!)
        let web = URL(string: "https://host/file")!
        let folder = URL(fileURLWithPath: "/tmp/folder/", isDirectory: true)
        #expect(RequestRules.validate(request, destination: .file(web)) == .invalidDestination(web))
        #expect(RequestRules.validate(request, destination: .file(folder)) == .invalidDestination(folder))
        #expect(RequestRules.validate(request, destination: .file(URL(fileURLWithPath: "/tmp/a.bin"))) == nil)
    }

    @Test func theSizeLimitDependsOnTheDestination() {
        let file = NetworkRequest.Destination.file(URL(fileURLWithPath: "/tmp/a"))
        #expect(RequestRules.maximumResponseSize(.automatic, destination: .memory) == 64 << 20)
        #expect(RequestRules.maximumResponseSize(.automatic, destination: file) == nil)
        #expect(RequestRules.maximumResponseSize(.unlimited, destination: .memory) == nil)
        #expect(RequestRules.maximumResponseSize(1_000, destination: file) == 1_000)
        #expect(RequestRules.maximumResponseSize(.bytes(-5), destination: .memory) == 0)
    }

    @Test(arguments: [
        ("http://user:PASSWORD@host:8080/a/b?token=abc&x&y=2#frag", "http://***@host:8080/a/b?token=***&***&y=***#***"),
        ("https://host/plain", "https://host/plain"),
        ("http://user@host/?key=", "http://***@host/?key=***"),
        ("http://[::1]:80/p?q=1", "http://[::1]:80/p?q=***"),
    ])
    func redactionMasksUserInfoQueryValuesAndFragments(url: String, expected: String) {
        #expect(Redaction.describe(URL(string: url)!) == expected)
    }

    @Test func errorDescriptionsNeverShowSecrets() {
        let secret = URL(string: "http://user:PASSWORD@127.0.0.1:9/x?token=SECRET")!
        var failing = URLError(.timedOut, userInfo: [NSURLErrorFailingURLErrorKey: secret])
        failing = URLError(failing.code, userInfo: failing.userInfo)
        let errors: [NetworkQueueError] = [
            .cancelledBecauseSiblingFailed(sibling: secret), .unacceptableStatus(code: 500, url: secret),
            .unacceptableContentType("text/html", url: secret), .responseTooLarge(limit: 1, url: secret),
            .transport(failing), .preflightFailed(failing), .invalidRequest(.missingHost(secret)),
            .invalidRequest(.invalidDestination(secret)),
        ]
        for error in errors {
            for text in [error.localizedDescription, "\(error)", String(reflecting: error)] {
                #expect(!text.contains("PASSWORD") && !text.contains("SECRET") && !text.contains("user"), "\(text)")
            }
        }
        #expect(
            NetworkQueueError.unacceptableStatus(code: 500, url: secret).description
                == "HTTP status 500 from http://***@127.0.0.1:9/x?token=***")
        // The URL itself stays available to code.
        #expect(
            NetworkQueueError.cancelledBecauseSiblingFailed(sibling: secret)
                == .cancelledBecauseSiblingFailed(sibling: secret))
    }

    @Test func theShortBodyRuleCountsOnlyBodiesThatMustArriveWhole() {
        let url = URL(string: "http://host/")!
        func response(_ status: Int, _ headers: [String: String]) -> ResponseHead {
            responseHead(url, status: status, fields: headers)
        }
        let plain = response(200, ["Content-Length": "10"])
        #expect(ResponseRules.isShort(plain, method: "GET", received: 9))
        #expect(!ResponseRules.isShort(plain, method: "GET", received: 10))
        #expect(!ResponseRules.isShort(plain, method: "HEAD", received: 0))
        #expect(!ResponseRules.isShort(response(304, ["Content-Length": "10"]), method: "GET", received: 0))
        #expect(
            !ResponseRules.isShort(
                response(200, ["Content-Length": "10", "Content-Encoding": "gzip"]), method: nil, received: 3))
        #expect(!ResponseRules.isShort(response(200, [:]), method: nil, received: 0))
        #expect(ResponseRules.isInterim(response(100, [:])) && ResponseRules.isInterim(response(103, [:])))
        #expect(!ResponseRules.isInterim(response(200, [:])))
    }
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct RedirectPolicyTests {
    func request(_ url: String, headers: [String: String]) -> URLRequest {
        var request = URLRequest(url: URL(string: url)!)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    let credentials = [
        "Authorization": "Bearer T", "cookie": "s=1", "Proxy-Authorization": "Basic P", "X-Api-Key": "K",
        "Accept": "*/*",
    ]

    @Test(arguments: [
        ("http://127.0.0.1:8000/a", "http://127.0.0.1:8000/b", false),
        ("http://127.0.0.1:8000/a", "http://127.0.0.1:8001/b", true),
        ("http://127.0.0.1:8000/a", "http://localhost:8000/b", true),
        ("http://Host:80/a", "http://host/b", false),
        ("http://host/a", "https://host/b", true),
        ("https://host/a", "https://HOST:443/b", false),
    ])
    func credentialsStayBehindWhenTheOriginChanges(from: String, to: String, strips: Bool) {
        let decision = RedirectPolicy.default.decide(from: URL(string: from), to: request(to, headers: credentials))
        guard case .follow(let next) = decision else {
            Issue.record("refused \(to)")
            return
        }
        let kept = Set((next.allHTTPHeaderFields ?? [:]).keys.map { $0.lowercased() })
        let expected: Set<String> =
            strips
            ? ["x-api-key", "accept"] : ["authorization", "cookie", "proxy-authorization", "x-api-key", "accept"]
        #expect(kept == expected)
    }

    @Test func customCredentialHeadersCanBeAdded() {
        let policy = RedirectPolicy(
            crossOriginStrippedHeaders: RedirectPolicy.defaultStrippedHeaders.union(["X-API-KEY"]))
        guard
            case .follow(let next) = policy.decide(
                from: URL(string: "http://a/"), to: request("http://b/", headers: credentials))
        else {
            Issue.record("refused")
            return
        }
        #expect(next.allHTTPHeaderFields?.keys.map { $0.lowercased() } == ["accept"])
    }

    @Test func downgradesAndOtherSchemesAreRefused() {
        let policy = RedirectPolicy.default
        #expect(
            policy.decide(from: URL(string: "https://a/"), to: request("http://a/", headers: [:]))
                == .refuse(URLError(.appTransportSecurityRequiresSecureConnection)))
        #expect(
            policy.decide(from: URL(string: "http://a/"), to: request("ftp://a/", headers: [:]))
                == .refuse(URLError(.unsupportedURL)))
        #expect(
            policy.decide(from: URL(string: "http://a/"), to: request("file:///etc/passwd", headers: [:]))
                == .refuse(URLError(.unsupportedURL)))
        let lenient = RedirectPolicy(allowsHTTPSToHTTP: true)
        #expect(
            lenient.decide(from: URL(string: "https://a/"), to: request("http://a/", headers: [:]))
                != .refuse(URLError(.appTransportSecurityRequiresSecureConnection)))
    }
}
