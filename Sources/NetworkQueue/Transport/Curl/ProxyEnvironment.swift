/// The proxies the environment names, read the way libcurl reads them (lib/url.c, `detect_proxy` and the
/// `no_proxy` lookup): for `http`, `http_proxy` only (never `HTTP_PROXY`: a CGI program's environment can
/// carry a request's `Proxy` header under that name); for `https`, `https_proxy` then `HTTPS_PROXY`; then
/// `all_proxy`, `ALL_PROXY`; `no_proxy`, then `NO_PROXY`. An empty value counts as unset, as in libcurl.
///
/// ``CurlTransport`` reads them once, when it is created, and gives libcurl the result as options: left to
/// itself, libcurl reads up to seven variables for every transfer (about 1.4k instructions, a cost the raw
/// libcurl loop pays too). Pure; tested alone.
struct ProxyEnvironment: Equatable {
    /// The proxy for `http` URLs; empty: none.
    var http = ""
    /// The proxy for `https` URLs; empty: none.
    var https = ""
    /// The hosts reached without a proxy (libcurl's `CURLOPT_NOPROXY` syntax); empty: none.
    var noProxy = ""

    /// Reads `environment` (the process's own by default).
    init(_ environment: [String: String]) {
        func value(_ names: String...) -> String {
            for name in names { if let value = environment[name], !value.isEmpty { return value } }
            return ""
        }
        http = value("http_proxy", "all_proxy", "ALL_PROXY")
        https = value("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")
        noProxy = value("no_proxy", "NO_PROXY")
    }
}
