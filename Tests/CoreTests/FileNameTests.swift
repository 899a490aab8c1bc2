import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The one rule for a name in an output folder (``FileName``), and a part continued only by its own download
/// (``FileOrigin``).
@Suite(.admitted, .timeLimit(.minutes(10))) struct FileNameTests {
    @Test func hiddenCharactersAndTheProjectsOwnSuffixesNeverReachAName() {
        let cases: [(String, String?)] = [
            ("plain.bin", "plain.bin"), ("invoice\u{202E}fdp.exe", "invoicefdp.exe"), ("a\u{2028}b\u{2029}c", "abc"),
            ("zero\u{200B}width\u{FEFF}.txt", "zerowidth.txt"), ("b.bin.part", "b.bin.part_"),
            ("b.bin.PART", "b.bin.PART_"), ("b.bin.part.validator", "b.bin.part.validator_"),
            ("x.part.segments", "x.part.segments_"), ("x.part.segments.new", "x.part.segments.new_"),
            (".part", "part"), ("part", "part"), ("a.parts", "a.parts"), ("..", nil), (" . ", nil),
            ("a/b", "a_b"), ("trailing. ", "trailing"), ("\u{202E}", nil),
        ]
        for (raw, expected) in cases {
            #expect(FileName.safe(raw) == expected, "\(raw.debugDescription)")
            // The rule is idempotent: what it gives is safe as it is.
            if let safe = FileName.safe(raw) {
                #expect(FileName.safe(safe) == safe && FileName.problem(with: safe) == nil)
            }
        }
        let long = FileName.safe(String(repeating: "n", count: 300) + ".part")
        #expect(long?.utf8.count == FileName.longestName + 1 && long?.hasSuffix(".part_") == true)
    }

    @Test func aNameAUserGivesIsRefusedWithWhatToMend() {
        #expect(FileName.problem(with: String(repeating: "n", count: 200)) == nil)
        #expect(FileName.problem(with: String(repeating: "n", count: 201))?.contains("longer than 200 bytes") == true)
        #expect(FileName.problem(with: "a.part")?.contains("ends in .part") == true)
        #expect(FileName.problem(with: ".hidden")?.contains("not a safe file name") == true)
        #expect(FileName.problem(with: "ok name.txt") == nil)
    }

    @Test func aTakenNameIsNumberedBeforeItsExtension() {
        #expect(FileName.numbered("f.bin", 2) == "f-2.bin")
        #expect(FileName.numbered("h.tar.gz", 3) == "h.tar-3.gz")
        #expect(FileName.numbered("g", 2) == "g-2")
        #expect(FileName.numbered("x.part_", 2) == "x-2.part_")
        for counter in 2..<50 { #expect(FileName.reservedSuffix(of: FileName.numbered("a.b", counter)) == nil) }
    }

    /// A part and its validator as a hostile server's files or another URL's download would leave them: the part
    /// records `origin` (nil: none).
    private func plantedPart(origin: String?) throws -> (URL, URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("part-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appendingPathComponent("b.bin")
        try Data(repeating: 0x58, count: 100_000).write(to: directory.appendingPathComponent("b.bin.part"))
        try Data("etag\n\"v1\"\n".utf8).write(to: directory.appendingPathComponent("b.bin.part.validator"))
        if let origin {
            let fd = open(directory.appendingPathComponent("b.bin.part").path, O_WRONLY)
            #expect(FileOrigin.record(origin, fd: fd))
            close(fd)
        }
        return (url, directory)
    }

    @Test func aPartIsContinuedOnlyByItsOwnDownload() throws {
        for (recorded, continued) in [("http://elsewhere.test/b.bin", false), ("http://h.test/b.bin", true)] {
            let (url, directory) = try plantedPart(origin: recorded)
            defer { try? FileManager.default.removeItem(at: directory) }
            let claim = try #require(DestinationClaim.claim(url, origin: "http://h.test/b.bin"))
            let sink = try #require(try FileSink(claim: claim, continuing: true))
            #expect(sink.continuedFrom == (continued ? 100_000 : 0), "\(recorded)")
            #expect(FileManager.default.fileExists(atPath: url.path + ".part.validator") == continued)
            sink.discard()
            claim.endRequest()
        }
    }

    @Test func aSavedFileRecordsItsOrigin() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("origin-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("f.bin")
        let claim = try #require(DestinationClaim.claim(url, origin: "http://h.test/f.bin"))
        let sink = try #require(try FileSink(claim: claim, continuing: true))
        let head = ResponseHead(
            url: url, statusCode: 200, httpVersion: "HTTP/1.1", fields: [.init(name: "Content-Length", value: "3")])
        #expect(sink.begin(HeadReading(head, continuedFrom: 0, acceptableStatusCodes: 200..<300)) == nil)
        #expect([UInt8](repeating: 1, count: 3).withUnsafeBytes { sink.write($0) } == nil)
        #expect(sink.finishWriting() == nil && sink.commit() == nil)
        claim.endRequest()
        #expect(FileOrigin.recorded(atPath: url.path) == .url("http://h.test/f.bin"))
        #expect(FileOrigin.recorded(atPath: directory.path + "/missing") == .none)
    }
}
