#if os(Linux)
    import Foundation
    import Glibc

    /// A helper program or server a test needs could not be set up.
    public struct SetupFailure: Error, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    /// Ports on 127.0.0.1 for the servers the tests start as programs of their own.
    public enum LoopbackPorts {
        /// A port free when asked (another connection or server may take it before the program binds it: start the
        /// program, check it listens there with ``SpawnedProcess/listens(on:)``, and try another port if it does not).
        public static func free() throws -> UInt16 {
            let (fd, port) = try held()
            close(fd)
            return port
        }

        /// A port bound on 127.0.0.1 and never listened on, with its descriptor (close it when done): a connection to
        /// it is refused, and no other server can take the port while it is held.
        public static func held() throws -> (fd: Int32, port: UInt16) {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
                }
            }
            guard fd >= 0, bound else {
                if fd >= 0 { close(fd) }
                throw SetupFailure("no port to hold on 127.0.0.1")
            }
            return (fd, UInt16(bigEndian: address.sin_port))
        }
    }
#endif
