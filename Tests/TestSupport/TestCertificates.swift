#if os(Linux)
    import Foundation

    /// A test CA and certificates signed by it, made with the `openssl` command.
    public enum TestCertificates {
        /// Writes `ca.pem` / `ca.key` and `server.pem` / `server.key` (for `names`, a subjectAltName list such as
        /// `IP:127.0.0.1`, valid for `days`: -1 makes one that expired before it began) into `directory`; returns
        /// the `openssl` command's path. Fails with a clear message when the command is missing.
        @discardableResult
        public static func make(in directory: URL, names: String, days: Int) throws -> String {
            let openssl = try command()
            let run = runner(openssl, in: directory)
            try run([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
                "-subj", "/CN=NetworkQueue Test CA",
            ])
            try run([
                "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
                "-subj", "/CN=NetworkQueue test server",
            ])
            try "subjectAltName=\(names)\n".write(
                to: directory.appendingPathComponent("ext.cnf"), atomically: true, encoding: .utf8)
            try run([
                "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", "server.pem", "-days", "\(days)", "-extfile", "ext.cnf",
            ])
            return openssl
        }

        /// Writes a client certificate `<name>.pem` and its key `<name>.key` into `directory`, signed by the CA
        /// `make` wrote there (or, with `selfSigned`, by no CA the server knows). With `password`, the key is
        /// encrypted with it (AES-256).
        public static func makeClient(
            named name: String, in directory: URL, selfSigned: Bool = false, password: String? = nil
        ) throws {
            let run = runner(try command(), in: directory)
            let subject = "/CN=NetworkQueue test client \(name)"
            if selfSigned {
                try run([
                    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(name).key", "-out", "\(name).pem",
                    "-days", "2", "-subj", subject,
                ])
            } else {
                try run([
                    "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(name).key", "-out", "\(name).csr",
                    "-subj", subject,
                ])
                try run([
                    "x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                    "-out", "\(name).pem", "-days", "2",
                ])
            }
            if let password {
                try FileManager.default.moveItem(
                    at: directory.appendingPathComponent("\(name).key"),
                    to: directory.appendingPathComponent("\(name).plain.key"))
                try run([
                    "pkey", "-in", "\(name).plain.key", "-aes256", "-passout", "pass:\(password)", "-out",
                    "\(name).key",
                ])
            }
        }

        private static func command() throws -> String {
            guard
                let openssl = ["/usr/bin/openssl", "/bin/openssl", "/usr/local/bin/openssl"].first(where: {
                    FileManager.default.isExecutableFile(atPath: $0)
                })
            else {
                throw SetupFailure("the TLS tests need the `openssl` command (apt-get install openssl)")
            }
            return openssl
        }

        private static func runner(_ openssl: String, in directory: URL) -> ([String]) throws -> Void {
            { arguments in
                let status = try SpawnedProcess(openssl, arguments, in: directory).waitForExit()
                guard status == 0 else { throw SetupFailure("openssl \(arguments.first ?? "") failed (\(status))") }
            }
        }
    }
#endif
