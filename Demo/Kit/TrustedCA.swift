import Foundation

/// The CA file a run trusts beside the system's, and what named it.
public enum TrustedCA {
    /// The system's CA bundles, where Debian, Fedora and Alpine keep them.
    public static let systemBundles = [
        "/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem",
    ]

    /// The CA file `option` names (`--cacert`), else the environment's `CURL_CA_BUNDLE`, else its `SSL_CERT_FILE` (an
    /// empty variable names none), with what named it; nil when none does.
    ///
    /// A variable that names the system's own bundle (as some images set `CURL_CA_BUNDLE`) adds nothing: it is not used,
    /// so that the system's certificates are not parsed twice for every connection.
    public static func file(option: String?, environment: [String: String]) -> (path: String, source: String)? {
        if let option { return (option, "--cacert") }
        for name in ["CURL_CA_BUNDLE", "SSL_CERT_FILE"] {
            guard let path = environment[name], !path.isEmpty else { continue }
            if isSystemBundle(path) { return nil }
            return (path, name)
        }
        return nil
    }

    /// True when `path` is one of ``systemBundles`` (through links too).
    public static func isSystemBundle(_ path: String) -> Bool {
        guard let resolved = realpath(path, nil) else { return false }
        defer { free(resolved) }
        let target = String(cString: resolved)
        return systemBundles.contains { bundle in
            guard let own = realpath(bundle, nil) else { return false }
            defer { free(own) }
            return String(cString: own) == target
        }
    }
}
