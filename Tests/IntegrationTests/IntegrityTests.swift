import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Checksums and the server's own digests, over each transport: a body that does not hash as promised
/// fails with the expected and actual digests, and nothing of it stays.
@Suite(.admitted, .timeLimit(.minutes(10))) struct IntegrityTests {
    /// 50 MB; CI's sanitizer runs set `NQ_INTEGRITY_BYTES` lower (every byte is slower there).
    static let large = TestEnvironment.integer("NQ_INTEGRITY_BYTES", default: 50_000_000)

    /// `path` with one more response field (the server adds `header=Name:Value`).
    static func path(_ path: String, header name: String, _ value: String) -> String {
        let field = "\(name):\(value)".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        return path + (path.contains("?") ? "&" : "?") + "header=" + field
    }

    static func sha256(_ range: Range<Int>) -> Checksum { Checksum(hashing: pattern(range), .sha256) }

    static func base64(_ checksum: Checksum) -> String {
        Data(
            stride(from: 0, to: checksum.hex.count, by: 2).map { offset -> UInt8 in
                let start = checksum.hex.index(checksum.hex.startIndex, offsetBy: offset)
                return UInt8(checksum.hex[start..<checksum.hex.index(start, offsetBy: 2)], radix: 16)!
            }
        ).base64EncodedString()
    }

    /// A checksum that no body here has: the right one with its first digit changed.
    static func wrong(_ checksum: Checksum) -> Checksum {
        let first = checksum.hex.first == "0" ? "1" : "0"
        let hex = first + checksum.hex.dropFirst()
        return checksum.algorithm == .sha256 ? .sha256(hex) : .sha512(hex)
    }

    /// Runs one request on a one-attempt queue; returns it and the server's log.
    static func run(_ request: NetworkRequest, on server: LoopbackServer, _ transport: TransportKind) async throws
        -> [String]
    {
        let queue = NetworkQueue.oneAttempt(transport: transport.make())
        try queue.add(request)
        await queue.run()
        return server.statistics.log
    }

    @Test(arguments: TransportKind.allCases) func aLargeFileWithItsChecksumIsKept(_ transport: TransportKind)
        async throws
    {
        let server = try LoopbackServer()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("big.bin")
        let checksum = Self.sha256(0..<Self.large)
        let request = NetworkRequest(
            URLRequest(url: server.url("/bytes/\(Self.large)")), destination: .file(file),
            integrity: .init(checksum: checksum))
        _ = try await Self.run(request, on: server, transport)
        #expect(request.state == .finished)
        #expect(try Data(contentsOf: file) == pattern(0..<Self.large))
    }

    @Test(arguments: TransportKind.allCases) func aLargeFileWithAWrongChecksumFailsAndLeavesNothing(
        _ transport: TransportKind
    ) async throws {
        let server = try LoopbackServer()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("big.bin")
        let right = Self.sha256(0..<Self.large)
        let request = NetworkRequest(
            URLRequest(url: server.url("/bytes/\(Self.large)")), destination: .file(file),
            integrity: .init(checksum: Self.wrong(right)))
        let log = try await Self.run(request, on: server, transport)
        #expect(request.failure == .integrityCheckFailed(expected: Self.wrong(right), actual: right))
        #expect(log == ["GET /bytes/\(Self.large)"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == [])
    }

    @Test(arguments: TransportKind.allCases, Checksum.Algorithm.allCases)
    func aMemoryBodyIsCheckedByEitherAlgorithm(_ transport: TransportKind, _ algorithm: Checksum.Algorithm) async throws
    {
        let server = try LoopbackServer()
        let right = Checksum(hashing: pattern(0..<100_000), algorithm)
        let good = NetworkRequest(URLRequest(url: server.url("/bytes/100000")), integrity: .init(checksum: right))
        _ = try await Self.run(good, on: server, transport)
        #expect((try? good.result?.get())?.body == pattern(0..<100_000))
        let bad = NetworkRequest(
            URLRequest(url: server.url("/bytes/100000")), integrity: .init(checksum: Self.wrong(right)))
        _ = try await Self.run(bad, on: server, transport)
        #expect(bad.failure == .integrityCheckFailed(expected: Self.wrong(right), actual: right))
    }

    @Test func aMalformedChecksumMakesTheRequestInvalid() async throws {
        let server = try LoopbackServer()
        let request = NetworkRequest(
            URLRequest(url: server.url("/bytes/1")), integrity: .init(checksum: .sha256("nothex")))
        let log = try await Self.run(request, on: server, .urlSession)
        #expect(request.failure == .invalidRequest(.invalidChecksum(.sha256("nothex"))))
        #expect(log.isEmpty)
    }

    @Test(arguments: TransportKind.allCases) func aResumedDownloadHashesItsPartFirst(_ transport: TransportKind)
        async throws
    {
        let size = 300_000
        let (directory, file) = try ResumeIntegrationTests.partial(size / 2, validator: "etag\n\"bytes-\(size)\"\n")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try LoopbackServer()
        let request = NetworkRequest(
            URLRequest(url: server.url("/bytes/\(size)")), destination: .file(file),
            integrity: .init(checksum: Self.sha256(0..<size)))
        _ = try await Self.run(request, on: server, transport)
        #expect(request.state == .finished)
        #expect(request.response?.statusCode == 206)
        #expect(server.statistics.headers.first?["range"] == "bytes=150000-")
        #expect(try Data(contentsOf: file) == pattern(0..<size))
    }

    @Test(arguments: TransportKind.allCases) func aCorruptPartIsDroppedAndTheFileFetchedOnceMoreFromByteZero(
        _ transport: TransportKind
    ) async throws {
        let size = 300_000
        let (directory, file) = try ResumeIntegrationTests.partial(size / 2, validator: "etag\n\"bytes-\(size)\"\n")
        defer { try? FileManager.default.removeItem(at: directory) }
        // One byte of the part is wrong: the continued file cannot verify.
        var part = try Data(contentsOf: file.appendingPathExtension("part"))
        part[1000] ^= 0xff
        try part.write(to: file.appendingPathExtension("part"))
        let server = try LoopbackServer()
        let request = NetworkRequest(
            URLRequest(url: server.url("/bytes/\(size)")), destination: .file(file),
            integrity: .init(checksum: Self.sha256(0..<size)))
        let log = try await Self.run(request, on: server, transport)
        #expect(request.state == .finished, "\(String(describing: request.failure))")
        #expect(log == ["GET /bytes/\(size)", "GET /bytes/\(size)"])
        #expect(server.statistics.headers.map { $0["range"] } == ["bytes=150000-", nil])
        #expect(request.attemptCount == 1)
        #expect(try Data(contentsOf: file) == pattern(0..<size))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["data.bin"])
    }

    @Test(arguments: TransportKind.allCases) func aWrongChecksumAfterAResumeFailsAfterOneFreshTry(
        _ transport: TransportKind
    ) async throws {
        let size = 300_000
        let (directory, file) = try ResumeIntegrationTests.partial(size / 2, validator: "etag\n\"bytes-\(size)\"\n")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try LoopbackServer()
        let right = Self.sha256(0..<size)
        let request = NetworkRequest(
            URLRequest(url: server.url("/bytes/\(size)")), destination: .file(file),
            integrity: .init(checksum: Self.wrong(right)))
        let log = try await Self.run(request, on: server, transport)
        #expect(request.failure == .integrityCheckFailed(expected: Self.wrong(right), actual: right))
        #expect(log.count == 2)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == [])
    }

    /// A digest field, right or wrong, and the outcome it must have.
    struct DigestCase: Sendable, CustomTestStringConvertible {
        let name: String
        let field: String
        let value: @Sendable (Checksum, Checksum) -> String
        let isRight: Bool
        var testDescription: String { name }
    }

    static let digestCases: [DigestCase] = [
        .init(
            name: "Content-Digest right", field: "Content-Digest", value: { s256, _ in "sha-256=:\(base64(s256)):" },
            isRight: true),
        .init(
            name: "Content-Digest wrong", field: "Content-Digest",
            value: { s256, _ in "sha-256=:\(base64(wrong(s256))):" }, isRight: false),
        .init(
            name: "Content-Digest sha-512 wrong", field: "Content-Digest",
            value: { _, s512 in "sha-512=:\(base64(wrong(s512))):" }, isRight: false),
        .init(
            name: "Repr-Digest right", field: "Repr-Digest",
            value: { _, s512 in "sha-512=:\(base64(s512)):, md5=:AAAA:" }, isRight: true),
        .init(
            name: "Repr-Digest wrong", field: "Repr-Digest", value: { s256, _ in "sha-256=:\(base64(wrong(s256))):" },
            isRight: false),
        .init(
            name: "Digest SHA-256 right", field: "Digest", value: { s256, _ in "SHA-256=\(base64(s256))" },
            isRight: true),
        .init(
            name: "Digest SHA-256 wrong", field: "Digest", value: { s256, _ in "SHA-256=\(base64(wrong(s256)))" },
            isRight: false),
        .init(
            name: "unknown algorithm only", field: "Content-Digest",
            value: { _, _ in "md5=:AAAAAAAAAAAAAAAAAAAAAA==:" }, isRight: true),
        .init(
            name: "malformed value", field: "Content-Digest", value: { _, _ in "sha-256=:not base64:" }, isRight: true),
    ]

    @Test(arguments: TransportKind.allCases, IntegrityTests.digestCases)
    func theServersDigestIsVerified(_ transport: TransportKind, _ digest: DigestCase) async throws {
        let server = try LoopbackServer()
        let body = pattern(0..<70_000)
        let (s256, s512) = (Checksum(hashing: body, .sha256), Checksum(hashing: body, .sha512))
        let path = Self.path("/bytes/70000", header: digest.field, digest.value(s256, s512))
        let request = NetworkRequest(URLRequest(url: server.url(path)))
        _ = try await Self.run(request, on: server, transport)
        if digest.isRight {
            #expect((try? request.result?.get())?.body == body)
        } else {
            guard case .integrityCheckFailed(let expected, let actual)? = request.failure else {
                Issue.record("expected integrityCheckFailed, got \(String(describing: request.failure))")
                return
            }
            #expect(actual == (expected.algorithm == .sha256 ? s256 : s512))
            #expect(!expected.matches(actual))
        }
        // Turned off, a wrong digest is not looked at.
        let unchecked = NetworkRequest(
            URLRequest(url: server.url(path)), integrity: .init(verifiesServerDigests: false))
        _ = try await Self.run(unchecked, on: server, transport)
        #expect(unchecked.state == .finished)
    }

    @Test(arguments: TransportKind.allCases) func aResumedResponsesContentDigestCoversItsRangeAndReprDigestTheFile(
        _ transport: TransportKind
    ) async throws {
        let size = 300_000
        for (field, value, isRight) in [
            ("Content-Digest", "sha-256=:\(Self.base64(Self.sha256(150_000..<size))):", true),
            ("Repr-Digest", "sha-256=:\(Self.base64(Self.sha256(0..<size))):", true),
            ("Content-Digest", "sha-256=:\(Self.base64(Self.sha256(0..<size))):", false),
        ] {
            let (directory, file) = try ResumeIntegrationTests.partial(size / 2, validator: "etag\n\"bytes-\(size)\"\n")
            defer { try? FileManager.default.removeItem(at: directory) }
            let server = try LoopbackServer()
            let request = NetworkRequest(
                URLRequest(url: server.url(Self.path("/bytes/\(size)", header: field, value))), destination: .file(file)
            )
            _ = try await Self.run(request, on: server, transport)
            // A wrong digest of a continued part: tried once more from byte 0, where the 200's content is the whole file.
            #expect(request.state == .finished, "\(field) \(String(describing: request.failure))")
            #expect(server.statistics.requests == (isRight ? 1 : 2), "\(field)")
            #expect(try Data(contentsOf: file) == pattern(0..<size))
        }
    }
}
