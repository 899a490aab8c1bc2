import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

/// Metalink documents (issue 85): Metalink 4 and 3 read into files with their hashes, pieces and locations, and the
/// table of malformed and hostile documents, each refused with its reason before anything could be fetched.
@Suite(.admitted, .timeLimit(.minutes(10))) struct MetalinkTests {
    static let sha256 = String(repeating: "ab", count: 32)
    static let sha512 = String(repeating: "cd", count: 64)
    static let md5 = String(repeating: "ef", count: 16)

    /// A Metalink 4 document whose `files` is the body of its root element.
    static func meta4(_ files: String) -> Data {
        Data(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <metalink xmlns="urn:ietf:params:xml:ns:metalink">
              <published>2026-11-29T00:00:00Z</published>
            \(files)
            </metalink>
            """.utf8)
    }

    /// One Metalink 4 file with `body`.
    static func file(_ name: String = "ubuntu.iso", _ body: String) -> Data {
        meta4("<file name=\"\(name)\">\(body)</file>")
    }

    static let oneURL = "<url>http://a.example/f</url>"

    @Test func aMetalink4DocumentGivesItsFilesHashesPiecesAndLocationsBestFirst() throws {
        let document = try Metalink(
            parsing: Self.meta4(
                """
                <file name="ubuntu.iso">
                  <size>10</size>
                  <identity>Ubuntu</identity>
                  <hash type="md5">\(Self.md5.uppercased())</hash>
                  <hash type="sha-256">\(Self.sha256)</hash>
                  <hash type="tiger">00</hash>
                  <pieces length="4" type="sha-256">
                    <hash>\(Self.sha256)</hash><hash>\(Self.sha256)</hash><hash>\(Self.sha256)</hash>
                  </pieces>
                  <url location="de" priority="2">http://de.example/ubuntu.iso</url>
                  <url priority="1">https://main.example/ubuntu.iso</url>
                  <url location="us">http://us.example/ubuntu.iso</url>
                  <url location="fr" priority="2">http://fr.example/ubuntu.iso</url>
                  <url priority="1">ftp://ftp.example/ubuntu.iso</url>
                  <url priority="1">https://main.example/ubuntu.iso</url>
                  <metaurl mediatype="torrent">http://t.example/ubuntu.torrent</metaurl>
                  <x:mirror xmlns:x="urn:example:other"><url>http://foreign.example/f</url></x:mirror>
                </file>
                <file name="SHA256SUMS"><url>http://main.example/SHA256SUMS</url></file>
                """))
        #expect(document.version == .metalink4)
        #expect(document.files.map(\.name) == ["ubuntu.iso", "SHA256SUMS"])
        let file = document.files[0]
        #expect(file.size == 10)
        #expect(file.hashes == [.init(type: .sha256, hex: Self.sha256), .init(type: .md5, hex: Self.md5)])
        #expect(file.checksum == .sha256(Self.sha256))
        #expect(!file.hasOnlyWeakHashes)
        #expect(file.pieces == .init(type: .sha256, length: 4, hashes: Array(repeating: Self.sha256, count: 3)))
        // Priority first, the document's order among equals; the ftp URL, the repeated one and the foreign
        // namespace's are left out.
        #expect(
            file.locations.map(\.url.absoluteString) == [
                "https://main.example/ubuntu.iso", "http://de.example/ubuntu.iso", "http://fr.example/ubuntu.iso",
                "http://us.example/ubuntu.iso",
            ])
        #expect(file.locations.map(\.priority) == [1, 2, 2, 1_000_000])
        #expect(file.locations.map(\.country) == [nil, "de", "fr", "us"])
        #expect(document.files[1].size == nil && document.files[1].hashes.isEmpty && document.files[1].pieces == nil)
    }

    @Test func aMetalink3DocumentReadsItsVerificationAndResources() throws {
        let document = try Metalink(
            parsing: Data(
                """
                <?xml version="1.0" encoding="utf-8"?>
                <!-- a comment -->
                <metalink version="3.0" xmlns="http://www.metalinker.org/">
                  <files>
                    <file name="debian.iso">
                      <size>8</size>
                      <verification>
                        <hash type="sha1">\(String(repeating: "12", count: 20))</hash>
                        <hash type="sha512">\(Self.sha512)</hash>
                        <pieces length="4" type="sha1">
                          <hash piece="0">\(String(repeating: "34", count: 20))</hash>
                          <hash piece="1">\(String(repeating: "56", count: 20))</hash>
                        </pieces>
                      </verification>
                      <resources>
                        <url type="http" location="se" preference="10">http://se.example/debian.iso</url>
                        <url type="http" preference="100">http://best.example/debian.iso</url>
                        <url type="bittorrent" preference="100">http://t.example/debian.iso.torrent</url>
                      </resources>
                    </file>
                  </files>
                </metalink>
                """.utf8))
        #expect(document.version == .metalink3)
        let file = try #require(document.files.first)
        #expect(file.checksum == .sha512(Self.sha512))
        #expect(file.hashes.map(\.type) == [.sha512, .sha1])
        #expect(file.pieces?.type == .sha1 && file.pieces?.hashes.count == 2)
        #expect(file.locations.map(\.url.host) == ["best.example", "se.example"])
        #expect(file.locations.map(\.priority) == [1, 91])
    }

    @Test func weakHashesAloneAreKeptButNeverTheChecksum() throws {
        let document = try Metalink(parsing: Self.file("a", "<hash type=\"md5\">\(Self.md5)</hash>\(Self.oneURL)"))
        let file = try #require(document.files.first)
        #expect(file.hasOnlyWeakHashes)
        #expect(file.checksum == nil)
        #expect(file.hashes == [.init(type: .md5, hex: Self.md5)])
    }

    /// At least 15 malformed or hostile documents: each refused with its kind and a reason that names what is wrong.
    @Test func malformedAndHostileDocumentsAreRefusedWithTheirReason() {
        let small = Metalink.Limits(
            maximumDocumentBytes: 4_096, maximumFiles: 2, maximumLocationsPerFile: 3, maximumPiecesPerFile: 2,
            maximumTextBytes: 100)
        let laughs = """
            <?xml version="1.0"?>
            <!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
            <metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="&lol2;">\(Self.oneURL)</file></metalink>
            """
        let external = """
            <?xml version="1.0"?>
            <!DOCTYPE m [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
            <metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="a"><url>http://a.example/&xxe;</url></file></metalink>
            """
        var utf16 = Data([0xFF, 0xFE])
        utf16.append(
            "<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"></metalink>".data(using: .utf16LittleEndian)!)
        let deep =
            String(repeating: "<x>", count: 40) + String(repeating: "</x>", count: 40)
        let cases: [(String, Data, Metalink.Limits, MetalinkError.Kind, String)] = [
            ("billion laughs", Data(laughs.utf8), .init(), .declaresEntities, "DOCTYPE"),
            ("external entity", Data(external.utf8), .init(), .declaresEntities, "DOCTYPE"),
            ("UTF-16", utf16, .init(), .notXML, "UTF-8"),
            (
                "another encoding", Data("<?xml version=\"1.0\" encoding=\"UTF-7\"?><metalink/>".utf8), .init(),
                .notXML,
                "utf-7"
            ),
            (
                "not well-formed", Data("<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"><file>".utf8), .init(),
                .notXML, "line"
            ),
            ("not XML at all", Data("http://a.example/f\n".utf8), .init(), .notXML, "well-formed"),
            ("an HTML page", Data("<html><body>404</body></html>".utf8), .init(), .notMetalink, "<html>"),
            ("another namespace", Data("<metalink xmlns=\"urn:other\"/>".utf8), .init(), .notMetalink, "urn:other"),
            ("no file", Self.meta4(""), .init(), .noFiles, "no file"),
            ("a parent folder", Self.file("../../etc/passwd", Self.oneURL), .init(), .unsafeName, "../../etc/passwd"),
            ("a path", Self.file("a/b", Self.oneURL), .init(), .unsafeName, "a/b"),
            ("a backslash path", Self.file("..\\evil.exe", Self.oneURL), .init(), .unsafeName, "evil"),
            ("a part name", Self.file("ubuntu.iso.part", Self.oneURL), .init(), .unsafeName, ".part"),
            ("a hidden file", Self.file(".bashrc", Self.oneURL), .init(), .unsafeName, ".bashrc"),
            (
                "a right-to-left override", Self.file("invoice\u{202E}fdp.exe", Self.oneURL), .init(), .unsafeName,
                "invoice"
            ),
            ("a file without a name", Self.meta4("<file>\(Self.oneURL)</file>"), .init(), .unsafeName, "no name"),
            (
                "two files of one name",
                Self.meta4("<file name=\"a\">\(Self.oneURL)</file><file name=\"a\">\(Self.oneURL)</file>"),
                .init(), .unsafeName, "two files"
            ),
            ("a negative size", Self.file("a", "<size>-1</size>\(Self.oneURL)"), .init(), .badSize, "-1"),
            ("a size in letters", Self.file("a", "<size>1e9</size>\(Self.oneURL)"), .init(), .badSize, "1e9"),
            (
                "an absurd size", Self.file("a", "<size>\(Int64(1) << 60)</size>\(Self.oneURL)"), .init(), .badSize,
                "more than"
            ),
            (
                "a short hash", Self.file("a", "<hash type=\"sha-256\">abc</hash>\(Self.oneURL)"), .init(), .badHash,
                "64 hexadecimal"
            ),
            (
                "unknown hashes only", Self.file("a", "<hash type=\"tiger\">00</hash>\(Self.oneURL)"), .init(),
                .badHash, "tiger"
            ),
            (
                "two different sha-256",
                Self.file(
                    "a",
                    "<hash type=\"sha-256\">\(Self.sha256)</hash><hash type=\"sha-256\">\(String(repeating: "00", count: 32))</hash>\(Self.oneURL)"
                ), .init(), .badHash, "two different"
            ),
            (
                "pieces that do not cover the size",
                Self.file(
                    "a",
                    "<size>9</size><pieces length=\"4\" type=\"sha-256\"><hash>\(Self.sha256)</hash></pieces>\(Self.oneURL)"
                ),
                .init(), .badPieces, "needs 3"
            ),
            (
                "pieces of no length",
                Self.file(
                    "a", "<pieces length=\"0\" type=\"sha-256\"><hash>\(Self.sha256)</hash></pieces>\(Self.oneURL)"),
                .init(), .badPieces, "length of 0"
            ),
            (
                "no http location", Self.file("a", "<url>ftp://a.example/f</url><url>file:///etc/passwd</url>"),
                .init(), .noLocation, "no http"
            ),
            (
                "too many files", Self.meta4((1...3).map { "<file name=\"f\($0)\">\(Self.oneURL)</file>" }.joined()),
                small,
                .tooMany, "more than 2 files"
            ),
            (
                "too many locations", Self.file("a", (1...4).map { "<url>http://m\($0).example/f</url>" }.joined()),
                small,
                .tooMany, "more than 3 locations"
            ),
            (
                "too many pieces",
                Self.file(
                    "a",
                    "<pieces length=\"1\" type=\"md5\">" + String(repeating: "<hash>\(Self.md5)</hash>", count: 3)
                        + "</pieces>\(Self.oneURL)"),
                small, .tooMany, "more than 2 pieces"
            ),
            (
                "too long a text", Self.file("a", "<url>http://a.example/\(String(repeating: "x", count: 200))</url>"),
                small, .tooMany, "longer than 100"
            ),
            ("too deep", Self.file("a", deep + Self.oneURL), .init(), .tooMany, "deeper than 32"),
            (
                "too large", Self.file("a", String(repeating: " ", count: 5_000) + Self.oneURL), small, .tooLarge,
                "more than 4096"
            ),
        ]
        #expect(cases.count >= 15)
        for (label, data, limits, kind, words) in cases {
            do {
                let document = try Metalink(parsing: data, limits: limits)
                Issue.record("\(label): read as \(document.files.count) files")
            } catch {
                #expect(error.kind == kind, "\(label): \(error.reason)")
                #expect(error.reason.contains(words), "\(label): \(error.reason)")
                #expect(error.description.hasPrefix("metalink refused: "))
            }
        }
    }

    /// Every document cut short is refused, never read as a shorter one (FoundationXML on Linux reports success for
    /// a document whose elements are left open), and a document with any one byte changed is read or refused, never a
    /// crash.
    @Test func aDocumentCutShortOrWithAByteChangedIsRefusedOrRead() throws {
        let whole = Self.meta4(
            """
            <file name="a.bin"><size>9</size><hash type="sha-256">\(Self.sha256)</hash>
              <pieces length="4" type="sha-256"><hash>\(Self.sha256)</hash><hash>\(Self.sha256)</hash><hash>\(Self.sha256)</hash></pieces>
              <url priority="1">http://a.example/a.bin</url></file>
            """)
        #expect(try Metalink(parsing: whole).files.count == 1)
        let end = try #require(whole.lastIndex(of: UInt8(ascii: ">")))
        var refused = 0
        for length in 0..<end {
            do {
                _ = try Metalink(parsing: whole.prefix(length))
                Issue.record("a document cut at byte \(length) was read")
            } catch {
                refused += 1
            }
        }
        #expect(refused == end)
        var read = 0
        for index in stride(from: 0, to: whole.count, by: 3) {
            var changed = whole
            changed[index] = changed[index] == UInt8(ascii: "<") ? UInt8(ascii: "&") : UInt8(ascii: "<")
            if (try? Metalink(parsing: changed)) != nil { read += 1 }
        }
        // Most changes land in a hash, a tag or the name: only a few leave a document that is still whole and good.
        #expect(read < whole.count / 3 / 4, "\(read) of \(whole.count / 3) changed documents were read")
    }

    @Test func eachFileBecomesARequestInTheFolderWithItsMirrorsAndChecksum() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("metalink-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let folder = try OutputFolder(path: root.path)
        let document = try Metalink(
            parsing: Self.meta4(
                """
                <file name="a.bin"><hash type="sha-256">\(Self.sha256)</hash>
                  <url priority="2">http://two.example/a.bin</url><url priority="1">http://one.example/a.bin</url>
                </file>
                <file name="b.bin"><url>http://one.example/b.bin</url></file>
                """))
        let requests = try document.requests(in: folder, fileOptions: .init(maximumConnections: 4))
        #expect(requests.map(\.url?.absoluteString) == ["http://one.example/a.bin", "http://one.example/b.bin"])
        #expect(
            requests.map(\.destination) == [
                .file(folder.url(for: try .init(name: "a.bin"))), .file(folder.url(for: try .init(name: "b.bin"))),
            ])
        #expect(requests[0].fileOptions.mirrors == [URL(string: "http://two.example/a.bin")!])
        #expect(requests[1].fileOptions.mirrors.isEmpty)
        #expect(
            requests.allSatisfy { $0.fileOptions.maximumConnections == 4 && $0.fileOptions.outputFolder === folder })
        #expect(requests[0].integrity.checksum == .sha256(Self.sha256))
        #expect(requests[1].integrity.checksum == nil)
    }

    /// The most files a document may name, each with three locations and a hash: read and made into as many requests,
    /// each to its own file; one file more is refused.
    @Test func aDocumentOfTheMostFilesIsReadWholeAndOneMoreIsRefused() throws {
        func document(_ count: Int) -> Data {
            var text = ""
            text.reserveCapacity(count * 300)
            for index in 0..<count {
                text += "<file name=\"f\(index).bin\"><size>4096</size><hash type=\"sha-256\">\(Self.sha256)</hash>"
                text +=
                    "<url priority=\"1\">http://a.example/f\(index)</url><url priority=\"2\">http://b.example/f\(index)</url>"
                text += "<url priority=\"3\">http://c.example/f\(index)</url></file>\n"
            }
            return Self.meta4(text)
        }
        let most = Metalink.Limits().maximumFiles
        let read = try Metalink(parsing: document(most))
        #expect(read.files.count == most)
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("metalink-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let requests = try read.requests(in: try OutputFolder(path: root.path))
        #expect(requests.count == most)
        #expect(Set(requests.map(\.destination)).count == most)
        #expect(requests.allSatisfy { $0.fileOptions.mirrors.count == 2 && $0.integrity.checksum != nil })
        #expect(requests.last?.url?.absoluteString == "http://a.example/f\(most - 1)")
        #expect(throws: MetalinkError.self) { try Metalink(parsing: document(most + 1)) }
    }
}
