#if os(Linux)
    import Foundation
    import NetworkQueue
    import TestSupport
    import Testing

    /// `--cacert`, `--cert`/`--key`/`--pass` and `-k` against nginx with a test certificate authority (issue 75): what a
    /// user of an internal server needs, with curl's names; and the files they name treated as the program's own.
    @Suite(
        .admitted, .timeLimit(.minutes(10)),
        .enabled(
            if: StaticWebServer.path(of: .nginx) != nil || StaticWebServer.runsAll,
            "needs nginx (apt-get install nginx)"))
    struct DemoTrustTests {
        /// A folder with the test CA, the server's certificate, a client certificate the CA signed (`alice`, its
        /// key apart), one it did not (`mallory`), and an encrypted key (`bob`, pass phrase "s3cret"), and a folder
        /// `www` served with one file.
        struct Setup {
            let directory: URL
            let root: URL
            let body = Data((0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            var ca: String { directory.appendingPathComponent("ca.pem").path }
            func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

            init() throws {
                directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                    "nq-trust-\(UUID().uuidString)")
                root = directory.appendingPathComponent("www")
                try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
                _ = chmod(directory.path, 0o755)
                try TestCertificates.make(in: directory, names: "IP:127.0.0.1", days: 2)
                try TestCertificates.makeClient(named: "alice", in: directory)
                try TestCertificates.makeClient(named: "mallory", in: directory, selfSigned: true)
                try TestCertificates.makeClient(named: "bob", in: directory, password: "s3cret")
                try body.write(to: root.appendingPathComponent("file.bin"))
                for name in ["server.key", "ca.pem", "server.pem"] {
                    _ = chmod(directory.appendingPathComponent(name).path, 0o644)
                }
            }

            func tearDown() { try? FileManager.default.removeItem(at: directory) }

            /// A new setup, its keys made on a thread of its own: `openssl` is waited for, and must not hold one of the
            /// few threads every test's tasks share.
            static func made() async throws -> Setup {
                try await withCheckedThrowingContinuation { continuation in
                    Thread { continuation.resume(with: Result { try Setup() }) }.start()
                }
            }

            /// Runs the Demo saving to a fresh `out` folder, with no CA from the environment unless given.
            func run(
                _ arguments: [String], environment: [String] = []
            ) async throws -> (status: Int32, output: String, saved: Data?) {
                let output = directory.appendingPathComponent("out-\(UUID().uuidString)")
                let run = try await runDemo(
                    ["--output", output.path] + arguments, in: directory,
                    environment: ["CURL_CA_BUNDLE=", "SSL_CERT_FILE="] + environment, withErrors: true)
                return (
                    run.status, run.output,
                    FileManager.default.contents(atPath: output.appendingPathComponent("file.bin").path)
                )
            }
        }

        @Test func theCAOfAnInternalServerIsTrustedWithCacertOrTheEnvironmentAndNamedWhenMissing() async throws {
            let setup = try await Setup.made()
            defer { setup.tearDown() }
            let tls = StaticWebServer.TLS(certificates: setup.directory)
            try await StaticWebServer.with(.nginx, root: setup.root, rate: 0, tls: tls) { nginx in
                let url = nginx.url("/file.bin").absoluteString
                // Without the CA: the file fails, and the error says what is wrong with the certificate.
                let refused = try await setup.run([url])
                #expect(refused.status == 1, "\(refused.output)")
                #expect(refused.saved == nil)
                #expect(refused.output.contains("the server's certificate is not trusted: "), "\(refused.output)")
                #expect(refused.output.contains("unable to get local issuer certificate"), "\(refused.output)")
                // --cacert, then each variable curl reads.
                for (arguments, environment) in [
                    (["--cacert", setup.ca], [String]()), ([], ["CURL_CA_BUNDLE=\(setup.ca)"]),
                    ([], ["SSL_CERT_FILE=\(setup.ca)"]),
                ] {
                    let run = try await setup.run(arguments + [url], environment: environment)
                    #expect(run.status == 0, "\(arguments) \(environment): \(run.output)")
                    #expect(run.saved == setup.body)
                    #expect(run.output.contains("trusting \(setup.ca)"), "\(run.output)")
                    #expect(!run.output.contains("--insecure"))
                }
            }
        }

        @Test func insecureFetchesFromAnUnknownAuthorityAndWarnsOnEveryRun() async throws {
            let setup = try await Setup.made()
            defer { setup.tearDown() }
            try await StaticWebServer.with(
                .nginx, root: setup.root, rate: 0, tls: StaticWebServer.TLS(certificates: setup.directory)
            ) { nginx in
                for flag in ["-k", "--insecure"] {
                    let run = try await setup.run([flag, nginx.url("/file.bin").absoluteString])
                    #expect(run.status == 0, "\(run.output)")
                    #expect(run.saved == setup.body)
                    #expect(
                        run.output.contains(
                            "Demo: warning: --insecure: servers' certificates and names are not verified"),
                        "\(run.output)")
                    #expect(run.output.contains("certificates NOT verified"))
                }
            }
        }

        @Test func aServerThatRequiresAClientCertificateIsPassedWithCertAndKey() async throws {
            let setup = try await Setup.made()
            defer { setup.tearDown() }
            let tls = StaticWebServer.TLS(certificates: setup.directory, requiresClientCertificate: true)
            try await StaticWebServer.with(.nginx, root: setup.root, rate: 0, tls: tls) { nginx in
                let url = nginx.url("/file.bin").absoluteString
                let trust = ["--cacert", setup.ca]
                // None, or one the server's CA did not sign: nginx answers 400, nothing saved.
                for arguments in [[], ["--cert", setup.path("mallory.pem"), "--key", setup.path("mallory.key")]] {
                    let run = try await setup.run(trust + arguments + [url])
                    #expect(run.status == 1, "\(arguments): \(run.output)")
                    #expect(run.saved == nil)
                    #expect(run.output.contains("400"), "\(run.output)")
                }
                // Its own, the key apart; the certificate and key in one file; an encrypted key and its phrase.
                let both = setup.path("alice-both.pem")
                try
                    (Data(contentsOf: URL(fileURLWithPath: setup.path("alice.pem")))
                    + Data(contentsOf: URL(fileURLWithPath: setup.path("alice.key")))).write(
                        to: URL(fileURLWithPath: both))
                for arguments in [
                    ["--cert", setup.path("alice.pem"), "--key", setup.path("alice.key")], ["--cert", both],
                    ["--cert", setup.path("bob.pem"), "--key", setup.path("bob.key"), "--pass", "s3cret"],
                ] {
                    let run = try await setup.run(trust + arguments + [url])
                    #expect(run.status == 0, "\(arguments): \(run.output)")
                    #expect(run.saved == setup.body)
                    #expect(!run.output.contains("s3cret"))
                }
                // A wrong phrase: the key cannot be used, and the file fails saying so.
                let wrong = try await setup.run(
                    trust + ["--cert", setup.path("bob.pem"), "--key", setup.path("bob.key"), "--pass", "nope", url])
                #expect(wrong.status == 1, "\(wrong.output)")
                #expect(wrong.saved == nil)
            }
        }

        @Test func trustFilesThatCannotBeUsedAreBadUsageAndNothingIsSent() async throws {
            let setup = try await Setup.made()
            defer { setup.tearDown() }
            let notPEM = setup.path("notes.txt")
            try Data("not a certificate\n".utf8).write(to: URL(fileURLWithPath: notPEM))
            let url = "https://127.0.0.1:9/file.bin"
            let cases: [([String], String)] = [
                (["--cacert", setup.path("missing.pem")], "cannot use \(setup.path("missing.pem")) (--cacert)"),
                (["--cacert", setup.directory.path], "it is a folder, not a file"),
                (["--cacert", notPEM], "no PEM certificate"),
                (["--cert", setup.path("alice.pem")], "no PEM private key in it, and no key file given"),
                (["--cert", setup.path("alice.pem"), "--key", setup.ca], "no PEM private key"),
                (["--key", setup.path("alice.key")], "--key goes with --cert FILE"),
                (["--pass", "x"], "--pass goes with --cert FILE"),
                (["--transport", "urlsession", "--cacert", setup.ca], "--cacert needs the curl transport"),
                (["--transport", "urlsession", "-k"], "--insecure needs the curl transport"),
                (["--cacert", setup.ca, "--report", setup.ca], "--report"),
                (["--cacert", ""], "option '--cacert' needs a value"),
            ]
            for (arguments, words) in cases {
                let run = try await setup.run(arguments + [url])
                #expect(run.status == 2, "\(arguments): \(run.output)")
                #expect(run.output.contains(words), "\(arguments): \(run.output)")
            }
            // The environment's file is named as such.
            let run = try await setup.run([url], environment: ["SSL_CERT_FILE=\(notPEM)"])
            #expect(run.status == 2)
            #expect(run.output.contains("cannot use \(notPEM) (SSL_CERT_FILE): no PEM certificate"), "\(run.output)")
            // The CA file is untouched by every refusal.
            #expect(try String(contentsOfFile: setup.ca, encoding: .utf8).contains("BEGIN CERTIFICATE"))
        }
    }
#endif
