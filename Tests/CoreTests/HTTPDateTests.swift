import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

/// The three date forms of RFC 9110 §5.6.7, read byte by byte, and what is not a date.
@Suite(.admitted, .timeLimit(.minutes(10))) struct HTTPDateTests {
    /// 1994-11-06 08:49:37 UTC.
    private let november6 = Date(timeIntervalSince1970: 784_111_777)

    @Test func theThreeFormsNameTheSameInstant() {
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == november6)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == november6)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == november6)
        // Month names in any case, a leap second, a year of four digits in the obsolete form.
        #expect(HTTPDate.parse("Sun, 06 NOV 1994 08:49:37 GMT") == november6)
        #expect(HTTPDate.parse("Sat, 31 Dec 2016 23:59:60 GMT") == Date(timeIntervalSince1970: 1_483_228_800))
        #expect(HTTPDate.parse("Thursday, 01-Jan-2070 00:00:00 GMT") == Date(timeIntervalSince1970: 3_155_760_000))
        // Two-digit years: before 70 in this century, else the last.
        #expect(HTTPDate.parse("Tue, 01-Jan-69 00:00:00 GMT") == Date(timeIntervalSince1970: 3_124_224_000))
        #expect(HTTPDate.parse("Thu, 01-Jan-70 00:00:00 GMT") == Date(timeIntervalSince1970: 0))
    }

    @Test func whatIsNotADateIsNil() {
        for text in [
            "", "GMT", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Nov 1994 08:49 GMT", "Sun, 32 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nox 1994 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT",
            "Sun, 0x6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 0 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT extra",
            "Sun Nov 6 08:49:37", "Sun, 06 Nov 1994 08:4a:37 GMT", "Sun, 06 Nov 99999999999999999999 08:49:37 GMT",
        ] {
            #expect(HTTPDate.parse(text) == nil, "\(text)")
        }
    }

    /// The parser against a plain reference (the same rules with `split` and `Int`-like reading) over 30,000
    /// strings made by mutating the three forms byte by byte: separators doubled or dropped, digits, signs,
    /// colons and letters put in, so that every branch meets text close to a date.
    @Test func agreesWithAPlainReadingOfTheRulesOnNearDates() {
        let seeds = [
            "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
            "Sat, 31 Dec 2016 23:59:60 GMT",
        ].map { Array($0.utf8) }
        let alphabet = Array(" ,-:+0123456789GMTNnOoVvJjAaDdEeCcZ\t".utf8)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        var dates = 0
        for _ in 0..<30_000 {
            var bytes = seeds[next(seeds.count)]
            for _ in 0..<(1 + next(3)) {
                let at = next(bytes.count + 1)
                switch next(3) {
                case 0 where at < bytes.count: bytes.remove(at: at)
                case 1 where at < bytes.count: bytes[at] = alphabet[next(alphabet.count)]
                default: bytes.insert(alphabet[next(alphabet.count)], at: at)
                }
            }
            let text = String(decoding: bytes, as: UTF8.self)
            let parsed = HTTPDate.parse(text)
            #expect(parsed == Self.reference(text), "\(text)")
            if parsed != nil { dates += 1 }
        }
        // Enough of them still dates for the comparison to mean something either way.
        #expect(dates > 3_000)
    }

    /// RFC 9110's three forms read with `split`, as plainly as the rules say.
    private static func reference(_ text: String) -> Date? {
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "-" }).map(String.init)
        func number(_ text: String) -> Int? {
            let digits = text.hasPrefix("+") ? String(text.dropFirst()) : text
            guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy({ ("0"..."9").contains($0) }) else {
                return nil
            }
            return Int(digits)
        }
        let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        func month(_ text: String) -> Int? { months.firstIndex(of: text.lowercased()).map { $0 + 1 } }
        var fields: (day: Int?, month: Int?, year: Int?, time: String)
        if parts.count == 6, parts[5] == "GMT" {
            fields = (number(parts[1]), month(parts[2]), number(parts[3]), parts[4])
            if let short = fields.year, parts[3].count == 2 { fields.year = short + (short < 70 ? 2000 : 1900) }
        } else if parts.count == 5 {
            fields = (number(parts[2]), month(parts[1]), number(parts[4]), parts[3])
        } else {
            return nil
        }
        let clock = fields.time.split(separator: ":").map { number(String($0)) }
        guard let day = fields.day, let month = fields.month, let year = fields.year, clock.count == 3,
            let hour = clock[0], let minute = clock[1], let second = clock[2], (1...31).contains(day),
            (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second), (1...9999).contains(year)
        else { return nil }
        // The C library's proleptic Gregorian calendar (Foundation's switches to the Julian one before 1582).
        var time = tm()
        (time.tm_year, time.tm_mon, time.tm_mday) = (Int32(year - 1900), Int32(month - 1), Int32(day))
        (time.tm_hour, time.tm_min, time.tm_sec) = (Int32(hour), Int32(minute), Int32(second))
        return Date(timeIntervalSince1970: TimeInterval(timegm(&time)))
    }
}
