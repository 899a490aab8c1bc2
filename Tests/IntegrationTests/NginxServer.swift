#if os(Linux)
    import Foundation
    import Glibc
    import TestSupport
    import Testing

    /// nginx from Debian's package on a free loopback port, with TLS (a test CA) and HTTP/2, for one test: its
    /// files, a `/slow/` copy of them sent at a set rate, `/reset` (a reset stream: nginx's 444), and a log line
    /// per request naming its connection.
    ///
    /// Skipped when nginx is missing, unless `NQ_REQUIRE_REAL_SERVERS=1` (CI) makes that a failure.
    final class NginxServer: LocalServer, @unchecked Sendable {
        /// One line of the request log.
        struct Served: Equatable {
            /// nginx's number of the connection the request came on.
            let connection: Int
            let proto: String
            let status: Int
            let uri: String
            let bytes: Int
            /// When the response ended and how long the request took, in seconds (nginx's clock).
            let endedAt: Double
            let duration: Double
        }

        static var path: String? {
            ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx"].first {
                FileManager.default.isExecutableFile(atPath: $0)
            }
        }

        /// Whether the nginx tests run: nginx is installed, or CI requires it.
        static var runs: Bool { path != nil || TestEnvironment.integer("NQ_REQUIRE_REAL_SERVERS", default: 0) != 0 }

        /// True when this machine has an IPv6 loopback (`::1` can be bound).
        static var hasIPv6Loopback: Bool {
            let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { return false }
            defer { close(fd) }
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_addr = in6addr_loopback
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0
                }
            }
        }

        /// nginx's stream module (Debian's libnginx-mod-stream), for a TLS front to another server.
        static let streamModule = "/usr/lib/nginx/modules/ngx_stream_module.so"

        /// Whether the TLS-front tests run: the stream module is installed, or CI requires it.
        static var runsTLSFront: Bool {
            FileManager.default.fileExists(atPath: streamModule)
                || TestEnvironment.integer("NQ_REQUIRE_REAL_SERVERS", default: 0) != 0
        }

        let directory: URL
        let port: UInt16
        /// The port of the TLS front (`tlsFront`), when asked for.
        let frontPort: UInt16?
        private let process: SpawnedProcess

        private init(directory: URL, port: UInt16, frontPort: UInt16?, process: SpawnedProcess) {
            self.directory = directory
            self.port = port
            self.frontPort = frontPort
            self.process = process
        }
        var caFile: URL { directory.appendingPathComponent("ca.pem") }

        /// `https://127.0.0.1:port/path` (or `[::1]` over IPv6).
        func url(_ path: String, ipv6: Bool = false) -> URL {
            URL(string: "https://\(ipv6 ? "[::1]" : "127.0.0.1"):\(port)\(path)")!
        }

        /// The requests served so far, in the order they ended.
        var served: [Served] {
            let text =
                (try? String(contentsOf: directory.appendingPathComponent("requests.log"), encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { line in
                let words = line.split(separator: " ").map(String.init)
                guard words.count == 7, let connection = Int(words[0]), let status = Int(words[2]),
                    let bytes = Int(words[4]), let endedAt = Double(words[5]), let duration = Double(words[6])
                else { return nil }
                return Served(
                    connection: connection, proto: words[1], status: status, uri: words[3], bytes: bytes,
                    endedAt: endedAt, duration: duration)
            }
        }

        /// The requests served, once at least `count` are logged (for at most 30 s): nginx writes a request's line
        /// after it sent the response, which its client may have read, and its test gone on, before.
        func served(atLeast count: Int) async -> [Served] {
            await eventually(within: 30) { served.count >= count }
            return served
        }

        /// Starts nginx serving `files` (name → bytes) over TLS and HTTP/2 on 127.0.0.1 (and `::1` when `ipv6`),
        /// at most `requestsPerConnection` requests on a connection (then a GOAWAY), `/slow/` at `slowRate` bytes
        /// per second. With `tlsFront`, nginx also ends TLS on another port and passes the bytes on to `tlsFront`
        /// (an HTTPS proxy made of a plain one). With `upstream`, every other path is passed on to that loopback port
        /// (HTTP/2 over TLS in front of a loopback server).
        private static func make(
            files: [String: Data], requestsPerConnection: Int, slowRate: Int, ipv6: Bool, tlsFront: UInt16?,
            upstream: UInt16?
        ) throws -> NginxServer {
            guard let nginx = Self.path else {
                throw TestFailure("this test needs nginx (apt-get install nginx)")
            }
            if tlsFront != nil, !FileManager.default.fileExists(atPath: Self.streamModule) {
                throw TestFailure("this test needs nginx's stream module (apt-get install libnginx-mod-stream)")
            }
            let directory = try temporaryDirectory()
            _ = try TestCertificates.make(in: directory, names: "IP:127.0.0.1,IP:::1", days: 2)
            let root = directory.appendingPathComponent("www")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            for (name, bytes) in files { try bytes.write(to: root.appendingPathComponent(name)) }
            // Readable by nginx's workers, which drop root for nobody.
            _ = chmod(directory.path, 0o755)
            let (path, temporary) = (directory.path, directory.appendingPathComponent("tmp").path)
            // Everything else passed on to `upstream` as it comes (no buffering: its stalls, rates and drops reach
            // the client as they happen).
            let upstreamLocation =
                upstream.map {
                    "location / { proxy_pass http://127.0.0.1:\($0); proxy_buffering off; proxy_request_buffering off; "
                        + "proxy_http_version 1.1; proxy_set_header Connection \"\"; }"
                } ?? ""
            func config(port: UInt16, front: UInt16?) -> String {
                var stream = ""
                if let tlsFront, let front {
                    stream = """
                        stream {
                            server {
                                listen 127.0.0.1:\(front) ssl;
                                ssl_certificate \(path)/server.pem;
                                ssl_certificate_key \(path)/server.key;
                                proxy_pass 127.0.0.1:\(tlsFront);
                            }
                        }
                        """
                }
                return """
                    \(tlsFront == nil ? "" : "load_module \(Self.streamModule);")
                    daemon off;
                    master_process on;
                    worker_processes 1;
                    pid \(path)/nginx.pid;
                    error_log \(path)/error.log notice;
                    events { worker_connections 512; }
                    http {
                        access_log off;
                        log_format served '$connection $server_protocol $status $request_uri $body_bytes_sent $msec $request_time';
                        client_body_temp_path \(temporary);
                        proxy_temp_path \(temporary);
                        fastcgi_temp_path \(temporary);
                        uwsgi_temp_path \(temporary);
                        scgi_temp_path \(temporary);
                        server {
                            listen 127.0.0.1:\(port) ssl http2;
                            \(ipv6 ? "listen [::1]:\(port) ssl http2;" : "")
                            ssl_certificate \(path)/server.pem;
                            ssl_certificate_key \(path)/server.key;
                            root \(root.path);
                            access_log \(path)/requests.log served;
                            keepalive_requests \(requestsPerConnection);
                            location /slow/ { alias \(root.path)/; limit_rate \(slowRate); }
                            location = /reset { return 444; }
                            \(upstreamLocation)
                        }
                    }
                    \(stream)

                    """
            }
            do {
                // SIGTERM for a try that did not listen: nginx's master stops its workers (SIGKILL would leave them).
                return try SpawnedProcess.listening("nginx", stopSignal: SIGTERM) {
                    let port = try LoopbackPorts.free()
                    let front = try tlsFront.map { _ in try LoopbackPorts.free() }
                    let file = directory.appendingPathComponent("nginx.conf")
                    try config(port: port, front: front).write(to: file, atomically: true, encoding: .utf8)
                    let process = try SpawnedProcess(
                        nginx, ["-c", file.path, "-e", "\(path)/startup.log"], in: directory)
                    let server = NginxServer(directory: directory, port: port, frontPort: front, process: process)
                    return (process, [port] + (front.map { [$0] } ?? []), server)
                }
            } catch {
                let log =
                    (try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
                throw TestFailure("\(error): \(log.suffix(500))")
            }
        }

        /// Runs `body` with a started server, and stops the server however `body` ends.
        static func with(
            files: [String: Data], requestsPerConnection: Int = 1000, slowRate: Int = 1_000_000, ipv6: Bool = false,
            tlsFront: UInt16? = nil, upstream: UInt16? = nil, _ body: (NginxServer) async throws -> Void
        ) async throws {
            try await with(
                {
                    try make(
                        files: files, requestsPerConnection: requestsPerConnection, slowRate: slowRate, ipv6: ipv6,
                        tlsFront: tlsFront, upstream: upstream)
                }, body)
        }

        /// A graceful reload (SIGHUP): new workers take new connections; the old ones send GOAWAY on theirs,
        /// finish the streams they have and close.
        func reload() { process.send(SIGHUP) }

        /// A fast shutdown (SIGTERM: the master stops its workers), reaped; its folder removed.
        func stop() async {
            await process.stop(SIGTERM)
            try? FileManager.default.removeItem(at: directory)
        }
    }
#endif
