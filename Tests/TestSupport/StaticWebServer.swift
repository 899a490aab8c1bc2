#if os(Linux)
    import Foundation
    import Glibc
    import Testing

    /// A real web server from Debian's packages, serving one folder over plain HTTP on a free loopback port for one
    /// test, each connection capped at a rate: nginx, Apache httpd or lighttpd. Three programs that name the same file
    /// by three formats of entity tag, and by the same `Last-Modified` (issue 50: mirrors on other server software).
    ///
    /// A test of a program that is not installed is skipped, with the package in its reason; CI installs them and
    /// sets `NQ_REQUIRE_REAL_SERVERS=1`, which makes a missing program a failure instead.
    public final class StaticWebServer: LocalServer, @unchecked Sendable {
        public enum Program: String, CaseIterable, Sendable {
            case nginx
            case apache2
            case lighttpd

            /// Debian's package of the program.
            public var package: String { rawValue }
        }

        /// The program's path, if it is installed.
        public static func path(of program: Program) -> String? {
            ["/usr/sbin", "/usr/bin", "/usr/local/sbin"].map { "\($0)/\(program.rawValue)" }
                .first { FileManager.default.isExecutableFile(atPath: $0) }
        }

        /// Whether tests needing every program run: each is installed, or CI requires them.
        public static var runsAll: Bool {
            Program.allCases.allSatisfy { path(of: $0) != nil }
                || TestEnvironment.integer("NQ_REQUIRE_REAL_SERVERS", default: 0) != 0
        }

        /// HTTPS for nginx: its certificates, made with ``TestCertificates`` in a folder of its own.
        public struct TLS: Sendable {
            /// The folder holding `ca.pem`, `server.pem` and `server.key` (``TestCertificates/make(in:names:days:)``).
            public let certificates: URL
            /// True: a client certificate signed by the folder's CA is required (nginx's `ssl_verify_client on`).
            public let requiresClientCertificate: Bool

            public init(certificates: URL, requiresClientCertificate: Bool = false) {
                self.certificates = certificates
                self.requiresClientCertificate = requiresClientCertificate
            }
        }

        public let program: Program
        public let port: UInt16
        /// "https" when started with ``TLS``.
        public let scheme: String
        private let directory: URL
        private let process: SpawnedProcess

        private init(_ program: Program, port: UInt16, scheme: String, directory: URL, process: SpawnedProcess) {
            self.program = program
            self.scheme = scheme
            self.port = port
            self.directory = directory
            self.process = process
        }

        /// `http://127.0.0.1:port/path` (`https` with ``TLS``).
        public func url(_ path: String) -> URL { URL(string: "\(scheme)://127.0.0.1:\(port)\(path)")! }

        /// The configuration of `program` serving `root` on `port`, each response at `rate` bytes per second
        /// (rounded to KiB for Apache and lighttpd), its files and logs in `directory`.
        private static func config(
            _ program: Program, root: String, port: UInt16, rate: Int, directory: String, logsAccess: Bool, tls: TLS?
        ) -> String {
            switch program {
            case .nginx:
                let secure =
                    tls.map { tls in
                        let folder = tls.certificates.path
                        return "ssl; ssl_certificate \(folder)/server.pem; ssl_certificate_key \(folder)/server.key;"
                            + (tls.requiresClientCertificate
                                ? " ssl_client_certificate \(folder)/ca.pem; ssl_verify_client on;" : "")
                    } ?? ";"
                return """
                    daemon off; master_process on; worker_processes 1;
                    pid \(directory)/server.pid; error_log \(directory)/error.log warn;
                    events { worker_connections 256; }
                    http {
                        log_format requests '$request_method $uri $status "$http_if_none_match" "$http_if_modified_since"';
                        access_log \(logsAccess ? "\(directory)/access.log requests" : "off");
                        client_body_temp_path \(directory)/tmp; proxy_temp_path \(directory)/tmp;
                        fastcgi_temp_path \(directory)/tmp; uwsgi_temp_path \(directory)/tmp; scgi_temp_path \(directory)/tmp;
                        server { listen 127.0.0.1:\(port) \(secure) root \(root); limit_rate \(rate); }
                    }

                    """
            case .apache2:
                // Apache drops root for www-data once it listens: the folder is made readable to it.
                let modules = "/usr/lib/apache2/modules"
                return """
                    ServerRoot "\(directory)"
                    ServerName 127.0.0.1
                    Listen 127.0.0.1:\(port)
                    LoadModule mpm_event_module \(modules)/mod_mpm_event.so
                    LoadModule authz_core_module \(modules)/mod_authz_core.so
                    LoadModule env_module \(modules)/mod_env.so
                    LoadModule ratelimit_module \(modules)/mod_ratelimit.so
                    User www-data
                    Group www-data
                    PidFile \(directory)/server.pid
                    ErrorLog \(directory)/error.log
                    DocumentRoot "\(root)"
                    <Directory "\(root)">
                        Require all granted
                        SetOutputFilter RATE_LIMIT
                        SetEnv rate-limit \(max(1, rate / 1024))
                    </Directory>

                    """
            case .lighttpd:
                // Without a type for every file, lighttpd sends neither ETag nor Last-Modified.
                return """
                    server.document-root = "\(root)"
                    server.bind = "127.0.0.1"
                    server.port = \(port)
                    server.errorlog = "\(directory)/error.log"
                    mimetype.assign = ( "" => "application/octet-stream" )
                    connection.kbytes-per-second = \(max(1, rate / 1024))

                    """
            }
        }

        /// Starts `program` serving `root` (readable by every user), each connection at `rate` bytes per second.
        private static func make(
            _ program: Program, root: URL, rate: Int, logsAccess: Bool, tls: TLS?
        ) throws -> StaticWebServer {
            guard let path = path(of: program) else {
                throw SetupFailure("this test needs \(program.rawValue) (apt-get install \(program.package))")
            }
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nq-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            _ = chmod(directory.path, 0o755)
            try FileManager.default.createDirectory(
                at: directory.appendingPathComponent("tmp"), withIntermediateDirectories: true)
            do {
                return try SpawnedProcess.listening(program.rawValue, stopSignal: SIGTERM) {
                    let port = try LoopbackPorts.free()
                    let file = directory.appendingPathComponent("server.conf")
                    try config(
                        program, root: root.path, port: port, rate: rate, directory: directory.path,
                        logsAccess: logsAccess, tls: tls
                    )
                    .write(to: file, atomically: true, encoding: .utf8)
                    let arguments =
                        switch program {
                        case .nginx: ["-c", file.path, "-e", "\(directory.path)/startup.log"]
                        case .apache2: ["-f", file.path, "-DFOREGROUND"]
                        case .lighttpd: ["-D", "-f", file.path]
                        }
                    let process = try SpawnedProcess(path, arguments, in: directory)
                    return (
                        process, [port],
                        StaticWebServer(
                            program, port: port, scheme: tls == nil ? "http" : "https", directory: directory,
                            process: process)
                    )
                }
            } catch {
                let log = readText(of: directory.appendingPathComponent("error.log")) ?? ""
                try? FileManager.default.removeItem(at: directory)
                throw SetupFailure("\(program.rawValue): \(error): \(log.suffix(500))")
            }
        }

        /// Runs `body` with `program` started (over HTTPS with `tls`: nginx only), and stops it however `body` ends.
        public static func with(
            _ program: Program, root: URL, rate: Int, logsAccess: Bool = false, tls: TLS? = nil,
            _ body: (StaticWebServer) async throws -> Void
        ) async throws {
            precondition(tls == nil || program == .nginx, "StaticWebServer serves HTTPS with nginx only")
            try await with({ try make(program, root: root, rate: rate, logsAccess: logsAccess, tls: tls) }, body)
        }

        /// Gives the served file at `file` new bytes and a modification time `later` seconds from now: a new version,
        /// under another entity tag and `Last-Modified` (nginx's tag is made of the time and the size).
        public static func change(_ file: URL, to bytes: Data, later: TimeInterval = 1_000) throws {
            try bytes.write(to: file)
            try FileManager.default.setAttributes(
                [.modificationDate: Date().addingTimeInterval(later)], ofItemAtPath: file.path)
        }

        /// The requests served since the start, one line each, `METHOD /path STATUS "If-None-Match" "If-Modified-Since"`
        /// (`"-"` for a field not sent): nginx started with `logsAccess` only (the others log nothing here).
        public func accessLog() -> [String] {
            (readText(of: directory.appendingPathComponent("access.log")) ?? "").split(separator: "\n").map(String.init)
        }

        /// The `count` or more lines the access log has after its first `start` ones, once it has them. nginx writes a
        /// request's line after it sent the response, so a client may hear the last response of a batch before its line
        /// is there (seen once in a full run under `taskset -c 0`: 199 lines of 200).
        public func accessLog(
            after start: Int, awaiting count: Int, sourceLocation: SourceLocation = #_sourceLocation
        ) async -> [String] {
            await eventually(sourceLocation: sourceLocation) { accessLog().count >= start + count }
            return Array(accessLog().dropFirst(start))
        }

        /// Stops the server (SIGTERM: Apache's parent stops its children) and removes its folder.
        public func stop() async {
            await process.stop(SIGTERM)
            try? FileManager.default.removeItem(at: directory)
        }
    }
#endif
