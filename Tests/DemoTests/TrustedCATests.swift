import DemoKit
import Foundation
import Testing

/// Which CA file a run trusts beside the system's: `--cacert`, else `CURL_CA_BUNDLE`, else `SSL_CERT_FILE`; a variable
/// naming the system's own bundle adds nothing.
@Suite(.admitted, .timeLimit(.minutes(10))) struct TrustedCATests {
    @Test func theOptionComesFirstThenCurlsVariableThenOpenSSLs() {
        let environment = ["CURL_CA_BUNDLE": "/tmp/curl.pem", "SSL_CERT_FILE": "/tmp/ssl.pem"]
        #expect(TrustedCA.file(option: "/tmp/ca.pem", environment: environment)! == ("/tmp/ca.pem", "--cacert"))
        #expect(TrustedCA.file(option: nil, environment: environment)! == ("/tmp/curl.pem", "CURL_CA_BUNDLE"))
        #expect(
            TrustedCA.file(option: nil, environment: ["SSL_CERT_FILE": "/tmp/ssl.pem"])! == (
                "/tmp/ssl.pem", "SSL_CERT_FILE"
            ))
        // An empty variable names none.
        #expect(
            TrustedCA.file(option: nil, environment: ["CURL_CA_BUNDLE": "", "SSL_CERT_FILE": "/tmp/ssl.pem"])!
                == ("/tmp/ssl.pem", "SSL_CERT_FILE"))
        #expect(TrustedCA.file(option: nil, environment: [:]) == nil)
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/etc/ssl/certs/ca-certificates.crt")))
    func aVariableNamingTheSystemsBundleAddsNothing() throws {
        #expect(TrustedCA.isSystemBundle("/etc/ssl/certs/ca-certificates.crt"))
        #expect(
            TrustedCA.file(option: nil, environment: ["CURL_CA_BUNDLE": "/etc/ssl/certs/ca-certificates.crt"]) == nil)
        // Through a link too.
        let link = FileManager.default.temporaryDirectory.appendingPathComponent("bundle-\(UUID().uuidString).crt")
        try FileManager.default.createSymbolicLink(
            atPath: link.path, withDestinationPath: "/etc/ssl/certs/ca-certificates.crt")
        defer { try? FileManager.default.removeItem(at: link) }
        #expect(TrustedCA.isSystemBundle(link.path))
        #expect(!TrustedCA.isSystemBundle("/etc/hostname"))
        #expect(!TrustedCA.isSystemBundle("/no/such/file"))
    }
}
