import DemoKit
import Foundation
import NetworkQueue
import TestSupport
import Testing

/// The rule file names had before names took constant time: each URL tries its base name, then `-2`, `-3`…
/// from 2 every time, the first not taken (compared without regard to case).
private func referenceNames(_ bases: [String]) -> [String] {
    var taken: Set<String> = []
    return bases.map { base in
        var name = base
        var counter = 2
        while taken.contains(name.lowercased()) {
            let ext = (base as NSString).pathExtension
            let stem = (base as NSString).deletingPathExtension
            name = ext.isEmpty ? "\(stem)-\(counter)" : "\(stem)-\(counter).\(ext)"
            counter += 1
        }
        taken.insert(name.lowercased())
        return name
    }
}

/// A list file of `lines` in a new folder; returns the file.
private func listFile(_ lines: [String]) throws -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nq-list-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let file = directory.appendingPathComponent("list.txt")
    try Data(lines.joined(separator: "\n").utf8).write(to: file)
    return file
}

/// The requests a list source gives, as (line, file name or URL).
private func read(_ source: ListSource) async throws -> [Int: String] {
    var given: [Int: String] = [:]
    for try await request in source {
        if case .file(let file) = request.destination {
            given[request.tag] = file.lastPathComponent
        } else {
            given[request.tag] = request.url!.absoluteString
        }
    }
    return given
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct FileNameTests {
    @Test func namesFollowTheSameRuleAsBefore() {
        let bases = [
            "a.bin", "a.bin", "A.BIN", "a-2.bin", "a.bin", "b", "b", "b-2", "b", "index.html", "INDEX.html",
            "index-2.html",
            "index.html", ".tar.gz", "x.tar.gz", "x.tar.gz", "x.tar-2.gz",
        ]
        var namer = FileNamer()
        #expect(bases.map { namer.name(forBase: $0) } == referenceNames(bases))
    }

    @Test func seededListsNameAsTheReferenceDoes() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            // Few distinct names, so that collisions (with generated names too) are the rule.
            let pool = ["f.bin", "f-2.bin", "f-3.bin", "F.bin", "g", "g-2", "h.tar.gz", "h.tar-2.gz", "download"]
            let bases = (0..<300).map { _ in pool.randomElement(using: &generator)! }
            var namer = FileNamer()
            #expect(bases.map { namer.name(forBase: $0) } == referenceNames(bases))
        }
    }

    @Test func twentyThousandURLsWithOneNameGetTwentyThousandNames() {
        let urls = (0..<20_000).map { URL(string: "http://files.test/file.bin?i=\($0)")! }
        let names = FileNames.names(for: urls)
        #expect(names.first == "file.bin")
        #expect(names[1] == "file-2.bin")
        #expect(names.last == "file-20000.bin")
        #expect(Set(names).count == 20_000)
    }
}

