import Foundation

/// A certificate and private key the transport shows a server that asks for one (TLS client authentication, curl's
/// `--cert` and `--key`), both PEM.
///
/// The files are read once, when the transport is created: a pipe (`--key <(gpg -d key.pem.gpg)`) works, and a file
/// changed or removed afterwards changes nothing. A folder, a device, a file without a PEM certificate (or key) is
/// refused then, with the reason, as ``CurlTransport/LoadError/unreadableClientCertificate(path:reason:)``.
public struct ClientCertificate: Sendable, Hashable {
    /// The PEM file holding the certificate (and the key too, when ``key`` is nil).
    public var certificate: URL
    /// The PEM file holding the private key; nil (the default): the key is in ``certificate``'s file.
    public var key: URL?
    /// The key's pass phrase, when it is encrypted; default nil. Never logged.
    public var keyPassword: String?

    /// A client certificate from `certificate`, its key from `key` (nil: the same file), opened with `keyPassword`.
    public init(certificate: URL, key: URL? = nil, keyPassword: String? = nil) {
        self.certificate = certificate
        self.key = key
        self.keyPassword = keyPassword
    }

    /// What a PEM file of this kind must hold.
    enum Part {
        case certificate, key

        var marker: String {
            switch self {
            case .certificate: "-----BEGIN CERTIFICATE-----"
            case .key: "PRIVATE KEY-----"
            }
        }

        var noun: String {
            switch self {
            case .certificate: "no PEM certificate (-----BEGIN CERTIFICATE-----) in it"
            case .key: "no PEM private key (-----BEGIN … PRIVATE KEY-----) in it"
            }
        }
    }

    /// The bytes of the PEM file at `url`, read once (a pipe as it comes), or why they cannot be used: the file is
    /// missing, a folder or a device, longer than 16 MiB, not text, or without the part asked for.
    static func read(_ url: URL, holding part: Part) -> Result<Data, TextFile.Problem> {
        let text: String
        do throws(TextFile.Problem) {
            text = try TextFile.read(atPath: url.path, limit: 16 << 20)
        } catch {
            return .failure(error)
        }
        guard text.contains(part.marker) else { return .failure(TextFile.Problem(description: part.noun)) }
        return .success(Data(text.utf8))
    }
}
