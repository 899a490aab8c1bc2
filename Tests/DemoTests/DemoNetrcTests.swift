import DemoKit
import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `--netrc` and `--netrc-file`: credentials go to the host their entry names, and nowhere else.
@Suite(.admitted, .timeLimit(.minutes(10))) struct DemoNetrcTests {
    @Test func theFileIsReadAsCurlReadsIt() throws {
        let netrc = try Netrc(
            parsing: """
                # a comment
                machine Example.com login alice password "s3 cr\\"et"
                machine example.com login second password ignored
                default login anyone password everywhere
                macdef init
                cd /pub
                get file

                machine other.org
                  login bob
                  password pw # trailing comment
                machine nopassword.org login carol
                """)
        #expect(netrc.credentials(for: "EXAMPLE.com") == .init(login: "alice", password: "s3 cr\"et"))
        #expect(netrc.credentials(for: "other.org") == .init(login: "bob", password: "pw"))
        #expect(netrc.credentials(for: "nopassword.org") == nil)
        // The default entry is never used: it would send its credentials to every server.
        #expect(netrc.credentials(for: "unknown.net") == nil)
        #expect(netrc.machineCount == 2)
        #expect(
            netrc.authorization(for: URL(string: "https://other.org:8443/x")!)
                == "Basic " + Data("bob:pw".utf8).base64EncodedString())
        for bad in ["machine", "login x", "machine h password", "machine h login u pass secret", "machine h \"open"] {
            #expect(throws: Netrc.Problem.self, "\(bad)") { try Netrc(parsing: bad) }
        }
        // A problem never shows a word of the file (it may be part of a password).
        do {
            _ = try Netrc(parsing: "machine h login u password my secretword")
            Issue.record("a word after the password was taken")
        } catch {
            #expect(!error.description.contains("secretword"))
        }
    }

    @Test func credentialsGoToTheirHostOnlyAndNeverAfterARedirectToAnotherOrigin() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let other = try LoopbackServer()
        defer { other.stop() }
        // 127.0.0.1 has credentials; "localhost" is the other server (another host name, another origin).
        let netrc = setup.directory.appendingPathComponent("netrc")
        try Data("machine 127.0.0.1 login alice password N3TRC-SECRET\n".utf8).write(to: netrc)
        let away = "http://localhost:\(other.port)/bytes/5"
        let into = "http://127.0.0.1:\(setup.server.port)/bytes/30"
        try Data(
            [
                "http://127.0.0.1:\(setup.server.port)/bytes/10",
                "http://127.0.0.1:\(setup.server.port)/redirect/1?to=/bytes/20",
                "http://127.0.0.1:\(setup.server.port)/redirect/1?to=\(away.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)",
                "http://localhost:\(other.port)/bytes/7",
                // Into the host the file names from another: its credentials are looked up for the host the request
                // goes to, as curl does (curl, wget2 and aria2c all send them there).
                "http://localhost:\(other.port)/redirect/1?to=\(into.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)",
            ].map { $0 + "\n" }.joined().utf8
        ).write(to: setup.list)
        let expected = "Basic " + Data("alice:N3TRC-SECRET".utf8).base64EncodedString()
        for transport in ["curl", "urlsession"] {
            setup.server.resetStatistics()
            other.resetStatistics()
            let run = try await runDemo(
                [
                    "--transport", transport, "--input", setup.list.path, "--netrc-file", netrc.path, "--no-accurate",
                    "--verbose",
                ],
                in: setup.directory)
            #expect(run.status == 0, "\(run.output)")
            // Every request to 127.0.0.1 (the redirects' targets on it too) carried them.
            let here = setup.server.statistics.headers
            #expect(here.count == 5 && here.allSatisfy { $0["authorization"] == expected }, "\(transport): \(here)")
            // None reached the other host: neither its own lines nor the redirect that left the origin.
            #expect(other.statistics.headers.count == 3)
            #expect(other.statistics.headers.allSatisfy { $0["authorization"] == nil }, "\(transport)")
            #expect(!run.output.contains("N3TRC") && !run.output.contains(expected.dropFirst(6)))
            #expect(run.output.contains("credentials for 1 server from netrc"))
        }
        // --netrc reads $HOME/.netrc.
        try FileManager.default.copyItem(at: netrc, to: setup.directory.appendingPathComponent(".netrc"))
        setup.server.resetStatistics()
        let home = try await runDemo(
            ["--netrc", "--no-accurate", "http://127.0.0.1:\(setup.server.port)/bytes/3"], in: setup.directory,
            environment: ["HOME=\(setup.directory.path)"])
        #expect(home.status == 0, "\(home.output)")
        #expect(setup.server.statistics.headers.first?["authorization"] == expected)
    }

    @Test func aMissingOrMalformedFileIsBadUsage() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let broken = setup.directory.appendingPathComponent("broken")
        try Data("machine h login u password \"never ends\n".utf8).write(to: broken)
        for (path, message) in [
            (setup.directory.appendingPathComponent("missing").path, "cannot use"),
            (broken.path, "line 1: a quoted value never ends"),
        ] {
            let run = try await runDemo(
                ["--netrc-file", path, "http://127.0.0.1:\(setup.server.port)/bytes/1"], in: setup.directory,
                withErrors: true)
            #expect(run.status == 2 && run.output.contains(message), "\(run.output)")
            #expect(!run.output.contains("never ends\""))
        }
        #expect(setup.server.statistics.requests == 0)
    }
}
