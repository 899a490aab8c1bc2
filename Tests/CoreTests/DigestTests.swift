import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

/// Every hash engine of this process against the NIST example vectors (FIPS 180-4), fed whole and in
/// pieces that cross block boundaries.
@Suite(.admitted, .timeLimit(.minutes(10))) struct DigestTests {
    static let messages: [(String, [UInt8])] = [
        ("empty", []), ("abc", Array("abc".utf8)),
        ("448 bits", Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)),
        ("a million a", [UInt8](repeating: 97, count: 1_000_000)),
    ]

    static let expected: [Checksum.Algorithm: [String]] = [
        .sha256: [
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
        ],
        .sha512: [
            "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e",
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
            "204a8fc6dda82f0a0ced7beb8e08a41657c16ef468b228a8279be331a703c33596fd15c13b1b07f9aa1d3bea57789ca031ad85c7a71dd70354ec631238ca3445",
            "e718483d0ce769644e2e42c7bc15b4638e1f98b13b2044285632a803afa973ebde0ff244877ea60a4cb0432ce577c31beb009c5c2c49aa2e4eadb217ad8cc09b",
        ],
    ]

    func hash(_ engine: DigestEngine, _ algorithm: Checksum.Algorithm, _ message: [UInt8], pieces: [Int]) -> String {
        let digest = engine.make(algorithm)
        var offset = 0
        var index = 0
        message.withUnsafeBytes { bytes in
            while offset < bytes.count {
                let count = min(pieces[index % pieces.count], bytes.count - offset)
                digest.update(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)]))
                offset += count
                index += 1
            }
        }
        return Checksum(algorithm, digest: digest.finalize()).hex
    }

    @Test(arguments: DigestEngine.available, Checksum.Algorithm.allCases)
    func theNISTVectors(_ engine: DigestEngine, _ algorithm: Checksum.Algorithm) async {
        // Seconds of hashing in a debug build (more under a sanitizer): off the cooperative pool, which the
        // queue tests running beside this one need.
        // The million bytes are fed once, in uneven pieces up to 64 KiB (a sanitizer run pays for every
        // byte); the short messages whole and in pieces.
        let results = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(
                    returning: Self.messages.map { _, message in
                        let pieces = self.hash(
                            engine, algorithm, message, pieces: [1, 63, 64, 65, 127, 129, 1000, 65_536])
                        return (
                            message.count > 1000
                                ? pieces : self.hash(engine, algorithm, message, pieces: [max(1, message.count)]),
                            pieces
                        )
                    })
            }
        }
        for (index, (name, _)) in Self.messages.enumerated() {
            let want = Self.expected[algorithm]![index]
            #expect(results[index].0 == want, "\(name) whole")
            #expect(results[index].1 == want, "\(name) in pieces")
        }
    }

    @Test func linuxUsesLibcrypto() {
        #if os(Linux)
            #expect(DigestEngine.preferred == .libcrypto)
        #endif
        #expect(DigestEngine.available.contains(.software))
    }

    @Test func checksumsParseCompareAndPrint() {
        let hex = String(repeating: "ab", count: 32)
        #expect(Checksum("SHA256:" + hex.uppercased()) == .sha256(hex.uppercased()))
        #expect(Checksum("sha256:" + hex)?.matches(.sha256(hex.uppercased())) == true)
        #expect(Checksum("sha256:" + hex.dropLast()) == nil)
        #expect(Checksum("sha512:" + hex) == nil)
        #expect(Checksum("md5:" + hex) == nil)
        #expect(Checksum.sha256("xyz").isWellFormed == false)
        #expect(Checksum.sha512(hex + hex).description == "sha512:" + hex + hex)
        #expect(Checksum(.sha256, digest: [0, 1, 0xff] + [UInt8](repeating: 0, count: 29)).hex.hasPrefix("0001ff00"))
    }
}
