#if os(Linux)
    import CurlShim
    import Foundation
    import Glibc

    /// zlib (`libz.so.1`, which libcurl itself links) and, when present, brotli's decoder
    /// (`libbrotlidec.so.1`), opened at run time like libcurl: no header, no -dev package.
    ///
    /// Immutable once loaded (function pointers only), hence `@unchecked Sendable`.
    final class DecoderLibrary: @unchecked Sendable {
        typealias Inflate = @convention(c) (UnsafeMutablePointer<nq_z_stream>?, Int32) -> Int32
        typealias InflateInit =
            @convention(c) (UnsafeMutablePointer<nq_z_stream>?, Int32, UnsafePointer<CChar>?, Int32) -> Int32
        typealias BrotliCreate =
            @convention(c) (UnsafeRawPointer?, UnsafeRawPointer?, UnsafeRawPointer?) -> OpaquePointer?
        typealias BrotliDecompress =
            @convention(c) (
                OpaquePointer?, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
                UnsafeMutablePointer<Int>?, UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
                UnsafeMutablePointer<Int>?
            ) -> Int32
        typealias BrotliDestroy = @convention(c) (OpaquePointer?) -> Void

        struct Zlib {
            let inflateInit: InflateInit
            let inflate: Inflate
            let inflateEnd: @convention(c) (UnsafeMutablePointer<nq_z_stream>?) -> Int32
            let inflateReset: @convention(c) (UnsafeMutablePointer<nq_z_stream>?) -> Int32
            let version: UnsafePointer<CChar>
        }

        struct Brotli {
            let create: BrotliCreate
            let decompress: BrotliDecompress
            let destroy: BrotliDestroy
        }

        let zlib: Zlib?
        let brotli: Brotli?

        /// Loaded on first use; the same answer for the life of the process.
        static let shared = DecoderLibrary()

        private init() {
            zlib = SharedLibrary.open(["libz.so.1", "libz.so"]).flatMap { handle in
                guard let initialize = dlsym(handle, "inflateInit2_"), let inflate = dlsym(handle, "inflate"),
                    let end = dlsym(handle, "inflateEnd"), let reset = dlsym(handle, "inflateReset"),
                    let versionFunction = dlsym(handle, "zlibVersion"),
                    let version = unsafeBitCast(
                        versionFunction, to: (@convention(c) () -> UnsafePointer<CChar>?).self)()
                else { return nil }
                return Zlib(
                    inflateInit: unsafeBitCast(initialize, to: InflateInit.self),
                    inflate: unsafeBitCast(inflate, to: Inflate.self),
                    inflateEnd: unsafeBitCast(
                        end, to: (@convention(c) (UnsafeMutablePointer<nq_z_stream>?) -> Int32).self),
                    inflateReset: unsafeBitCast(
                        reset, to: (@convention(c) (UnsafeMutablePointer<nq_z_stream>?) -> Int32).self),
                    version: version)
            }
            brotli = SharedLibrary.open(["libbrotlidec.so.1", "libbrotlidec.so"]).flatMap { handle in
                guard let create = dlsym(handle, "BrotliDecoderCreateInstance"),
                    let decompress = dlsym(handle, "BrotliDecoderDecompressStream"),
                    let destroy = dlsym(handle, "BrotliDecoderDestroyInstance")
                else { return nil }
                return Brotli(
                    create: unsafeBitCast(create, to: BrotliCreate.self),
                    decompress: unsafeBitCast(decompress, to: BrotliDecompress.self),
                    destroy: unsafeBitCast(destroy, to: BrotliDestroy.self))
            }
        }

        /// The codings this process can decode, lowercased.
        var supportedCodings: Set<String> {
            var codings: Set<String> = ["identity"]
            if zlib != nil { codings.formUnion(["gzip", "x-gzip", "deflate"]) }
            if brotli != nil { codings.insert("br") }
            return codings
        }

        /// The caller's `Accept-Encoding` without the codings that cannot be decoded here (and without `*`,
        /// which would let the server choose one); "identity" when nothing is left.
        func acceptEncoding(_ value: String) -> String {
            let supported = supportedCodings
            let kept = value.split(separator: ",").filter { element in
                let coding = element.split(separator: ";").first.map {
                    $0.trimmingCharacters(in: .whitespaces).lowercased()
                }
                return coding.map(supported.contains) ?? false
            }
            return kept.isEmpty
                ? "identity" : kept.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")
        }
    }

    /// Decodes a response body through its `Content-Encoding` codings, and knows whether every encoded
    /// stream ended: a stream cut short is an error a transport must report, never a shorter success.
    final class ContentDecoder {
        /// Why a body cannot be decoded.
        struct Failure: Error {}

        private let stages: [DecodingStage]
        private(set) var receivedInput = false

        /// A decoder for `contentEncoding` (codings in the order applied), or nil when there is nothing to
        /// decode. Throws when a coding is unknown, its library is missing, or there are more than
        /// ``FramingRules/maximumCodings``.
        convenience init?(contentEncoding: String, library: DecoderLibrary) throws(Failure) {
            try self.init(contentCodings: FramingRules.codings(contentEncoding), transferCodings: [], library: library)
        }

        /// A decoder for a body whose content codings and then transfer codings (`chunked` left to libcurl) were
        /// applied in these orders, or nil when there is nothing to decode. `none` and `identity` mean no
        /// coding. Throws when a coding is unknown, its library is missing, or either list is longer than
        /// ``FramingRules/maximumCodings`` (each coding is a stage with buffers of its own).
        init?(contentCodings: [String], transferCodings: [String], library: DecoderLibrary) throws(Failure) {
            let content = contentCodings.filter { $0 != "identity" && $0 != "none" }
            guard content.count <= FramingRules.maximumCodings, transferCodings.count <= FramingRules.maximumCodings
            else {
                throw Failure()
            }
            let codings = content + transferCodings
            guard !codings.isEmpty else { return nil }
            var stages: [DecodingStage] = []
            for coding in codings.reversed() {
                switch coding {
                case "gzip", "x-gzip":
                    guard let zlib = library.zlib else { throw Failure() }
                    stages.append(InflateStage(zlib: zlib, isGzip: true))
                case "deflate":
                    guard let zlib = library.zlib else { throw Failure() }
                    stages.append(InflateStage(zlib: zlib, isGzip: false))
                case "br":
                    guard let brotli = library.brotli, let stage = BrotliStage(brotli: brotli) else { throw Failure() }
                    stages.append(stage)
                default:
                    throw Failure()
                }
            }
            self.stages = stages
        }

        /// True when every stream that began also ended (or no body byte arrived at all).
        var isComplete: Bool { !receivedInput || stages.allSatisfy(\.hasEnded) }

        /// Decodes `bytes`, handing decoded pieces to `output` (which returns false to stop); false when the
        /// body is corrupt or `output` stopped.
        func decode(_ bytes: UnsafeRawBufferPointer, output: (UnsafeRawBufferPointer) -> Bool) -> Bool {
            guard !bytes.isEmpty else { return true }
            receivedInput = true
            return feed(stage: 0, bytes, output: output)
        }

        /// Each stage hands its output to the next one: the nesting is as deep as the stages, which the
        /// initializer caps (2 × ``FramingRules/maximumCodings``), whatever the server lists.
        private func feed(stage index: Int, _ bytes: UnsafeRawBufferPointer, output: (UnsafeRawBufferPointer) -> Bool)
            -> Bool
        {
            guard index < stages.count else { return output(bytes) }
            return stages[index].feed(bytes) { self.feed(stage: index + 1, $0, output: output) }
        }
    }

    /// One coding of a body.
    protocol DecodingStage: AnyObject {
        /// Whether the encoded stream reached its proper end.
        var hasEnded: Bool { get }
        /// Decodes `input`; false when it is corrupt or `output` returned false.
        func feed(_ input: UnsafeRawBufferPointer, output: (UnsafeRawBufferPointer) -> Bool) -> Bool
    }

    /// gzip (members may follow one another) or deflate (zlib-wrapped, or raw as some servers send it).
    final class InflateStage: DecodingStage {
        private let zlib: DecoderLibrary.Zlib
        private let isGzip: Bool
        /// zlib keeps a pointer back to its stream: it must not move, hence its own allocation.
        private let stream = UnsafeMutablePointer<nq_z_stream>.allocate(capacity: 1)
        private let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: InflateStage.bufferSize)
        private var isInitialized = false
        /// The first bytes of a deflate body, until there are two to tell its framing by.
        private var lead: [UInt8] = []
        private(set) var hasEnded = false
        private static let bufferSize = 64 << 10

        init(zlib: DecoderLibrary.Zlib, isGzip: Bool) {
            self.zlib = zlib
            self.isGzip = isGzip
            stream.initialize(to: nq_z_stream())
        }

        deinit {
            if isInitialized { _ = zlib.inflateEnd(stream) }
            stream.deallocate()
            buffer.deallocate()
        }

        func feed(_ input: UnsafeRawBufferPointer, output: (UnsafeRawBufferPointer) -> Bool) -> Bool {
            guard !input.isEmpty else { return true }
            if !isInitialized {
                // Deflate's framing is told by its first two bytes: zlib's header (RFC 1950) is a multiple of 31
                // with method 8; anything else is raw deflate, as some servers send it.
                lead += input
                guard isGzip || lead.count >= 2 else { return true }
                let isZlib = !isGzip && lead[0] & 0x0f == 8 && (Int(lead[0]) << 8 | Int(lead[1])) % 31 == 0
                let bits: Int32 = isGzip ? 16 + 15 : (isZlib ? 15 : -15)
                guard zlib.inflateInit(stream, bits, zlib.version, Int32(MemoryLayout<nq_z_stream>.size)) == 0 else {
                    return false
                }
                isInitialized = true
                let bytes = lead
                lead = []
                return bytes.withUnsafeBytes { inflate($0, output: output) }
            }
            return inflate(input, output: output)
        }

        private func inflate(_ input: UnsafeRawBufferPointer, output: (UnsafeRawBufferPointer) -> Bool) -> Bool {
            guard let base = input.baseAddress?.assumingMemoryBound(to: UInt8.self), !input.isEmpty else { return true }
            if hasEnded {
                // Bytes after the end: another gzip member, or garbage after a deflate stream.
                guard isGzip, zlib.inflateReset(stream) == 0 else { return false }
                hasEnded = false
            }
            stream.pointee.next_in = base
            stream.pointee.avail_in = UInt32(input.count)
            while true {
                stream.pointee.next_out = buffer
                stream.pointee.avail_out = UInt32(Self.bufferSize)
                let result = zlib.inflate(stream, 0)
                let produced = Self.bufferSize - Int(stream.pointee.avail_out)
                if produced > 0, !output(UnsafeRawBufferPointer(start: buffer, count: produced)) { return false }
                switch result {
                case 1:  // Z_STREAM_END
                    hasEnded = true
                    guard stream.pointee.avail_in > 0 else { return true }
                    guard isGzip, zlib.inflateReset(stream) == 0 else { return false }
                    hasEnded = false
                case 0, -5:  // Z_OK, Z_BUF_ERROR (no progress possible: more input needed)
                    if stream.pointee.avail_in == 0 && stream.pointee.avail_out > 0 { return true }
                    if result == -5 && produced == 0 { return stream.pointee.avail_in == 0 }
                default:
                    return false
                }
            }
        }
    }

    /// brotli (RFC 7932).
    final class BrotliStage: DecodingStage {
        private let brotli: DecoderLibrary.Brotli
        private let state: OpaquePointer
        private let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: BrotliStage.bufferSize)
        private(set) var hasEnded = false
        private static let bufferSize = 64 << 10

        init?(brotli: DecoderLibrary.Brotli) {
            guard let state = brotli.create(nil, nil, nil) else {
                buffer.deallocate()
                return nil
            }
            self.brotli = brotli
            self.state = state
        }

        deinit {
            brotli.destroy(state)
            buffer.deallocate()
        }

        func feed(_ input: UnsafeRawBufferPointer, output: (UnsafeRawBufferPointer) -> Bool) -> Bool {
            guard let base = input.baseAddress?.assumingMemoryBound(to: UInt8.self), !input.isEmpty else { return true }
            // Anything after the end of the stream is garbage.
            guard !hasEnded else { return false }
            var available = input.count
            var next: UnsafePointer<UInt8>? = base
            while true {
                var space = Self.bufferSize
                var out: UnsafeMutablePointer<UInt8>? = buffer
                let result = brotli.decompress(state, &available, &next, &space, &out, nil)
                let produced = Self.bufferSize - space
                if produced > 0, !output(UnsafeRawBufferPointer(start: buffer, count: produced)) { return false }
                switch result {
                case 1:  // SUCCESS
                    hasEnded = true
                    return available == 0
                case 2:  // NEEDS_MORE_INPUT
                    return true
                case 3:  // NEEDS_MORE_OUTPUT
                    continue
                default:
                    return false
                }
            }
        }
    }
#endif
