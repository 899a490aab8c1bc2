import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

/// Cookie files in curl's and wget's Netscape format: read, held to the jar's rules, written back.
@Suite(.testLane, .timeLimit(.minutes(5))) struct CookieFileTests {
    let now = Date(timeIntervalSince1970: 2_000_000_000)

    func header(_ jar: inout CookieJar, _ url: String) -> String? { jar.header(for: URL(string: url)!, now: now) }

    @Test func aFileIsReadAsCurlWritesItAndEachCookieGoesOnlyWhereRFC6265Allows() {
        var jar = CookieJar()
        let file = """
            # Netscape HTTP Cookie File
            # https://curl.se/docs/http-cookies.html

            .a.test\tTRUE\t/\tFALSE\t0\tsession\tall
            www.a.test\tFALSE\t/dir\tFALSE\t2100000000\thost\tonly
            #HttpOnly_.a.test\tTRUE\t/\tTRUE\t2100000000\tsecret\ts3
            b.test\tFALSE\t/\tFALSE\t1900000000\texpired\tgone
            .test\tTRUE\t/\tFALSE\t0\ttld\twide
            .10.0.0.1\tTRUE\t/\tFALSE\t0\taddress\twide
            10.0.0.1\tFALSE\t/\tFALSE\t0\tip\tok
            not a cookie line
            c.test\tMAYBE\t/\tFALSE\t0\tx\ty
            c.test\tFALSE\tnoslash\tFALSE\t0\tx\ty
            c.test\tFALSE\t/\tFALSE\t-5\tx\ty
            c.test\tFALSE\t/\tFALSE\t0\tempty\t
            """
        let (added, skipped) = jar.load(netscape: file, now: now)
        #expect(added == 5)
        #expect(skipped == 7)
        #expect(header(&jar, "http://www.a.test/dir/x") == "host=only; session=all")
        #expect(header(&jar, "https://deep.a.test/") == "session=all; secret=s3")
        #expect(header(&jar, "http://a.test/") == "session=all")
        #expect(header(&jar, "http://www.a.test/other") == "session=all")
        #expect(header(&jar, "http://b.test/") == nil)
        #expect(header(&jar, "http://x.test/") == nil)
        #expect(header(&jar, "http://10.0.0.1/") == "ip=ok")
        #expect(header(&jar, "http://c.test/") == "empty=")
    }

    @Test func whatIsWrittenReadsBackTheSameAndSessionCookiesHaveExpiryZero() {
        var jar = CookieJar()
        jar.store(
            ["a=1; Domain=a.test; Path=/; Secure; HttpOnly", "b=2; Max-Age=3600", "c=3; Max-Age=0"],
            from: URL(string: "https://www.a.test/dir/page")!, now: now)
        let text = jar.netscapeText(now: now)
        #expect(
            text.split(separator: "\n").filter { !$0.hasPrefix("# ") } == [
                "#HttpOnly_.a.test\tTRUE\t/\tTRUE\t0\ta\t1", "www.a.test\tFALSE\t/dir\tFALSE\t2000003600\tb\t2",
            ])
        var again = CookieJar()
        #expect(again.load(netscape: text, now: now) == (2, 0))
        #expect(again.netscapeText(now: now) == text)
        // An hour later the second has expired: it is neither sent nor written.
        let later = now.addingTimeInterval(3_601)
        #expect(!again.netscapeText(now: later).contains("\tb\t"))
    }

    @Test func aStoreIsWrittenWholeAndPrivateAndReadBack() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cookies-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = CookieStore()
        store.jar.withLock { $0.store(["k=v; Max-Age=60"], from: URL(string: "http://h.test/")!, now: now) }
        let file = folder.appendingPathComponent("jar.txt")
        try store.write(to: file, now: now)
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["jar.txt"])
        let read = try CookieStore(contentsOf: file, now: now)
        #expect(read.count == 1)
        #expect(read.fileText(now: now) == store.fileText(now: now))
        // A folder that cannot be written: an error, nothing left behind.
        #expect(throws: (any Error).self) {
            try store.write(to: folder.appendingPathComponent("missing/jar.txt"), now: now)
        }
        #expect(throws: (any Error).self) { try CookieStore(contentsOf: folder.appendingPathComponent("none")) }
    }
}
