import Foundation
import TestSupport
import Testing

@testable import NetworkQueue
@testable import TestSupport

/// A head's fields kept as bytes read back as the strings the parser used to make as each line arrived.
@Suite(.admitted, .timeLimit(.minutes(10))) struct HeadFieldsTests {
    /// The reference: fields as strings, changed the way the parser changed them before it kept bytes.
    private struct Model {
        var fields: [ResponseHead.Field] = []

        func index(of name: String) -> Int? {
            fields.firstIndex { HeaderName.equal($0.name.utf8, name.utf8) }
        }
    }

    private static let names = ["Content-Type", "content-type", "ETag", "Set-Cookie", "X-A", "x-a", "Vary", "Ünï"]

    private static func bytes(_ random: inout SeededGenerator) -> [UInt8] {
        // Mostly text, some bytes that are not UTF-8 (a lone continuation byte, a cut sequence, 0xFF).
        let pool: [[UInt8]] = [
            Array("gzip".utf8), Array("W/\"1\"".utf8), [0x80], [0xC3], [0xFF], Array("é".utf8), Array(" ".utf8), [],
        ]
        return (0..<Int.random(in: 0...3, using: &random)).flatMap { _ in pool.randomElement(using: &random)! }
    }

    @Test func randomEditsReadBackAsTheStringModelWould() {
        var random = SeededGenerator(seed: 34)
        for _ in 0..<2_000 {
            var fields = HeadFields()
            var model = Model()
            for _ in 0..<Int.random(in: 0...12, using: &random) {
                let value = Self.bytes(&random)
                let text = String(decoding: value, as: UTF8.self)
                switch Int.random(in: 0..<10, using: &random) {
                case 0..<5:
                    let name = Self.names.randomElement(using: &random)!
                    fields.append(name: Array(name.utf8), value: value)
                    model.fields.append(.init(name: name, value: text))
                case 5 where !model.fields.isEmpty:
                    // A repeated field joined (even to an empty value, as before).
                    let index = Int.random(in: 0..<model.fields.count, using: &random)
                    fields.extendValue(at: index, separator: ", ", with: value)
                    model.fields[index].value += ", " + text
                case 6 where !model.fields.isEmpty:
                    // An obs-fold line continuing one: one space, none after an empty value.
                    let index = Int.random(in: 0..<model.fields.count, using: &random)
                    fields.extendValue(at: index, separator: " ", with: value)
                    model.fields[index].value += " " + text
                case 7 where !model.fields.isEmpty:
                    let index = Int.random(in: 0..<model.fields.count, using: &random)
                    fields.setValue(at: index, to: value)
                    model.fields[index].value = text
                case 8 where !model.fields.isEmpty:
                    let index = Int.random(in: 0..<model.fields.count, using: &random)
                    fields.remove(at: index)
                    model.fields.remove(at: index)
                default:
                    break
                }
            }
            #expect(fields.fields == model.fields)
            #expect(fields.count == model.fields.count)
            for name in Self.names + ["Absent", "X-B"] {
                #expect(fields.index(of: name.utf8) == model.index(of: name))
                #expect(fields.value(named: name) == model.index(of: name).map { model.fields[$0].value })
            }
        }
    }

    @Test func aResponseHeadKeepsWhatItWasGivenAndCountsAsBefore() {
        let given: [ResponseHead.Field] = [
            .init(name: "Content-Length", value: "7"), .init(name: "ETag", value: "\"a\""),
            .init(name: "etag", value: "\"b\""),
        ]
        let head = ResponseHead(
            url: URL(string: "http://h.invalid/")!, statusCode: 200, httpVersion: "HTTP/1.1", fields: given)
        #expect(head.fields == given)
        #expect(head.value(forHTTPHeaderField: "ETAG") == "\"a\"")
        #expect(head.value(forHTTPHeaderField: "Content-Type") == nil)
        #expect(head.expectedContentLength == 7)
        #expect(head.description == "HTTP/1.1 200, 3 fields")
        #expect(head.httpURLResponse.value(forHTTPHeaderField: "Content-Length") == "7")
    }
}
