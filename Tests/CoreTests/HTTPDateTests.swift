import Foundation
import Testing

@testable import NetworkQueue

/// The three date forms of RFC 9110 §5.6.7, read byte by byte, and what is not a date.
@Suite struct HTTPDateTests {
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
}
