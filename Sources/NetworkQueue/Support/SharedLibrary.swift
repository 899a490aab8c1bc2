#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Opening a system library at run time (libcurl, zlib, brotli, libcrypto): no header, package or link
/// flag at build time.
enum SharedLibrary {
    /// The first of `names` that `dlopen` finds, or nil (`dlerror()` then says why the last one failed).
    static func open(_ names: [String]) -> UnsafeMutableRawPointer? {
        for name in names { if let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) { return handle } }
        return nil
    }
}
