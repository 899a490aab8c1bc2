import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.admitted, .timeLimit(.minutes(10))) struct ResponseHeadTests {
    let url = URL(string: "http://a.test/f")!

    func head(_ fields: [(String, String)], status: Int = 200) -> ResponseHead {
        ResponseHead(
            url: url, statusCode: status, httpVersion: "HTTP/1.1", fields: fields.map { .init(name: $0, value: $1) })
    }

    @Test func fieldsAreFoundWhateverTheirCaseAndOnlyByTheirWholeName() {
        let head = head([("Content-Type", "text/HTML; charset=utf-8"), ("X-A", "1"), ("x-a", "2"), ("ETag", "\"e\"")])
        #expect(head.value(forHTTPHeaderField: "content-type") == "text/HTML; charset=utf-8")
        #expect(head.value(forHTTPHeaderField: "CONTENT-TYPE") == "text/HTML; charset=utf-8")
        #expect(head.value(forHTTPHeaderField: "x-A") == "1")  // the first of two spellings
        #expect(head.value(forHTTPHeaderField: "etag") == "\"e\"")
        #expect(head.value(forHTTPHeaderField: "Content-Typ") == nil)
        #expect(head.value(forHTTPHeaderField: "Content-Types") == nil)
        // '-' and CR differ only in the bit that folds letters' case: not a letter, so not equal.
        #expect(head.value(forHTTPHeaderField: "Content\rType") == nil)
        #expect(head.value(forHTTPHeaderField: "") == nil)
    }

    @Test func lengthAndMediaTypeReadAsURLResponseReadsThem() {
        #expect(head([("Content-Length", "42")]).expectedContentLength == 42)
        #expect(head([("Content-Length", "x")]).expectedContentLength == -1)
        #expect(head([]).expectedContentLength == -1)
        #expect(head([("Content-Type", " Text/HTML ; charset=utf-8")]).mimeType == "text/html")
        #expect(head([("Content-Type", "")]).mimeType == nil)
        #expect(head([]).mimeType == nil)
    }

    @Test func theHTTPURLResponseIsBuiltOnFirstReadOnceWithEveryField() throws {
        let head = head([("Content-Length", "3"), ("Set-Cookie", "a=1"), ("Location", "/x")], status: 302)
        #expect(!head.hasHTTPURLResponse)
        let response = head.httpURLResponse
        #expect(head.hasHTTPURLResponse)
        #expect(head.httpURLResponse === response)
        #expect(response.statusCode == 302)
        #expect(response.url == url)
        #expect(response.value(forHTTPHeaderField: "content-length") == "3")
        #expect(response.value(forHTTPHeaderField: "location") == "/x")
        #expect(response.allHeaderFields.count == 3)
        #expect(head.description == "HTTP/1.1 302, 3 fields")
    }

    @Test func aWrappedHTTPURLResponseIsTheOneReturned() throws {
        let response = try #require(
            HTTPURLResponse(url: url, statusCode: 404, httpVersion: "HTTP/1.1", headerFields: ["Content-Length": "9"]))
        let head = ResponseHead(response)
        #expect(head.httpURLResponse === response)
        #expect(head.statusCode == 404)
        #expect(head.value(forHTTPHeaderField: "CONTENT-LENGTH") == "9")
        #expect(head.expectedContentLength == 9)
    }

    @Test func aHeadMadeFromAnHTTPURLResponseKeepsThatResponse() throws {
        let response = try #require(HTTPURLResponse(url: url, statusCode: 200, httpVersion: nil, headerFields: [:]))
        let head = ResponseHead(response)
        #expect(head.hasHTTPURLResponse)
        #expect(head.httpURLResponse === response)
    }
}
