import DemoKit
import Foundation
import TestSupport
import Testing

/// A list line and a file name take a short path when they are plain ASCII, as nearly all are; what each gives
/// is the same as the long path's, pinned here on both sides of the line.
@Suite(.admitted, .timeLimit(.minutes(10))) struct ListLineTests {
    @Test func plainNamesAreKeptAsTheyAreAndOthersMadeSafe() throws {
        let cases: [(String, String)] = [
            ("https://h/a/f1.bin", "f1.bin"), ("https://h/a/report-2026.tar.gz", "report-2026.tar.gz"),
            ("https://h/a/a%20b.txt", "a b.txt"), ("https://h/a/..secret", "_secret"), ("https://h/a/.env", "env"),
            ("https://h/a/x..y", "x_y"), ("https://h/a/%2E%2E", "download"), ("https://h/a/_", "download"),
            ("https://h/", "download"), ("https://h/a/back%5Cslash", "back_slash"), ("https://h/a/caf%C3%A9", "café"),
            ("https://h/a/" + String(repeating: "n", count: 201), String(repeating: "n", count: 200)),
        ]
        for (text, expected) in cases {
            let url = try #require(URL(string: text))
            #expect(FileNames.safeName(for: url) == expected, "\(text)")
        }
    }

    @Test func linesAreTrimmedOfWhiteSpaceAndCarriageReturnsAndSplitIntoFields() throws {
        let hex = String(repeating: "ab", count: 32)
        let cases: [(String, String, Bool)] = [
            ("http://h/a", "http://h/a", false), ("  http://h/a\r", "http://h/a", false),
            ("\u{00A0}http://h/a\u{2003}", "http://h/a", false), ("\thttp://h/a sha256:\(hex)", "http://h/a", true),
            ("http://h/a\tsha256:\(hex)  ", "http://h/a", true),
        ]
        for (line, url, hasChecksum) in cases {
            let entry = try #require(try InputList.parse(Substring(line), number: 1))
            #expect(entry.url.absoluteString == url, "\(line)")
            #expect((entry.checksum != nil) == hasChecksum, "\(line)")
        }
        for skipped in ["", "   ", "\r", "# a comment", "  # indented comment"] {
            #expect(try InputList.parse(Substring(skipped), number: 1) == nil, "\(skipped)")
        }
        #expect(throws: InputList.Problem.self) { try InputList.parse("http://h/a b c", number: 3) }
        #expect(throws: InputList.Problem.self) { try InputList.parse("ftp://h/a", number: 3) }
    }

    /// A list is checked at the speed it is read: a line whose bytes are certainly one plain http(s) URL is never
    /// parsed. Every line that short path takes, the full parser reads as that one URL and nothing else (200,000
    /// lines of URL pieces, seeded); the common shapes take it, and anything it does not know goes the long way.
    @Test func aLineTakenAsAPlainURLFromItsBytesIsOneTheParserReadsAsThatURL() throws {
        func isPlain(_ line: String) -> Bool {
            var line = line
            return line.withUTF8 { InputList.isPlainWebURL(UnsafeRawBufferPointer($0)) }
        }
        let plain = [
            "http://h", "https://example.com/a/b.bin", "http://127.0.0.1:8080/f?x=1&y=%2F", "http://h:65535/",
            "https://a-b.c/~u/(1)!$'*+,;=:@/?q?", "http://h?only=query",
            "http://h/" + String(repeating: "n", count: 9_000),
        ]
        for line in plain { #expect(isPlain(line), "\(line)") }
        let longWay = [
            "HTTP://h/", "ftp://h/", "http://", "http:///a", "http://h#f", "http://u@h/", "http://[::1]/",
            "http://h:65536/", "http://h:123456/", "http://h:/", "http://h/a b", "http://h/%zz", "http://h/%2",
            " http://h",
            "http://h/\r", "http://h/é", "http://h/a\tsha256:00", "\u{FEFF}http://h/", "http://h/<", "http://h/\"",
            "http://h/" + String(repeating: "n", count: InputList.longestLine),
        ]
        for line in longWay { #expect(!isPlain(line), "\(line)") }

        let pieces = [
            "h", "Z", "0", "9", ".", "-", ":", "/", "?", "#", "%", "%2F", "%zz", "@", "[", "]", "~", "_", "!", "$", "&",
            "'", "(", ")", "*", "+", ",", ";", "=", " ", "\t", "é", "\"", "<", "|", "\\", "^", "`", "{", "80", "65536",
        ]
        let plainPieces = ["h", "Z", "0", ".", "-", "/", "?", "%2F", "~", "_", "=", "&", ":", "@", "80", "!", "("]
        let starts = ["http://", "https://", "http:/", "HTTP://", "http://h", "https://127.0.0.1:", ""]
        var generator = SeededGenerator(seed: 74)
        func next(_ bound: Int) -> Int { Int.random(in: 0..<bound, using: &generator) }
        var taken = 0
        for _ in 0..<200_000 {
            var line = starts[next(starts.count)]
            // Mostly a plain URL's pieces, each line with a chance of one that is not.
            for _ in 0..<next(24) {
                line += next(8) == 0 ? pieces[next(pieces.count)] : plainPieces[next(plainPieces.count)]
            }
            guard isPlain(line) else { continue }
            taken += 1
            let entry = try InputList.parse(Substring(line), number: 1)
            #expect(entry?.url.absoluteString == line, "\(line)")
            #expect(entry?.mirrors.isEmpty == true && entry?.checksum == nil && entry?.name == nil, "\(line)")
            #expect(entry?.folder == nil, "\(line)")
        }
        // The generator reaches the short path often enough to prove something.
        #expect(taken > 5_000, "\(taken)")
    }
}
