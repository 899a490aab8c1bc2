import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

/// When a file download's validator file (`<file>.part.validator`) is written: only once its part is worth
/// continuing. A body that arrives whole is written once and put in place, with no validator file made or removed;
/// on Linux its part has no name until then (nothing but the whole file ever appears in the folder).
@Suite(.admitted, .timeLimit(.minutes(10))) struct FileSinkTests {
    /// What the folder shows of a new part before it is worth continuing: nothing on Linux (an unnamed file), the
    /// part file elsewhere.
    #if os(Linux)
        private static let newPart: [String] = []
    #else
        private static let newPart = ["f.bin.part"]
    #endif

    /// A sink for a new file in a folder of its own, after a 200 with a strong ETag (or none).
    private func opened(etag: String? = "\"v1\"") throws -> (FileSink, URL, URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sink-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appendingPathComponent("f.bin")
        guard let claim = DestinationClaim.claim(url), let sink = try FileSink(claim: claim, continuing: true) else {
            throw CocoaError(.fileWriteUnknown)
        }
        let fields =
            [ResponseHead.Field(name: "Content-Length", value: "100000")]
            + (etag.map { [.init(name: "ETag", value: $0)] } ?? [])
        let head = ResponseHead(url: url, statusCode: 200, httpVersion: "HTTP/1.1", fields: fields)
        #expect(sink.begin(HeadReading(head, continuedFrom: 0, acceptableStatusCodes: 200..<300)) == nil)
        return (sink, url, directory)
    }

    private func write(_ sink: FileSink, _ count: Int) {
        let bytes = [UInt8](repeating: 7, count: count)
        #expect(bytes.withUnsafeBytes { sink.write($0) } == nil)
    }

    private func names(in directory: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()
    }

    #if os(Linux)
        /// A new part of a file being revalidated is made only once a head says its body is the file: an unchanged file
        /// (a 304, which the pipeline never begins) or an error answer costs no part at all; a 200 makes it, unnamed,
        /// and links it into place. (Below a guardian too; elsewhere a new file's part is made at the open, which finds
        /// a missing folder before anything is sent.)
        @Test func anUnnamedPartIsMadeOnlyOnceAHeadSaysItsBodyIsTheFile() throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sink-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let (refusedURL, url) = (
                directory.appendingPathComponent("e.bin"), directory.appendingPathComponent("f.bin")
            )
            func head(_ status: Int) -> HeadReading {
                let head = ResponseHead(
                    url: url, statusCode: status, httpVersion: "HTTP/1.1",
                    fields: [.init(name: "Content-Length", value: "4096")])
                return HeadReading(head, continuedFrom: 0, acceptableStatusCodes: 200..<300)
            }
            let refused = try #require(
                try DestinationClaim.claim(refusedURL).flatMap {
                    try FileSink(claim: $0, continuing: true, revalidating: true)
                })
            #expect(refused.state.withLock { $0.fd } == -1)
            #expect(refused.begin(head(404)) == nil)
            #expect(refused.state.withLock { $0.fd } == -1)
            refused.discard()
            #expect(names(in: directory).isEmpty)

            let sink = try #require(
                try DestinationClaim.claim(url).flatMap {
                    try FileSink(claim: $0, continuing: true, revalidating: true)
                })
            #expect(sink.state.withLock { $0.fd } == -1)
            #expect(sink.begin(head(200)) == nil)
            #expect(sink.state.withLock { $0.fd >= 0 && !$0.isNamed })
            write(sink, 4_096)
            #expect(sink.finishWriting() == nil && sink.commit() == nil)
            #expect(names(in: directory) == ["f.bin"])
            #expect(try Data(contentsOf: url) == Data(repeating: 7, count: 4_096))
        }
    #endif

    @Test func aBodyThatArrivesWholeIsWrittenOnceAndPutInPlaceWithoutAValidator() throws {
        let (sink, url, directory) = try opened()
        defer { try? FileManager.default.removeItem(at: directory) }
        write(sink, 4_096)
        write(sink, 4_096)
        #expect(names(in: directory) == Self.newPart)
        #expect(sink.finishWriting() == nil)
        #expect(names(in: directory) == Self.newPart)
        #expect(sink.commit() == nil)
        #expect(names(in: directory) == ["f.bin"])
        #expect(try Data(contentsOf: url).count == 8_192)
    }

    /// A whole body replaces a file at the destination (linked where nothing is there, else named and renamed over
    /// it), never a folder; an abandoned one leaves nothing.
    @Test func aWholeBodyReplacesAFileButNeverAFolder() throws {
        let (sink, url, directory) = try opened()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("old".utf8).write(to: url)
        write(sink, 4_096)
        #expect(sink.finishWriting() == nil && sink.commit() == nil)
        #expect(names(in: directory) == ["f.bin"])
        #expect(try Data(contentsOf: url) == Data(repeating: 7, count: 4_096))

        let (blocked, blockedURL, blockedDirectory) = try opened()
        defer { try? FileManager.default.removeItem(at: blockedDirectory) }
        write(blocked, 100)
        // A folder made at the destination after the part was opened (the open refuses one that is there before).
        try FileManager.default.createDirectory(at: blockedURL, withIntermediateDirectories: false)
        #expect(blocked.finishWriting() == nil)
        guard case .fileError(let path, _)? = blocked.commit() else {
            Issue.record("a folder at the destination must not be replaced")
            return
        }
        #expect(path == blockedURL.path)
        #expect(names(in: blockedDirectory) == ["f.bin"])
        #expect((try? FileManager.default.contentsOfDirectory(atPath: blockedURL.path)) == [])

        let (abandoned, _, abandonedDirectory) = try opened()
        defer { try? FileManager.default.removeItem(at: abandonedDirectory) }
        write(abandoned, 100)
        abandoned.discard()
        #expect(names(in: abandonedDirectory).isEmpty)
    }

    #if os(Linux)
        /// Something other than a file that appears at the part's path while the part is unnamed is left alone when
        /// the part takes its name: the write fails as the open would have (a part that is a file is replaced).
        @Test func anUnnamedPartNeverReplacesAFIFOAtItsName() throws {
            let (sink, url, directory) = try opened()
            defer { try? FileManager.default.removeItem(at: directory) }
            write(sink, 100)
            #expect(mkfifo(url.path + ".part", 0o644) == 0)
            let bytes = [UInt8](repeating: 7, count: FileSink.directWriteSize)
            #expect(
                bytes.withUnsafeBytes { sink.write($0) }
                    == .fileError(path: url.path + ".part", reason: "is not a regular file"))
            sink.discard()
            #expect(names(in: directory) == ["f.bin.part"])
            var info = stat()
            #expect(lstat(url.path + ".part", &info) == 0 && info.st_mode & S_IFMT == S_IFIFO)

            let (replacing, replacingURL, replacingDirectory) = try opened()
            defer { try? FileManager.default.removeItem(at: replacingDirectory) }
            write(replacing, 100)
            try Data("stale".utf8).write(to: replacingURL.appendingPathExtension("part"))
            write(replacing, FileSink.directWriteSize)
            #expect(replacing.finishWriting() == nil && replacing.commit() == nil)
            #expect(try Data(contentsOf: replacingURL).count == 100 + FileSink.directWriteSize)
        }
    #endif

    /// A sink may outlive its file (a transfer winding down still holds it): once the file is closed, kept, discarded
    /// or committed, the sink holds none of its buffers, a split part's connections' buffers (a MiB each) included.
    @Test(arguments: ["keep", "discard", "commit"])
    func aClosedFileKeepsNoBuffers(_ ending: String) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sink-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("f.bin")
        let size = 200_000
        let claim = try #require(DestinationClaim.claim(url))
        let sink = try #require(try FileSink(claim: claim, continuing: true, segmented: true))
        let head = ResponseHead(
            url: url, statusCode: 200, httpVersion: "HTTP/1.1",
            fields: [.init(name: "Content-Length", value: "\(size)"), .init(name: "ETag", value: "\"v1\"")])
        #expect(sink.begin(HeadReading(head, continuedFrom: 0, acceptableStatusCodes: 200..<300)) == nil)
        let shape = SplitRules.Shape(length: Int64(size), validator: .entityTag("\"v1\""))
        #expect(sink.beginSegments(shape, done: []) == nil)
        let bytes = [UInt8](repeating: 7, count: size / 2)
        let first = bytes.withUnsafeBytes { sink.writeSegment($0, at: 0, segment: 0, recordingAfter: .max) }
        let second = bytes.withUnsafeBytes {
            sink.writeSegment($0, at: Int64(size / 2), segment: 1, recordingAfter: .max)
        }
        #expect(first.failure == nil && second.failure == nil)
        #expect(sink.state.withLock { $0.segments != nil })
        switch ending {
        case "keep": sink.close(keeping: true)
        case "discard": sink.discard()
        default: #expect(sink.finishWriting() == nil && sink.commit() == nil)
        }
        #expect(sink.state.withLock { $0.isClosed && $0.segments == nil && $0.buffer.isEmpty })
        let expected = ["keep": ["f.bin.part", "f.bin.part.segments"], "discard": [], "commit": ["f.bin"]][ending]
        #expect(names(in: directory) == expected)
    }

    /// Issue 50, item 9: a second run on the same folder finished the file first and moved the part into place.
    /// The file there is kept, not failed; with nothing there the missing part is still a file error.
    @Test func aFileAnotherRunFinishedFirstIsKept() throws {
        // A part with a name (bytes written ahead of the end): only then can another run move it.
        let (sink, url, directory) = try opened()
        defer { try? FileManager.default.removeItem(at: directory) }
        write(sink, FileSink.directWriteSize)
        #expect(sink.finishWriting() == nil)
        #expect(rename(url.path + ".part", url.path) == 0)
        #expect(sink.commit() == nil)
        #expect(names(in: directory) == ["f.bin"])

        let (gone, goneURL, goneDirectory) = try opened()
        defer { try? FileManager.default.removeItem(at: goneDirectory) }
        write(gone, FileSink.directWriteSize)
        #expect(gone.finishWriting() == nil)
        #expect(unlink(goneURL.path + ".part") == 0)
        guard case .fileError(let path, let reason)? = gone.commit() else {
            Issue.record("a part gone with no file there must fail")
            return
        }
        #expect(path == goneURL.path && reason == "No such file or directory")
    }

    @Test func bytesThatReachThePartBeforeTheEndAreDescribedFirst() throws {
        // A piece written where it is (64 KiB or more): a process killed now leaves a part it can continue.
        let (sink, url, directory) = try opened()
        defer { try? FileManager.default.removeItem(at: directory) }
        write(sink, FileSink.directWriteSize)
        #expect(names(in: directory) == ["f.bin.part", "f.bin.part.validator"])
        let saved = try String(
            contentsOf: url.appendingPathExtension("part").appendingPathExtension("validator"), encoding: .utf8)
        #expect(RangeRules.Validator(fileText: saved) == RangeRules.Validator(fileText: "etag\n\"v1\"\n"))
        #expect(sink.finishWriting() == nil && sink.commit() == nil)
        #expect(names(in: directory) == ["f.bin"])
    }

    @Test func aValidatorThatCannotBeWrittenSaysWhatIsInTheWay() throws {
        // A directory at the validator's path: the part is not worth continuing without it, and the error says why.
        let (sink, url, directory) = try opened()
        defer { try? FileManager.default.removeItem(at: directory) }
        let validator = url.appendingPathExtension("part").appendingPathExtension("validator")
        try FileManager.default.createDirectory(at: validator, withIntermediateDirectories: false)
        let bytes = [UInt8](repeating: 7, count: FileSink.directWriteSize)
        let error = bytes.withUnsafeBytes { sink.write($0) }
        #expect(
            error
                == .fileError(
                    path: url.path + ".part", reason: "cannot write \(validator.path): is not a regular file"))
        sink.discard()
        #expect(names(in: directory) == ["f.bin.part.validator"])
    }

    @Test func aPartKeptForTheNextAttemptGetsItsValidatorThen() throws {
        let (sink, url, directory) = try opened()
        defer { try? FileManager.default.removeItem(at: directory) }
        write(sink, 100)
        #expect(names(in: directory) == Self.newPart)
        sink.close(keeping: true)
        #expect(names(in: directory) == ["f.bin.part", "f.bin.part.validator"])
        #expect(try Data(contentsOf: url.appendingPathExtension("part")).count == 100)
        // The next attempt continues it, under the request's claim.
        guard let next = try FileSink(claim: sink.claim, continuing: true) else { throw CocoaError(.fileWriteUnknown) }
        #expect(next.continuedFrom == 100)
        next.discard()
        #expect(names(in: directory).isEmpty)
    }

    @Test func aPartWithoutAValidatorIsNeverKept() throws {
        let (sink, _, directory) = try opened(etag: nil)
        defer { try? FileManager.default.removeItem(at: directory) }
        write(sink, FileSink.directWriteSize)
        #expect(names(in: directory) == ["f.bin.part"])
        sink.close(keeping: true)
        #expect(names(in: directory).isEmpty)
    }

    /// A new part is one exclusive create; what lies at the part's path already goes the long way: a part with its
    /// validator is continued, a link planted there is refused (neither it nor its target touched), and a validator
    /// left without its part is replaced by the new response's once the new part is worth continuing.
    @Test func whatLiesAtThePartPathAlreadyIsContinuedRefusedOrReplaced() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sink-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func sink(_ name: String) throws -> FileSink? {
            guard let claim = DestinationClaim.claim(directory.appendingPathComponent(name)) else { return nil }
            return try FileSink(claim: claim, continuing: true)
        }
        // A part and its validator: continued from the part's end.
        try Data(count: 10).write(to: directory.appendingPathComponent("kept.bin.part"))
        try "etag\n\"v7\"\n".write(
            to: directory.appendingPathComponent("kept.bin.part.validator"), atomically: false, encoding: .utf8)
        let kept = try #require(try sink("kept.bin"))
        #expect(kept.continuedFrom == 10)
        #expect(kept.validator == RangeRules.Validator(fileText: "etag\n\"v7\"\n"))
        kept.discard()
        // A link at the part's path.
        let target = directory.appendingPathComponent("target")
        try Data([1, 2, 3]).write(to: target)
        #expect(symlink(target.path, directory.appendingPathComponent("linked.bin.part").path) == 0)
        #expect(
            throws: NetworkQueueError.fileError(
                path: directory.appendingPathComponent("linked.bin.part").path, reason: "is not a regular file")
        ) {
            _ = try sink("linked.bin")
        }
        #expect(try Data(contentsOf: target) == Data([1, 2, 3]))
        // A validator without its part: the new part starts at 0, and the validator written for it is its own.
        let stale = directory.appendingPathComponent("stale.bin.part.validator")
        try "etag\n\"old\"\n".write(to: stale, atomically: false, encoding: .utf8)
        let fresh = try #require(try sink("stale.bin"))
        #expect(fresh.continuedFrom == 0 && fresh.validator == nil)
        let head = ResponseHead(
            url: directory.appendingPathComponent("stale.bin"), statusCode: 200, httpVersion: "HTTP/1.1",
            fields: [.init(name: "ETag", value: "\"new\"")])
        #expect(fresh.begin(HeadReading(head, continuedFrom: 0, acceptableStatusCodes: 200..<300)) == nil)
        write(fresh, FileSink.directWriteSize)
        #expect(
            RangeRules.Validator(fileText: try String(contentsOf: stale, encoding: .utf8))
                == RangeRules.Validator(fileText: "etag\n\"new\"\n"))
        fresh.discard()
        #expect(names(in: directory) == ["linked.bin.part", "target"])
    }

    /// A claim's key is the standardized path; a path already standard is taken as it is, and any other is
    /// standardized by Foundation, so two spellings of one file are one claim.
    @Test func aStandardPathIsItsOwnKeyAndOtherSpellingsShareIt() {
        for path in ["/a/b.bin", "/a/...", "/a/.hidden", "/a/b..c", "/x"] {
            #expect(DestinationClaim.isStandard(path), "\(path)")
            #expect(URL(fileURLWithPath: path).standardizedFileURL.path == path, "\(path)")
        }
        for path in ["/a/./b", "/a/../b", "/a//b", "/a/b/", "/", "a/b", "/a/.", "/a/.."] {
            #expect(!DestinationClaim.isStandard(path), "\(path)")
        }
        let name = "/tmp/claim-\(UUID().uuidString).bin"
        let first = DestinationClaim.claim(URL(fileURLWithPath: name))
        #expect(first != nil)
        let spelled = "/tmp/./x/../" + name.dropFirst("/tmp/".count)
        #expect(DestinationClaim.claim(URL(fileURLWithPath: spelled)) == nil)
        first?.endRequest()
        #expect(DestinationClaim.claim(URL(fileURLWithPath: spelled)) != nil)
    }
}
