import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

/// The file name a response gives in `Content-Disposition`, read as RFC 6266 and 8187 say and made safe.
@Suite(.admitted, .timeLimit(.minutes(10))) struct ContentDispositionTests {
    static func name(_ field: String) -> String? { ContentDisposition.fileName(in: field) }

    @Test func filenameStarIsPreferredAndDecodedAndFilenameIsTheFallback() {
        #expect(Self.name("attachment; filename=report.pdf") == "report.pdf")
        #expect(Self.name(#"attachment; filename="annual report.pdf""#) == "annual report.pdf")
        #expect(Self.name(#"attachment; filename="a \"quoted\" name.txt""#) == #"a "quoted" name.txt"#)
        #expect(Self.name("attachment; filename*=UTF-8''%E2%82%AC%20rates.pdf") == "€ rates.pdf")
        #expect(
            Self.name(#"attachment; filename="EURO rates.pdf"; filename*=utf-8''%E2%82%AC%20rates.pdf"#)
                == "€ rates.pdf")
        #expect(Self.name("attachment; filename*=iso-8859-1'en'%A3%20rates.pdf") == "£ rates.pdf")
        // filename* that cannot be read: bad UTF-8, an unknown charset, bad escapes; filename is used then.
        #expect(Self.name(#"attachment; filename*=UTF-8''%FF%FEbad.pdf; filename="plain.pdf""#) == "plain.pdf")
        #expect(Self.name(#"attachment; filename*=koi8-r''x.pdf; filename=plain.pdf"#) == "plain.pdf")
        #expect(Self.name(#"attachment; filename*=UTF-8''%G1.pdf"#) == nil)
        #expect(Self.name("inline; FILENAME=Upper.TXT") == "Upper.TXT")
        #expect(Self.name("attachment") == nil)
        #expect(Self.name("attachment; size=3") == nil)
        #expect(Self.name(";;;=;filename") == nil)
    }

    @Test func hostileNamesBecomeOneSafeNameOrNone() {
        let cases: [(String, String?)] = [
            ("../../x", "x"), ("/etc/passwd", "passwd"), ("a/b", "b"), (#"C:\Windows\system.ini"#, "system.ini"),
            ("a\u{0}b", "ab"), ("line\r\nbreak.txt", "linebreak.txt"), ("..", nil), (".", nil), ("...", nil),
            (".hidden", "hidden"), ("  spaced  ", "spaced"), ("x/..", nil), ("trailing.", "trailing"),
            ("a..b", "a.b"), ("\u{7F}\u{1B}[31mred", "[31mred"),
        ]
        for (raw, expected) in cases {
            #expect(ContentDisposition.safeName(raw) == expected, "\(raw.debugDescription)")
        }
        let long = ContentDisposition.safeName(String(repeating: "n", count: 300) + ".tar.gz")
        #expect(long?.utf8.count == 200 && long?.hasSuffix("n.gz") == true)
        let wide = ContentDisposition.safeName(String(repeating: "é", count: 150))
        #expect(wide.map { $0.utf8.count <= 200 && $0.allSatisfy { $0 == "é" } } == true)
    }
}