@Suite(.admitted, .timeLimit(.minutes(10))) struct ShardTests {
    @Test func fourShardsOfAThousandLinesAreDisjointCompleteAndBalanced() async throws {
        let lines = (0..<1_000).map { "http://mirror.test/pool/\($0 % 97)/package-\($0).deb" }
        let list = try listFile(lines)
        defer { try? FileManager.default.removeItem(at: list.deletingLastPathComponent()) }
        var union: [Int: String] = [:]
        for index in 0..<4 {
            let tally = ListSource.Tally()
            let source = ListSource(
                path: list.path, output: nil, shard: Shard(index: index, count: 4), noClobber: false,
                existingFile: .replace, tally: tally)
            let given = try await read(source)
            #expect((150...350).contains(given.count), "shard \(index) has \(given.count) lines")
            #expect(tally.otherShards == 1_000 - given.count)
            for (line, url) in given {
                #expect(union[line] == nil, "line \(line) is in two shards")
                union[line] = url
            }
        }
        #expect(union.count == 1_000)
        #expect(union.keys.sorted() == Array(1...1_000))
    }

    @Test func aWholeRunAndItsShardsNameEveryURLAlike() async throws {
        // Many URLs share a name: the -2, -3 of each depends on every line before it, in any shard.
        let lines =
            ["# a list"] + (0..<600).map { "http://cdn.test/\($0 % 5)/image.jpg?id=\($0)" } + [
                "", "http://cdn.test/image-2.jpg",
            ]
        let list = try listFile(lines)
        let output = try OutputFolder(path: list.deletingLastPathComponent().appendingPathComponent("out").path)
        defer { try? FileManager.default.removeItem(at: list.deletingLastPathComponent()) }
        let whole = try await read(
            ListSource(
                path: list.path, output: output, shard: .whole, noClobber: false, existingFile: .replace, tally: .init()
            ))
        #expect(whole.count == 601)
        #expect(Set(whole.values).count == 601)
        var sharded: [Int: String] = [:]
        for index in 0..<3 {
            let given = try await read(
                ListSource(
                    path: list.path, output: output, shard: Shard(index: index, count: 3), noClobber: false,
                    existingFile: .replace,
                    tally: .init()))
            sharded.merge(given) { first, _ in first }
        }
        #expect(sharded == whole)
    }

    @Test func shardsParseAsKOfN() {
        #expect(Shard("0/4") == Shard(index: 0, count: 4))
        #expect(Shard("3/4") == Shard(index: 3, count: 4))
        for bad in ["4/4", "-1/4", "1/0", "1", "a/b", "1/2/3", ""] { #expect(Shard(bad) == nil, "\(bad)") }
    }

    @Test func aMalformedLineStopsTheListWhereItIsAndTheCountIsOfLines() async throws {
        let list = try listFile(["http://a.test/x", "# fine", "", "ftp://a.test/y", "http://a.test/z"])
        defer { try? FileManager.default.removeItem(at: list.deletingLastPathComponent()) }
        let reader = try LineReader(path: list.path)
        #expect(try reader.countLines() == 5)
        reader.finish()
        let source = ListSource(
            path: list.path, output: nil, shard: .whole, noClobber: false, existingFile: .replace, tally: .init())
        var given: [Int] = []
        do {
            for try await request in source { given.append(request.tag) }
            Issue.record("the malformed line was not reported")
        } catch let problem as InputList.Problem {
            #expect(problem.line == 4)
        }
        #expect(given == [1])
    }

    @Test func aLineLongerThanTheLimitIsRefusedWithItsNumber() async throws {
        let long = "http://a.test/" + String(repeating: "x", count: InputList.longestLine)
        let list = try listFile(["http://a.test/1", long, "http://a.test/3"])
        defer { try? FileManager.default.removeItem(at: list.deletingLastPathComponent()) }
        var reader = try LineReader(path: list.path)
        defer { reader.finish() }
        #expect(try reader.next()?.number == 1)
        #expect(throws: InputList.Problem.self) { try reader.next() }
        do {
            _ = try reader.next()
        } catch let problem as InputList.Problem {
            #expect(problem.line == 2)
            #expect(problem.reason == "longer than 65536 bytes")
        }
    }

    /// Issue 71: a list saved with a UTF-8 byte-order mark (as Notepad saves) reads as the same list without it.
    @Test func aByteOrderMarkBeforeTheFirstLineIsSkipped() throws {
        let list = try listFile(["\u{FEFF}http://a.test/1", "\u{FEFF}http://a.test/2"])
        defer { try? FileManager.default.removeItem(at: list.deletingLastPathComponent()) }
        var reader = try LineReader(path: list.path)
        defer { reader.finish() }
        let first = try #require(try reader.next())
        #expect(first.line == "http://a.test/1" && first.number == 1)
        #expect(try InputList.parse(first.line, number: 1)?.url.absoluteString == "http://a.test/1")
        // Only the first line's: a mark inside the list is no text reader's to skip.
        #expect(try reader.next()?.line.unicodeScalars.first == "\u{FEFF}")
    }

    /// Issue 71: `tail -f list | Demo --input -`: a URL line read from a stream is given while the stream stays open
    /// with nothing more to give (an entry is whole after a moment without its next line), not at the next line.
    @Test func aStreamsLastURLIsGivenWhileTheStreamStaysOpen() async throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let (readEnd, writeEnd) = (ends[0], ends[1])
        defer { close(readEnd) }
        let line = Array("http://a.test/newest.iso\n".utf8)
        #expect(write(writeEnd, line, line.count) == line.count)
        let closed = ManagedAtomicFlag()
        // Only so that a reader that waits for the next line ends instead of hanging: its verdict is the flag. The
        // write end is closed once, by whichever comes first: a cancelled sleep returns at once, and a second close
        // closed whatever file another suite had been given that number since (an EBADF in `longLinesAreReadWhole`).
        let guardTask = Task.detached {
            do { try await Task.sleep(for: .seconds(60)) } catch { return }
            if closed.claim() { close(writeEnd) }
        }
        let source = ListSource(
            path: "/dev/fd/\(readEnd)", output: nil, shard: .whole, noClobber: false, existingFile: .replace,
            tally: .init())
        var iterator = source.makeAsyncIterator()
        let first = try await iterator.next()
        #expect(!closed.isSet, "the entry came only once the stream ended")
        #expect(first?.url?.absoluteString == "http://a.test/newest.iso" && first?.tag == 1)
        guardTask.cancel()
        if closed.claim() { close(writeEnd) }
        #expect(try await iterator.next() == nil)
    }

    @Test func aLineOfExactlyTheLimitIsRead() throws {
        let line = "http://a.test/" + String(repeating: "y", count: InputList.longestLine - 14)
        let list = try listFile([line, "http://a.test/2"])
        defer { try? FileManager.default.removeItem(at: list.deletingLastPathComponent()) }
        var reader = try LineReader(path: list.path)
        defer { reader.finish() }
        #expect(try reader.next()?.line.utf8.count == InputList.longestLine)
        #expect(try reader.next()?.line == "http://a.test/2")
        #expect(try reader.next() == nil)
    }

    /// A megabyte-long bad field is named in at most a line's worth of text.
    @Test func aLongBadFieldIsNotEchoedWhole() {
        let field = String(repeating: "z", count: 50_000)
        #expect(throws: InputList.Problem.self) { try InputList.parse(Substring(field), number: 7) }
        do {
            _ = try InputList.parse(Substring(field), number: 7)
        } catch {
            #expect(error.description.count < 200)
            #expect(error.description.hasPrefix("line 7: 'zzz"))
        }
    }

    /// A reader finished twice (itself and a copy) closes its file once: the number the process gives the next file
    /// is not closed under it. Before, a second finish closed whatever had that number since (a test run under load
    /// saw another suite's list read fail with EBADF).
    @Test func aReaderFinishedTwiceClosesItsFileOnce() throws {
        let list = try listFile(["http://a.test/1", "http://a.test/2"])
        defer { try? FileManager.default.removeItem(at: list.deletingLastPathComponent()) }
        let reader = try LineReader(path: list.path)
        let copy = reader
        reader.finish()
        var next = try LineReader(path: list.path)
        defer { next.finish() }
        copy.finish()
        reader.finish()
        var read: [String] = []
        while let (line, _) = try next.next() { read.append(String(line)) }
        #expect(read == ["http://a.test/1", "http://a.test/2"])
    }

    /// Lines are read in time linear in their length: a list of 60,000-byte lines (each scanned once, not once per
    /// chunk read) gives every line, byte-exact.
    @Test func longLinesAreReadWhole() throws {
        let lines = (0..<40).map { "http://a.test/\($0)/" + String(repeating: "q", count: 60_000) }
        let list = try listFile(lines)
        defer { try? FileManager.default.removeItem(at: list.deletingLastPathComponent()) }
        var reader = try LineReader(path: list.path)
        defer { reader.finish() }
        var read: [String] = []
        while let (line, _) = try reader.next() { read.append(String(line)) }
        #expect(read == lines)
    }
}

/// A flag set once, read from any thread.
private final class ManagedAtomicFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    /// Sets the flag; true when it was not set before (the caller is the first).
    func claim() -> Bool {
        lock.withLock {
            defer { value = true }
            return !value
        }
    }
}
