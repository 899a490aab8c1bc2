#if os(Linux)
    import Foundation
    import TestSupport
    import Testing

    @testable import NetworkQueue

    /// The CA bundle reaches libcurl as a path to an in-memory file, not as a blob copied into every transfer.
    @Suite(.admitted, .timeLimit(.minutes(10))) struct InMemoryPEMTests {
        @Test func theBundleIsAnInMemoryFileReadableByPath() throws {
            let pem = Data("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".utf8)
            let certificates = InMemoryPEM(pem: pem)
            let path = try #require(certificates.path)
            #expect(path.hasPrefix("/proc/self/fd/"))
            #expect(FileManager.default.contents(atPath: path) == pem)
            // Read twice (libcurl opens it for each new connection): each open starts at the beginning.
            #expect(FileManager.default.contents(atPath: path) == pem)
            #expect(Data(certificates.pem) == pem)
        }
    }
#endif
