import Foundation

/// An nginx of the comparison's own: its configuration, files and certificate in a temporary folder, one
/// worker (the other core is the client's), plain HTTP/1.1 on one free port and TLS with HTTP/2 on another,
/// keep-alive without a request limit. Stopped (and its folder removed) by ``stop()``.
final class Nginx {
    let folder: URL
    let port: Int
    let securePort: Int
    /// The self-signed certificate clients must trust for `https://127.0.0.1:<securePort>`.
    let certificate: URL
    private let process: Process

    /// Files served from `/`: name and size; `/capped/` serves the same files at `cappedRate` bytes per second on
    /// each connection.
    init(files: [(name: String, size: Int)], cappedRate: Int) throws {
        guard let binary = ["/usr/sbin/nginx", "/usr/bin/nginx"].first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw PeerFailure("nginx is not installed: run ./run.sh, which installs it with apt-get, or apt-get install nginx")
        }
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("nq-peers-\(getpid())")
        let www = folder.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        for (name, size) in files { try Self.writeFile(www.appendingPathComponent(name), size: size) }
        certificate = folder.appendingPathComponent("cert.pem")
        let key = folder.appendingPathComponent("key.pem")
        try run(
            "/usr/bin/openssl",
            ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
             "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
             "-keyout", key.path, "-out", certificate.path])
        port = try freePort()
        securePort = try freePort()
        let configuration = """
            daemon off;
            master_process off;
            worker_processes 1;
            pid \(folder.path)/nginx.pid;
            error_log \(folder.path)/error.log warn;
            events { worker_connections 1024; }
            http {
                access_log off;
                sendfile on;
                tcp_nopush on;
                keepalive_requests 100000000;
                keepalive_timeout 120s;
                default_type application/octet-stream;
                client_body_temp_path \(folder.path)/client;
                proxy_temp_path \(folder.path)/proxy;
                fastcgi_temp_path \(folder.path)/fastcgi;
                uwsgi_temp_path \(folder.path)/uwsgi;
                scgi_temp_path \(folder.path)/scgi;
                server {
                    listen 127.0.0.1:\(port);
                    root \(www.path);
                    location /capped/ { alias \(www.path)/; limit_rate \(cappedRate); }
                }
                server {
                    listen 127.0.0.1:\(securePort) ssl http2;
                    ssl_certificate \(certificate.path);
                    ssl_certificate_key \(key.path);
                    root \(www.path);
                }
            }
            """
        let configurationFile = folder.appendingPathComponent("nginx.conf")
        try configuration.write(to: configurationFile, atomically: true, encoding: .utf8)
        process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["-p", folder.path, "-c", configurationFile.path]
        try process.run()
        try waitUntilListening(port)
        try waitUntilListening(securePort)
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: folder)
    }

    /// Random bytes (1 MiB of them repeated): no compression or deduplication helps any side.
    private static func writeFile(_ url: URL, size: Int) throws {
        var chunk = [UInt8](repeating: 0, count: min(size, 1 << 20))
        for index in chunk.indices { chunk[index] = UInt8.random(in: 0...255) }
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var written = 0
        while written < size {
            let count = min(chunk.count, size - written)
            try handle.write(contentsOf: chunk[..<count])
            written += count
        }
    }
}

/// Runs `path` with `arguments` to its end; throws when it fails.
func run(_ path: String, _ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw PeerFailure("\(path) \(arguments.joined(separator: " ")) failed") }
}

/// A TCP port on 127.0.0.1 that nothing listens on now.
func freePort() throws -> Int {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(socket) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0
        }
    }
    guard bound else { throw PeerFailure("no free port") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Polls until something accepts connections on `port` (at most 10 s).
func waitUntilListening(_ port: Int) throws {
    for _ in 0..<200 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        close(socket)
        if connected { return }
        usleep(50_000)
    }
    throw PeerFailure("nginx did not start listening on \(port)")
}
