import Foundation

#if canImport(CommonCrypto)
    import CommonCrypto
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// A running hash over a body that arrives in pieces.
protocol StreamingDigest: AnyObject {
    func update(_ bytes: UnsafeRawBufferPointer)
    /// The digest; call once, after the last ``update(_:)``.
    func finalize() -> [UInt8]
}

/// Where hashes are computed: OpenSSL's libcrypto on Linux (opened at run time, as libcurl is; the
/// libcurl here links it), CommonCrypto on Apple platforms, and plain Swift (``SoftwareSHA2``) only where
/// neither is at hand.
enum DigestEngine: String, CaseIterable {
    case libcrypto
    case commonCrypto
    case software

    /// The best engine of this process.
    static let preferred: DigestEngine = available.first ?? .software

    /// The engines that work in this process, best first.
    static var available: [DigestEngine] {
        allCases.filter { engine in
            switch engine {
            case .libcrypto: Libcrypto.shared != nil
            case .commonCrypto:
                #if canImport(CommonCrypto)
                    true
                #else
                    false
                #endif
            case .software: true
            }
        }
    }

    /// A new running hash of `algorithm`.
    func make(_ algorithm: Checksum.Algorithm) -> any StreamingDigest {
        switch self {
        case .libcrypto:
            if let library = Libcrypto.shared, let digest = LibcryptoDigest(algorithm, library: library) {
                return digest
            }
        case .commonCrypto:
            #if canImport(CommonCrypto)
                return CommonCryptoDigest(algorithm)
            #endif
        case .software:
            break
        }
        return SoftwareDigest(algorithm)
    }
}

/// ``SoftwareSHA2`` as a ``StreamingDigest``.
final class SoftwareDigest: StreamingDigest {
    private var hash: SoftwareSHA2

    init(_ algorithm: Checksum.Algorithm) { hash = SoftwareSHA2(algorithm == .sha256 ? .sha256 : .sha512) }

    func update(_ bytes: UnsafeRawBufferPointer) { hash.update(bytes) }
    func finalize() -> [UInt8] { hash.finalize() }
}

/// libcrypto's EVP digest interface, opened at run time: `libcrypto.so.3` or `libcrypto.so.1.1`.
///
/// Immutable once loaded (function pointers only), hence `@unchecked Sendable`.
final class Libcrypto: @unchecked Sendable {
    typealias NewContext = @convention(c) () -> OpaquePointer?
    typealias FreeContext = @convention(c) (OpaquePointer?) -> Void
    typealias Method = @convention(c) () -> OpaquePointer?
    typealias Initialize = @convention(c) (OpaquePointer?, OpaquePointer?, OpaquePointer?) -> Int32
    typealias Update = @convention(c) (OpaquePointer?, UnsafeRawPointer?, Int) -> Int32
    typealias Final =
        @convention(c) (OpaquePointer?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt32>?) -> Int32

    let newContext: NewContext
    let freeContext: FreeContext
    let sha256: Method
    let sha512: Method
    let initialize: Initialize
    let update: Update
    let final: Final

    /// Loaded on first use; nil where there is no libcrypto (or not on Linux).
    static let shared: Libcrypto? = Libcrypto()

    private init?() {
        #if os(Linux)
            guard let library = SharedLibrary.open(["libcrypto.so.3", "libcrypto.so.1.1", "libcrypto.so"]),
                let newContext = dlsym(library, "EVP_MD_CTX_new"),
                let freeContext = dlsym(library, "EVP_MD_CTX_free"), let sha256 = dlsym(library, "EVP_sha256"),
                let sha512 = dlsym(library, "EVP_sha512"), let initialize = dlsym(library, "EVP_DigestInit_ex"),
                let update = dlsym(library, "EVP_DigestUpdate"), let final = dlsym(library, "EVP_DigestFinal_ex")
            else { return nil }
            self.newContext = unsafeBitCast(newContext, to: NewContext.self)
            self.freeContext = unsafeBitCast(freeContext, to: FreeContext.self)
            self.sha256 = unsafeBitCast(sha256, to: Method.self)
            self.sha512 = unsafeBitCast(sha512, to: Method.self)
            self.initialize = unsafeBitCast(initialize, to: Initialize.self)
            self.update = unsafeBitCast(update, to: Update.self)
            self.final = unsafeBitCast(final, to: Final.self)
        #else
            return nil
        #endif
    }
}

/// A libcrypto EVP context.
final class LibcryptoDigest: StreamingDigest {
    private let library: Libcrypto
    private let context: OpaquePointer
    private let length: Int

    init?(_ algorithm: Checksum.Algorithm, library: Libcrypto) {
        guard let context = library.newContext() else { return nil }
        let method = algorithm == .sha256 ? library.sha256() : library.sha512()
        guard library.initialize(context, method, nil) == 1 else {
            library.freeContext(context)
            return nil
        }
        self.library = library
        self.context = context
        length = algorithm.byteCount
    }

    deinit { library.freeContext(context) }

    func update(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        _ = library.update(context, bytes.baseAddress, bytes.count)
    }

    func finalize() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 64)
        var written: UInt32 = 0
        _ = library.final(context, &digest, &written)
        return Array(digest.prefix(length))
    }
}

#if canImport(CommonCrypto)
    /// CommonCrypto's SHA-2 (Apple platforms).
    final class CommonCryptoDigest: StreamingDigest {
        private var context256 = CC_SHA256_CTX()
        private var context512 = CC_SHA512_CTX()
        private let algorithm: Checksum.Algorithm

        init(_ algorithm: Checksum.Algorithm) {
            self.algorithm = algorithm
            if algorithm == .sha256 { CC_SHA256_Init(&context256) } else { CC_SHA512_Init(&context512) }
        }

        func update(_ bytes: UnsafeRawBufferPointer) {
            // CC_LONG is 32 bits: feed at most 1 GiB at a time.
            var offset = 0
            while offset < bytes.count {
                let count = min(1 << 30, bytes.count - offset)
                let base = bytes.baseAddress! + offset
                if algorithm == .sha256 {
                    CC_SHA256_Update(&context256, base, CC_LONG(count))
                } else {
                    CC_SHA512_Update(&context512, base, CC_LONG(count))
                }
                offset += count
            }
        }

        func finalize() -> [UInt8] {
            var digest = [UInt8](repeating: 0, count: algorithm.byteCount)
            if algorithm == .sha256 {
                CC_SHA256_Final(&digest, &context256)
            } else {
                CC_SHA512_Final(&digest, &context512)
            }
            return digest
        }
    }
#endif
