#if os(Linux)
    import Foundation
    import TestSupport
    import Testing

    @testable import NetworkQueue

    /// CurlTransport's own body decoding: every coding it offers decodes fed whole or byte by byte, and a
    /// stream that stops early or carries garbage is caught.
    @Suite(.admitted, .timeLimit(.minutes(10))) struct ContentDecoderTests {
        // Computed: a static Data kept by the test binary reads as a leak to LeakSanitizer.
        static var text: Data { Data("hello, hello, hello world".utf8) }
        static let encoded: [(coding: String, hex: String)] = [
            ("gzip", "1f8b0800000000000203cb48cdc9c9d751c840a214caf38b72520096656dfd19000000"),
            ("x-gzip", "1f8b0800000000000203cb48cdc9c9d751c840a214caf38b72520096656dfd19000000"),
            ("deflate", "789ccb48cdc9c9d751c840a214caf38b7252007487091d"),
            ("deflate", "cb48cdc9c9d751c840a214caf38b725200"),
            ("br", "1b1800f88dd44ef9c3505465680dc2c2f6a61689a7123861d50201"),
        ]

        static func bytes(_ hex: String) -> [UInt8] {
            let digits = Array(hex.utf8)
            return stride(from: 0, to: digits.count, by: 2).map {
                UInt8(String(decoding: digits[$0..<($0 + 2)], as: UTF8.self), radix: 16)!
            }
        }

        /// Decodes `input` in pieces of `piece` bytes; nil when the decoder reports corruption.
        static func decode(_ coding: String, _ input: [UInt8], piece: Int) throws -> (output: Data, isComplete: Bool)? {
            guard let decoder = try ContentDecoder(contentEncoding: coding, library: .shared) else { return nil }
            var output = Data()
            var offset = 0
            while offset < input.count {
                let end = min(input.count, offset + piece)
                let ok = input[offset..<end].withUnsafeBytes { bytes in
                    decoder.decode(bytes) {
                        output.append(contentsOf: $0)
                        return true
                    }
                }
                if !ok { return nil }
                offset = end
            }
            return (output, decoder.isComplete)
        }

        @Test(arguments: 0..<5) func eachCodingDecodesWholeAndByteByByte(_ index: Int) throws {
            let (coding, hex) = Self.encoded[index]
            for piece in [1, 3, 1000] {
                let result = try #require(try Self.decode(coding, Self.bytes(hex), piece: piece))
                #expect(result.output == Self.text, "\(coding) in pieces of \(piece)")
                #expect(result.isComplete)
            }
        }

        @Test(arguments: 0..<5) func aStreamCutShortIsIncomplete(_ index: Int) throws {
            let (coding, hex) = Self.encoded[index]
            let input = Self.bytes(hex)
            let result = try #require(try Self.decode(coding, Array(input.dropLast(2)), piece: 1000))
            #expect(!result.isComplete, "\(coding)")
        }

        @Test func garbageAfterTheEndAndACorruptStreamAreRejected() throws {
            let gzip = Self.bytes(Self.encoded[0].hex)
            #expect(try Self.decode("gzip", gzip + [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], piece: 1000) == nil)
            #expect(try Self.decode("br", Self.bytes(Self.encoded[4].hex) + [0], piece: 1000) == nil)
            var corrupt = gzip
            corrupt[corrupt.count - 6] ^= 0xff
            #expect(try Self.decode("gzip", corrupt, piece: 1000) == nil)
        }

        @Test func twoGzipMembersAreOneBody() throws {
            let gzip = Self.bytes(Self.encoded[0].hex)
            let result = try #require(try Self.decode("gzip", gzip + gzip, piece: 7))
            #expect(result.output == Self.text + Self.text)
            #expect(result.isComplete)
        }

        @Test func codingsApplyInOrderAndUnknownOnesAreRefused() throws {
            #expect(try ContentDecoder(contentEncoding: "identity", library: .shared) == nil)
            #expect(throws: ContentDecoder.Failure.self) {
                try ContentDecoder(contentEncoding: "zstd2", library: .shared)
            }
            #expect(throws: ContentDecoder.Failure.self) {
                try ContentDecoder(contentEncoding: "gzip, compress", library: .shared)
            }
        }

        @Test func acceptEncodingKeepsOnlyWhatCanBeDecoded() {
            let library = DecoderLibrary.shared
            #expect(library.acceptEncoding("gzip, deflate, br, zstd") == "gzip, deflate, br")
            #expect(library.acceptEncoding("zstd;q=1, *") == "identity")
            #expect(library.acceptEncoding("GZIP;q=0.5") == "GZIP;q=0.5")
        }
    }
#endif
