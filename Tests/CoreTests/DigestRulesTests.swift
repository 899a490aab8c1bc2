import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.admitted, .timeLimit(.minutes(10))) struct DigestRulesTests {
    static let s256 = Checksum(hashing: Data("abc".utf8), .sha256)
    static let s512 = Checksum(hashing: Data("abc".utf8), .sha512)
    static let b256 = Data(s256.bytes!).base64EncodedString()
    static let b512 = Data(s512.bytes!).base64EncodedString()

    func response(_ status: Int, _ fields: [String: String]) -> ResponseHead {
        responseHead(URL(string: "http://a.test/f")!, status: status, fields: fields)
    }

    @Test func eachFieldPromisesItsScope() {
        let promises = DigestRules.promises(
            of: response(
                200,
                [
                    "content-digest": "sha-256=:\(Self.b256):", "Repr-Digest": "sha-512=:\(Self.b512):",
                    "DIGEST": "SHA-256=\(Self.b256)",
                ]),
            continuesPart: false, preferring: nil)
        #expect(promises.count == 3)
        #expect(promises.first == DigestRules.Promise(checksum: Self.s256, scope: .content))
        #expect(promises.contains(DigestRules.Promise(checksum: Self.s512, scope: .representation)))
        #expect(promises.contains(DigestRules.Promise(checksum: Self.s256, scope: .representation)))
    }

    @Test func oneAlgorithmAFieldPreferringTheChecksumsThenSHA256() {
        let both = ["Content-Digest": "sha-512=:\(Self.b512):, sha-256=:\(Self.b256):"]
        #expect(
            DigestRules.promises(of: response(200, both), continuesPart: false, preferring: nil).map(\.checksum) == [
                Self.s256
            ])
        #expect(
            DigestRules.promises(of: response(200, both), continuesPart: false, preferring: .sha512).map(\.checksum)
                == [Self.s512])
    }

    @Test func unreadableOrUnknownDigestsPromiseNothing() {
        for value in [
            "md5=:AAAAAAAAAAAAAAAAAAAAAA==:", "sha-256=:!!:", "sha-256=\(Self.b256)", "sha-256=:\(Self.b512):",
        ] {
            #expect(
                DigestRules.promises(
                    of: response(200, ["Content-Digest": value]), continuesPart: false, preferring: nil
                ).isEmpty, "\(value)")
        }
        #expect(DigestRules.promises(of: response(200, ["X": "1"]), continuesPart: false, preferring: nil).isEmpty)
    }

    @Test func anEncodedBodyOrARangeNotOursIsNotHeldToTheWholeFile() {
        let fields = ["Content-Digest": "sha-256=:\(Self.b256):", "Repr-Digest": "sha-256=:\(Self.b256):"]
        #expect(
            DigestRules.promises(
                of: response(200, fields.merging(["Content-Encoding": "gzip"]) { $1 }), continuesPart: false,
                preferring: nil
            ).isEmpty)
        #expect(
            DigestRules.promises(of: response(206, fields), continuesPart: false, preferring: nil).map(\.scope) == [
                .content
            ])
        #expect(
            DigestRules.promises(of: response(206, fields), continuesPart: true, preferring: nil).map(\.scope) == [
                .content, .representation,
            ])
    }
}
