import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

/// Cookie files in curl's and wget's Netscape format: read, held to the jar's rules, written back.
@Suite(.admitted, .timeLimit(.minutes(10))) struct CookieFileTests {
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

    /// A file of `count` cookie lines: line i sets cookie `c<i % names>` of domain `d<i % domains>.test`.
    static func file(lines count: Int, domains: Int, names: Int) -> String {
        var text = "# Netscape HTTP Cookie File\n"
        text.reserveCapacity(count * 40)
        for index in 0..<count {
            text += "d\(index % domains).test\tFALSE\t/\tFALSE\t0\tc\(index % names)\tv\(index)\n"
        }
        return text
    }

    /// A big file loads in time linear in its lines (each cookie placed by its key, the bounds applied once), and
    /// keeps what storing its lines one by one keeps: each domain's newest 50, the jar's 3,000, a line that repeats a
    /// cookie replacing it.
    @Test func aBigFileLoadsToTheJarsBoundsKeepingEachDomainsNewest() async throws {
        // Its text is a few megabytes: never beside the heap's measurement.
        try await HeavyTests.exclusively { bigFile() }
    }

    private func bigFile() {
        let count = max(20_000, TestEnvironment.bigBatch * 2)
        var jar = CookieJar()
        #expect(jar.load(netscape: Self.file(lines: count, domains: 5_000, names: 7_919), now: now) == (count, 0))
        #expect(jar.cookies.count == CookieJar.maximumCookies)
        var byDomain: [String: [CookieJar.Cookie]] = [:]
        for cookie in jar.cookies { byDomain[cookie.domain, default: []].append(cookie) }
        #expect(byDomain.values.allSatisfy { $0.count <= CookieJar.maximumCookiesPerDomain })
        // Each domain keeps its newest: with 5,000 domains over 3,000 places, one each, its last line; the domains
        // that keep one are the 3,000 first by name (chosen by selection, as a sort of every name would).
        #expect(byDomain.values.allSatisfy { $0.count == 1 })
        let first = Set((0..<5_000).map { "d\($0).test" }.sorted().prefix(CookieJar.maximumCookies))
        #expect(Set(byDomain.keys) == first)
        for cookie in jar.cookies {
            let domain = Int(cookie.domain.dropFirst().dropLast(".test".count))!
            let newest = (count - 1) - ((count - 1 - domain) % 5_000)
            #expect(cookie.value == "v\(newest)", "\(cookie.domain) \(cookie.value)")
        }
    }

    /// The bytes of a line as curl's, wget's and browsers' exports have them: CRLF ends, flags in any case, a domain in
    /// capitals (kept lowercased), a line of six fields (no value); a control character or a seventh TAB refuses the
    /// line, and an empty file adds nothing.
    @Test func aLinesBytesAreReadAsTheExportersWriteThem() {
        var jar = CookieJar()
        let text =
            "WWW.A.Test\tfalse\t/\tfalse\t0\tcrlf\tone\r\n.b.test\tTrue\t/\tTRUE\t0\tsix\r\n"
            + "c.test\tFALSE\t/\tFALSE\t0\tbell\tx\u{7}y\nc.test\tFALSE\t/\tFALSE\t0\tn\tv\textra\n"
        #expect(jar.load(netscape: text, now: now) == (2, 2))
        #expect(
            jar.cookies.map { "\($0.domain) \($0.name)=\($0.value) \($0.isSecure)" } == [
                "www.a.test crlf=one false", "b.test six= true",
            ])
        #expect(header(&jar, "http://www.a.test/") == "crlf=one")
        // The first line skipped is named by its number (comments and blank lines count as lines).
        var again = CookieJar()
        #expect(again.loadNamingSkipped(netscape: "# c\n\n" + text, now: now).firstSkippedLine == 5)
        var empty = CookieJar()
        #expect(empty.load(netscape: "", now: now) == (0, 0))
        #expect(empty.loadNamingSkipped(netscape: "", now: now).firstSkippedLine == nil)
    }

    /// Without the jar's total bound in play, a load keeps exactly what storing the lines one by one keeps.
    @Test func aFileLoadsAsItsLinesStoredOneByOneWould() {
        var generator = SeededGenerator(seed: 41)
        for _ in 0..<20 {
            let lines = (0..<600).map { _ in
                (Int.random(in: 0..<12, using: &generator), Int.random(in: 0..<80, using: &generator))
            }
            var text = ""
            for (index, (domain, name)) in lines.enumerated() {
                text += "d\(domain).test\tFALSE\t/\tFALSE\t0\tc\(name)\tv\(index)\n"
            }
            // The reference: a list where a repeated key is removed and appended, each domain cut to its newest 50.
            var reference: [(domain: Int, name: Int, value: Int)] = []
            for (index, (domain, name)) in lines.enumerated() {
                reference.removeAll { $0.domain == domain && $0.name == name }
                reference.append((domain, name, index))
                let ofDomain = reference.indices.filter { reference[$0].domain == domain }
                if ofDomain.count > CookieJar.maximumCookiesPerDomain { reference.remove(at: ofDomain[0]) }
            }
            var jar = CookieJar()
            jar.load(netscape: text, now: now)
            #expect(jar.cookies.map(\.value) == reference.map { "v\($0.value)" })
        }
    }
}
