import DemoKit
import Foundation
import TestSupport
import Testing

/// A list line and a file name take a short path when they are plain ASCII, as nearly all are; what each gives
/// is the same as the long path's, pinned here on both sides of the line.
@Suite(.testLane, .timeLimit(.minutes(2))) struct ListLineTests {
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
}
