import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

/// The pure parts of revalidation (DESIGN semantics 23): the date a conditional GET sends, the entity tags recorded
/// and sent, the record kept with a file, and which validator a file is asked with.
@Suite(.admitted, .timeLimit(.minutes(10))) struct RevalidationRulesTests {
    @Test func datesAreWrittenAsIMFFixdatesAndReadBack() {
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 784_111_777)) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 0)) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 951_782_400)) == "Tue, 29 Feb 2000 00:00:00 GMT")
        // Fractions dropped; before 1970 and past 9999 clamped.
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 784_111_777.9)) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: -5)) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 1e15)) == "Fri, 31 Dec 9999 23:59:59 GMT")
        // Every written date reads back as itself, over 3,000 seeded instants from 1970 to 9999.
        var generator = SeededGenerator(seed: 64)
        for _ in 0..<3_000 {
            let seconds = Double(Int64.random(in: 0...253_402_300_799, using: &generator))
            let date = Date(timeIntervalSince1970: seconds)
            #expect(HTTPDate.parse(HTTPDate.format(date)) == date, "\(seconds)")
        }
    }

    @Test func onlyWellFormedEntityTagsAreRecordedOrSent() {
        for tag in [#""abc""#, #"W/"abc""#, #""""#, #""5f1b-2a""#, #""!#~""#] {
            #expect(ExistingFileRules.isEntityTag(tag), "\(tag)")
        }
        #expect(ExistingFileRules.isEntityTag("\"" + String(repeating: "a", count: 1_022) + "\""))
        #expect(!ExistingFileRules.isEntityTag("\"" + String(repeating: "a", count: 1_023) + "\""))
        for tag in ["abc", #""abc"#, #"abc""#, #""a"b""#, #""a b""#, "\"a\r\nX-Evil: 1\"", #"w/"abc""#, "\"é\"", "\""] {
            #expect(!ExistingFileRules.isEntityTag(tag), "\(tag)")
        }
        let head = { (tag: String) in
            ResponseHead(
                url: URL(string: "http://h/")!, statusCode: 200, httpVersion: "HTTP/1.1",
                fields: [.init(name: "ETag", value: tag)])
        }
        #expect(ExistingFileRules.entityTag(of: head(#""v1""#)) == #""v1""#)
        #expect(ExistingFileRules.entityTag(of: head(#"W/"v1""#)) == #"W/"v1""#)
        #expect(ExistingFileRules.entityTag(of: head("v1")) == nil)
    }

    @Test func theRecordReadsBackOnlyAsWritten() {
        let tag = ExistingFileRules.SavedTag(entityTag: #"W/"xy""#, size: 12, modifiedSeconds: 784_111_777)
        #expect(tag.text == #"12 784111777 W/"xy""#)
        #expect(ExistingFileRules.SavedTag(text: tag.text) == tag)
        // With the file's origin (one attribute read on a rerun), which a reader of three fields takes for no tag.
        let named = ExistingFileRules.SavedTag(
            entityTag: #""v1""#, size: 12, modifiedSeconds: 5, origin: "https://h/a?b=1")
        #expect(named.text == #"12 5 "v1" https://h/a?b=1"#)
        #expect(ExistingFileRules.SavedTag(text: named.text) == named)
        // A time before 1970, and a sign, as `Int64` reads them.
        #expect(ExistingFileRules.SavedTag(text: #"+7 -86400 "a""#)?.modifiedSeconds == -86_400)
        #expect(ExistingFileRules.SavedTag(text: #"+7 -86400 "a""#)?.size == 7)
        #expect(ExistingFileRules.SavedTag(text: #"1 -9223372036854775808 "a""#)?.modifiedSeconds == Int64.min)
        #expect(!ExistingFileRules.isEntityTag(#""v1" https://h/a?b=1"#))
        #expect(ExistingFileRules.SavedTag(entityTag: #""v1""#, size: 1, modifiedSeconds: 0, origin: "").origin == nil)
        for text in [
            "", "12 784111777", #"12 784111777 "a" "#, #"12 784111777 "a" two words"#, #"-1 0 "a""#, #"x 0 "a""#,
            #"1 y "a""#, "1 0 a", "1  0 \"a\"", #"1 0 a https://h/"#, #"99999999999999999999 0 "a""#, #"1 -x "a""#,
            #" 1 0 "a""#, #"1 0 "a"  https://h/"#,
        ] {
            #expect(ExistingFileRules.SavedTag(text: text) == nil, "\(text)")
        }
    }

    @Test func aFileIsAskedByItsTagWhileTheRecordDescribesItElseByItsDate() {
        let modified = Date(timeIntervalSince1970: 784_111_777.25)
        let saved = ExistingFileRules.SavedTag(entityTag: #""v1""#, size: 100, modifiedSeconds: 784_111_777)
        #expect(ExistingFileRules.conditional(size: 100, modified: modified, saved: saved) == .entityTag(#""v1""#))
        // Changed since it was saved: another size or another second. Fetched whole.
        #expect(ExistingFileRules.conditional(size: 101, modified: modified, saved: saved) == nil)
        #expect(
            ExistingFileRules.conditional(size: 100, modified: modified.addingTimeInterval(1), saved: saved) == nil)
        // No record: its date.
        #expect(ExistingFileRules.conditional(size: 100, modified: modified, saved: nil) == .modifiedSince(modified))
        let byTag = ExistingFileRules.Conditional.entityTag(#""v1""#).field
        #expect(byTag.name == "If-None-Match" && byTag.value == #""v1""#)
        let byDate = ExistingFileRules.Conditional.modifiedSince(modified).field
        #expect(byDate.name == "If-Modified-Since" && byDate.value == "Sun, 06 Nov 1994 08:49:37 GMT")
    }

    @Test func a304IsNotModifiedOnlyForATransferThatAsked() {
        let head = ResponseHead(url: URL(string: "http://h/")!, statusCode: 304, httpVersion: "HTTP/1.1", fields: [])
        #expect(HeadReading(head, continuedFrom: 0, acceptableStatusCodes: 200..<300, revalidates: true).isNotModified)
        let asked = HeadReading(head, continuedFrom: 0, acceptableStatusCodes: 200..<300, revalidates: true)
        #expect(!asked.isAcceptable)
        let unasked = HeadReading(head, continuedFrom: 0, acceptableStatusCodes: 200..<300)
        #expect(!unasked.isNotModified && !unasked.isAcceptable)
        // A transfer that continues a part sent no validator of the file's.
        #expect(
            !HeadReading(head, continuedFrom: 10, acceptableStatusCodes: 200..<300, revalidates: true).isNotModified)
    }
}
