#if os(Linux)
    import CurlShim
    import Foundation
    import Glibc

    /// A PEM file the transport hands libcurl, read once and kept as an in-memory file that libcurl opens by path
    /// (`/proc/self/fd/<n>`): the CA bundle (the system's and ``CurlTransport/Options/additionalTrustedCertificates``),
    /// a client certificate and its key (``CurlTransport/Options/clientCertificate``: a pipe or a file the user
    /// removes after the start still serves every connection). For the bundle: libcurl copies a blob given with
    /// `CURLOPT_CAINFO_BLOB` into every transfer's connection settings and compares it when it looks for a
    /// connection to reuse (about 290k instructions a request for a 214 KB bundle), where a path costs a short
    /// string, and libcurl 7.87 and later also keep the parsed store for the next connections. Where no
    /// in-memory file can be made (no `memfd_create`, no `/proc`), the blob is used.
    final class InMemoryPEM: Sendable {
        /// The bundle's bytes. An array, not `Data`: a `Data`'s storage is held through an enum whose tag bits sit
        /// in the reference, which LeakSanitizer cannot read, so a transport still alive at exit looked as if its
        /// bundle leaked (the ASan run of CI).
        let pem: [UInt8]
        /// The path libcurl opens, or nil: use ``pem`` as a blob.
        let path: String?
        private let descriptor: Int32

        /// `name` is the in-memory file's name, as `/proc/<pid>/fd` shows it.
        init(pem: Data, name: String = "nq-ca-bundle") {
            self.pem = Array(pem)
            let descriptor = pem.withUnsafeBytes { nq_memory_file(name, $0.baseAddress, UInt($0.count)) }
            let path = "/proc/self/fd/\(descriptor)"
            if descriptor >= 0, access(path, R_OK) == 0 {
                self.descriptor = descriptor
                self.path = path
            } else {
                if descriptor >= 0 { close(descriptor) }
                self.descriptor = -1
                self.path = nil
            }
        }

        deinit { if descriptor >= 0 { close(descriptor) } }
    }
#endif
