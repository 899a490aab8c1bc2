import DemoKit
import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The Demo's `--metalink FILE` (issue 85): a document's files fetched into `--output` from their best location that
/// answers, each checked against its hash; a refused document fetches nothing.
@Suite(.admitted, .timeLimit(.minutes(10))) struct DemoMetalinkTests {
    static let size = 100_000

    /// The bytes `/bytes/N` serves.
    static func bytes(_ count: Int) -> Data {
        var data = Data((0..<256).map { UInt8($0) })
        while data.count < count { data.append(data) }
        return data.prefix(count)
    }

    /// The SHA-256 of the bytes `/bytes/<size>` serves.
    static let good = Checksum(hashing: bytes(size), .sha256).hex

    /// A Metalink 4 document of `files`: (name, hash, URLs with their priority).
    static func document(_ files: [(String, String, [(String, Int)])]) -> Data {
        let body = files.map { name, hash, urls in
            "<file name=\"\(name)\"><size>\(size)</size><hash type=\"sha-256\">\(hash)</hash>"
                + urls.map { "<url priority=\"\($0.1)\">\($0.0)</url>" }.joined() + "</file>"
        }
        return Data(
            ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">"
                + body.joined() + "</metalink>").utf8)
    }

    @Test func aDocumentsFilesComeFromTheLocationsThatAnswerAndAreChecked() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let url = setup.server.url("/bytes/\(Self.size)").absoluteString
        // The best location is dead (nothing listens on port 1): the file comes from the next.
        let metalink = setup.directory.appendingPathComponent("files.meta4")
        try Self.document([
            ("a.bin", Self.good, [("http://127.0.0.1:1/a.bin", 1), (url + "?key=a", 2)]),
            ("b.bin", Self.good, [(url + "?key=b", 1)]),
        ]).write(to: metalink)
        for transport in ["curl", "urlsession"] {
            try? FileManager.default.removeItem(at: setup.output)
            let run = try await runDemo(
                [
                    "--transport", transport, "--no-accurate", "--metalink", metalink.path, "--output",
                    setup.output.path,
                ],
                in: setup.directory, withErrors: true)
            #expect(run.status == 0, "\(transport): \(run.output)")
            let names = try FileManager.default.contentsOfDirectory(atPath: setup.output.path).sorted()
            #expect(names == ["a.bin", "b.bin"], "\(transport)")
            for name in names {
                #expect(try Data(contentsOf: setup.output.appendingPathComponent(name)) == Self.bytes(Self.size))
            }
            // A rerun asks each file once, conditionally, and keeps both.
            setup.server.resetStatistics()
            let again = try await runDemo(
                [
                    "--transport", transport, "--no-accurate", "--metalink", metalink.path, "--output",
                    setup.output.path,
                ],
                in: setup.directory, withErrors: true)
            #expect(again.status == 0, "\(transport): \(again.output)")
            #expect(again.output.components(separatedBy: "unchanged ").count - 1 == 2, "\(transport): \(again.output)")
            #expect(setup.server.statistics.requests == 2, "\(transport): \(setup.server.statistics.log)")
        }
    }

    /// A stale first mirror (other bytes under the same length and entity tag), a dead second, a good third: the file
    /// that fails its hash is fetched again from the next location alone, and past the dead one to the good one, within
    /// the same attempt (no retry spent); each server is asked once.
    @Test func aLyingFirstLocationAndADeadOneDoNotFailTheFile() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let url = setup.server.url("/bytes/\(Self.size)").absoluteString
        let metalink = setup.directory.appendingPathComponent("files.meta4")
        try Self.document([
            ("a.bin", Self.good, [(url + "?seed=7", 1), ("http://127.0.0.1:1/a.bin", 2), (url + "?key=good", 3)])
        ]).write(to: metalink)
        for transport in ["curl", "urlsession"] {
            try? FileManager.default.removeItem(at: setup.output)
            setup.server.resetStatistics()
            let run = try await runDemo(
                [
                    "--transport", transport, "--no-accurate", "--retries", "0", "--metalink", metalink.path,
                    "--output", setup.output.path, "--verbose",
                ], in: setup.directory, withErrors: true)
            #expect(run.status == 0, "\(transport): \(run.output)")
            #expect(try Data(contentsOf: setup.output.appendingPathComponent("a.bin")) == Self.bytes(Self.size))
            let log = setup.server.statistics.log
            #expect(log.filter { $0.contains("seed=7") }.count == 1, "\(transport): \(log)")
            #expect(log.filter { $0.contains("key=good") }.count == 1, "\(transport): \(log)")
            #expect(run.output.contains("checksumVerified"), "\(transport): \(run.output)")
            // The log names each location fetched from alone: the dead one, then the good one.
            let alone = run.output.split(separator: "\n").filter { $0.contains("(that location alone)") }
            #expect(alone.count == 2, "\(transport): \(run.output)")
            #expect(alone.first?.contains("127.0.0.1:1/a.bin") == true, "\(transport): \(alone)")
        }
    }

    @Test func aDocumentGivenByURLIsFetchedFirst() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let url = setup.server.url("/bytes/\(Self.size)").absoluteString
        let served = Self.served(Self.document([("a.bin", Self.good, [(url, 1)])]), by: setup.server)
        let run = try await runDemo(
            ["--no-accurate", "--metalink", served, "--output", setup.output.path], in: setup.directory,
            withErrors: true)
        #expect(run.status == 0, "\(run.output)")
        #expect(try Data(contentsOf: setup.output.appendingPathComponent("a.bin")) == Self.bytes(Self.size))
        // A URL that serves no document: refused, nothing fetched but it.
        setup.server.resetStatistics()
        let refused = try await runDemo(
            [
                "--no-accurate", "--metalink", setup.server.url("/text?body=hello").absoluteString, "--output",
                setup.output.path,
            ], in: setup.directory, withErrors: true)
        #expect(refused.status == 2, "\(refused.output)")
        #expect(refused.output.contains("metalink refused"), "\(refused.output)")
        #expect(setup.server.statistics.requests == 1)
    }

    /// The URL of a document served by `server` under a path ending in `.meta4`.
    static func served(_ document: Data, by server: LoopbackServer) -> String {
        var query = CharacterSet.alphanumerics
        query.insert(charactersIn: "-._~")
        return server.url("/text/files.meta4").absoluteString + "?body="
            + String(decoding: document, as: UTF8.self).addingPercentEncoding(withAllowedCharacters: query)!
    }

    /// A list's line whose URL ends in `.meta4`: its document's files are the line's, named in the line's folder
    /// among the list's names; the session keeps the line until every one of its files finished.
    @Test func aListLineThatNamesADocumentGivesItsFilesAndStaysInTheSessionUntilAllFinished() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let url = setup.server.url("/bytes/\(Self.size)").absoluteString
        let whole = Self.served(
            Self.document([("a.bin", Self.good, [(url + "?key=a", 1)]), ("b.bin", Self.good, [(url + "?key=b", 1)])]),
            by: setup.server)
        // b.bin's bytes are not its hash's: the line stays in the session.
        let lying = Self.served(
            Self.document([("c.bin", Self.good, [(url + "?key=c", 1)]), ("d.bin", Self.good, [(url + "?seed=7", 1)])]),
            by: setup.server)
        let session = setup.directory.appendingPathComponent("session.txt")
        // The plain line's file takes the name a.bin first: the document's a.bin becomes a-2.bin.
        try Data("\(url)?key=plain\tout=a.bin\n\(whole)\n\(lying)\tdir=sub\n".utf8).write(to: setup.list)
        let run = try await runDemo(
            [
                "--no-accurate", "--input", setup.list.path, "--output", setup.output.path, "--save-session",
                session.path,
            ], in: setup.directory, withErrors: true)
        #expect(run.status == 1, "\(run.output)")
        let names = try FileManager.default.subpathsOfDirectory(atPath: setup.output.path).sorted()
        #expect(names == ["a-2.bin", "a.bin", "b.bin", "sub", "sub/c.bin"], "\(run.output)")
        for name in ["a.bin", "a-2.bin", "b.bin", "sub/c.bin"] {
            #expect(try Data(contentsOf: setup.output.appendingPathComponent(name)) == Self.bytes(Self.size))
        }
        let kept = try String(contentsOf: session, encoding: .utf8).split(separator: "\n")
            .filter { !$0.hasPrefix("#") && !$0.allSatisfy { $0 == " " } }
        #expect(kept == ["\(lying)\tdir=sub"], "\(kept)")
        // A document's line with out= is a bad line, found before anything is sent.
        try Data("\(whole)\tout=x.bin\n".utf8).write(to: setup.list)
        setup.server.resetStatistics()
        let bad = try await runDemo(
            ["--no-accurate", "--input", setup.list.path, "--output", setup.output.path], in: setup.directory,
            withErrors: true)
        #expect(bad.status == 2, "\(bad.output)")
        #expect(bad.output.contains("takes no out="), "\(bad.output)")
        #expect(setup.server.statistics.requests == 0)
    }

    @Test func aFileWhoseBytesDoNotMatchItsHashIsNotKept() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let url = setup.server.url("/bytes/\(Self.size)").absoluteString
        let metalink = setup.directory.appendingPathComponent("files.meta4")
        // b.bin's one location serves other bytes (another seed) than its hash says.
        try Self.document([("a.bin", Self.good, [(url, 1)]), ("b.bin", Self.good, [(url + "?seed=7", 1)])]).write(
            to: metalink)
        let run = try await runDemo(
            ["--no-accurate", "--metalink", metalink.path, "--output", setup.output.path], in: setup.directory,
            withErrors: true)
        #expect(run.status == 1, "\(run.output)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: setup.output.path) == ["a.bin"])
        #expect(run.output.contains("b.bin"), "\(run.output)")
    }

    @Test func aRefusedDocumentOrAFileThatIsNoDocumentFetchesNothing() async throws {
        let setup = try DemoSetup(paths: [])
        defer { setup.tearDown() }
        let url = setup.server.url("/bytes/\(Self.size)").absoluteString
        let hostile = setup.directory.appendingPathComponent("hostile.meta4")
        // A good file first, then one whose name climbs out of the folder: nothing of the document is fetched.
        try Self.document([("a.bin", Self.good, [(url, 1)]), ("../escape.bin", Self.good, [(url, 1)])]).write(
            to: hostile)
        let fifo = setup.directory.appendingPathComponent("fifo.meta4")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let cases: [(String, [String], String)] = [
            ("a hostile name", ["--metalink", hostile.path, "--output", setup.output.path], "metalink refused"),
            ("a FIFO", ["--metalink", fifo.path, "--output", setup.output.path], "not a regular file"),
            ("no output folder", ["--metalink", hostile.path], "--output"),
        ]
        for (label, arguments, words) in cases {
            let run = try await runDemo(arguments, in: setup.directory, withErrors: true)
            #expect(run.status == 2, "\(label): \(run.output)")
            #expect(run.output.contains(words), "\(label): \(run.output)")
        }
        #expect(setup.server.statistics.requests == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: setup.output.path).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: setup.directory.appendingPathComponent("escape.bin").path))
    }
}
