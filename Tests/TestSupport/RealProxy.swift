#if os(Linux)
    import Foundation
    import Glibc
    import NetworkQueue

    /// A real proxy from Debian's packages, started on a free loopback port for one test and stopped after it:
    /// tinyproxy (HTTP: forwarding and `CONNECT`, Basic authentication) or microsocks (SOCKS5, user and password).
    ///
    /// A test of a program that is not installed is skipped, with the package to install in its reason; CI
    /// installs both and sets `NQ_REQUIRE_REAL_SERVERS=1`, which makes a missing program a failure instead.
    public final class RealProxy: LocalServer, @unchecked Sendable {
        public enum Program: String, Sendable {
            case tinyproxy
            case microsocks
        }

        /// The program's path, if it is installed.
        public static func path(of program: Program) -> String? {
            ["/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"].map { "\($0)/\(program.rawValue)" }
                .first { FileManager.default.isExecutableFile(atPath: $0) }
        }

        /// Whether the tests of `program` run: it is installed, or CI requires it (they then fail, saying why).
        public static func runs(_ program: Program) -> Bool {
            path(of: program) != nil || TestEnvironment.integer("NQ_REQUIRE_REAL_SERVERS", default: 0) != 0
        }

        public let program: Program
        public let port: UInt16
        private let directory: URL
        private let process: SpawnedProcess
        private let logFile: URL

        /// What the proxy has logged so far (tinyproxy: each request line; microsocks: each target it connected).
        public var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

        /// `host:port` for a ``Proxy``.
        public func proxy(_ kind: Proxy.Kind, credentials: Proxy.Credentials? = nil, bypass: [String] = []) -> Proxy {
            Proxy(kind, host: "127.0.0.1", port: Int(port), credentials: credentials, bypass: bypass)
        }

        private init(_ program: Program, port: UInt16, directory: URL, process: SpawnedProcess, logFile: URL) {
            self.program = program
            self.port = port
            self.directory = directory
            self.process = process
            self.logFile = logFile
        }

        /// Starts `program` on a free loopback port, asking for `credentials` when given.
        private static func make(_ program: Program, credentials: Proxy.Credentials?) throws -> RealProxy {
            guard let path = path(of: program) else {
                throw SetupFailure("this test needs \(program.rawValue) (apt-get install \(program.rawValue))")
            }
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "nq-proxy-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let logFile = directory.appendingPathComponent("proxy.log")
            return try SpawnedProcess.listening(program.rawValue) {
                let port = try LoopbackPorts.free()
                let process: SpawnedProcess
                switch program {
                case .tinyproxy:
                    var config = """
                        Port \(port)
                        Listen 127.0.0.1
                        Allow 127.0.0.1
                        Timeout 30
                        MaxClients 200
                        LogFile "\(logFile.path)"
                        LogLevel Connect

                        """
                    if let credentials { config += "BasicAuth \(credentials.user) \(credentials.password)\n" }
                    let configFile = directory.appendingPathComponent("tinyproxy.conf")
                    try config.write(to: configFile, atomically: true, encoding: .utf8)
                    process = try SpawnedProcess(path, ["-d", "-c", configFile.path], in: directory)
                case .microsocks:
                    var arguments = ["-i", "127.0.0.1", "-p", "\(port)"]
                    if let credentials { arguments += ["-u", credentials.user, "-P", credentials.password] }
                    process = try SpawnedProcess(path, arguments, in: directory, errors: logFile)
                }
                let proxy = RealProxy(program, port: port, directory: directory, process: process, logFile: logFile)
                return (process, [port], proxy)
            }
        }

        /// Runs `body` with a started proxy, and stops the proxy however `body` ends.
        public static func with(
            _ program: Program, credentials: Proxy.Credentials? = nil, _ body: (RealProxy) async throws -> Void
        ) async throws {
            try await with({ try make(program, credentials: credentials) }, body)
        }

        /// Kills the proxy, reaps it and removes its folder.
        public func stop() async {
            await process.stop()
            try? FileManager.default.removeItem(at: directory)
        }
    }
#endif
