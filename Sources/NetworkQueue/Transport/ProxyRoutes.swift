import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The proxies a transport uses: the environment's, read the way libcurl reads them (lib/url.c, `detect_proxy` and
/// the `no_proxy` lookup), none, or one set in code (``Proxy``). From the environment: for `http`, `http_proxy`
/// only (never `HTTP_PROXY`: a CGI program's environment can carry a request's `Proxy` header under that name);
/// for `https`, `https_proxy` then `HTTPS_PROXY`; then `all_proxy`, `ALL_PROXY`; `no_proxy`, then `NO_PROXY`. An
/// empty value counts as unset, as in libcurl.
///
/// ``CurlTransport`` works them out once, when it is created, and gives libcurl the result as options: left to
/// itself, libcurl reads up to seven variables for every transfer (about 1.4k instructions, a cost the raw
/// libcurl loop pays too). Both transports use it to keep a proxy's credentials out of every error's text,
/// and to tell an unusable proxy setting from an unreachable server. Pure; tested alone.
struct ProxyRoutes: Equatable {
    /// The proxy for `http` URLs; empty: none.
    var http = ""
    /// The proxy for `https` URLs; empty: none.
    var https = ""
    /// The hosts reached without a proxy (libcurl's `CURLOPT_NOPROXY` syntax); empty: none.
    var noProxy = ""
    /// The variables `http` and `https` came from (for messages).
    private(set) var httpSource = ""
    private(set) var httpsSource = ""
    /// The credentials the proxies carry (see ``credentials(in:)``), kept out of every error's text.
    private(set) var secrets: [String] = []
    /// A code-set proxy's credentials, given to libcurl as options of their own (never inside a proxy's URL, so
    /// never in libcurl's words about it); nil: none, or in the proxy's value (the environment's).
    private(set) var credentials: Proxy.Credentials?
    /// True for an HTTPS proxy: its certificate is checked against the transport's trusted CAs.
    var isTLSProxy: Bool { [http, https].contains { $0.lowercased().hasPrefix("https://") } }

    /// The user-info key of an error's words about an unusable proxy (shown by ``NetworkQueueError``'s text).
    static let problemKey = "NetworkQueueProxyProblem"

    /// The schemes libcurl takes for a proxy (a value without a scheme is an HTTP proxy).
    static let proxySchemes: Set<String> = ["http", "https", "socks4", "socks4a", "socks5", "socks5h"]

    /// Reads `environment` (the process's own by default).
    init(_ environment: [String: String]) {
        func value(_ names: String...) -> (String, String) {
            for name in names { if let value = environment[name], !value.isEmpty { return (value, name) } }
            return ("", "")
        }
        (http, httpSource) = value("http_proxy", "all_proxy", "ALL_PROXY")
        (https, httpsSource) = value("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")
        (noProxy, _) = value("no_proxy", "NO_PROXY")
        secrets = [http, https].compactMap(Self.credentials(in:))
    }

    /// The proxies `setting` names, with `environment` for ``Proxy/Setting/environment``.
    init(_ setting: Proxy.Setting, environment: [String: String]) {
        switch setting {
        case .environment: self.init(environment)
        case .direct: self.init([:])
        case .through(let proxy):
            self.init([:])
            (http, https) = (proxy.address, proxy.address)
            (httpSource, httpsSource) = ("CurlTransport.Options.proxy", "CurlTransport.Options.proxy")
            noProxy = proxy.bypass.joined(separator: ",")
            credentials = proxy.credentials
            secrets = proxy.credentials.map { ["\($0.user):\($0.password)"] } ?? []
        }
    }

    /// The proxy a URL of `scheme` goes through (before `no_proxy`), and the variable it came from.
    func proxy(forScheme scheme: String?) -> (value: String, source: String) {
        scheme?.lowercased() == "https" ? (https, httpsSource) : (http, httpSource)
    }

    /// True when `value` is a proxy libcurl can use: `[scheme://][user[:password]@]host[:port]`, with a
    /// scheme it takes, a host, and a port (if any) of digits.
    static func isUsable(_ value: String) -> Bool {
        let text = value.contains("://") ? value : "http://" + value
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            proxySchemes.contains(scheme), let host = components.host, !host.isEmpty,
            components.port.map({ $0 > 0 && $0 < 65_536 }) ?? true
        else { return false }
        return true
    }

    /// `value` with its credentials (anything between `://` and the last `@` before the host) as `***`.
    static func redacted(_ value: String) -> String {
        guard let secret = credentials(in: value) else { return value }
        return value.replacingOccurrences(of: secret, with: "***")
    }

    /// The credentials part of a proxy value, if it has one.
    static func credentials(in value: String) -> String? {
        let afterScheme = value.range(of: "://").map { value[$0.upperBound...] } ?? value[...]
        // The authority ends at the first "/" after the credentials; the credentials end at the last "@" before it.
        let authority = afterScheme.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard let at = authority.lastIndex(of: "@"), at > authority.startIndex else { return nil }
        return String(authority[..<at])
    }

    /// `text` with the credentials of every proxy named here replaced by `***`: libcurl's and Foundation's
    /// words for a proxy failure quote the proxy's value whole.
    func scrub(_ text: String) -> String {
        secrets.reduce(text) { text, secret in text.replacingOccurrences(of: secret, with: "***") }
    }

    /// The error a transfer to `url` ends with, made fit to show: no proxy credentials in any text of it, and a
    /// proxy failure said to be one. When the proxy for `url`'s scheme is not a usable value and the failure is
    /// the proxy's (`isProxyFailure`), it is `.unsupportedURL` (never retried: the setting, not the network, is
    /// wrong), naming the variable and the value without its credentials.
    func refine(_ error: URLError, url: URL?, isProxyFailure: Bool) -> URLError {
        let (value, source) = proxy(forScheme: url?.scheme)
        var info = error.userInfo
        if isProxyFailure, !value.isEmpty, !Self.isUsable(value) {
            let problem = "the proxy \(source) names is not usable: \(Self.redacted(value))"
            info[NSLocalizedDescriptionKey] = problem
            info[Self.problemKey] = problem
            return URLError(.unsupportedURL, userInfo: info)
        }
        guard !secrets.isEmpty else { return error }
        for (key, entry) in info {
            if let text = entry as? String { info[key] = scrub(text) }
        }
        return URLError(error.code, userInfo: info)
    }
}
