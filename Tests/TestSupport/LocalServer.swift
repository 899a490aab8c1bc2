#if os(Linux)
    import Foundation
    import Glibc

    /// A server the tests start as a program of its own (openssl, tinyproxy, microsocks, nginx): started off the
    /// tasks' threads, on a port free when asked, stopped and reaped however its test ends.
    public protocol LocalServer: AnyObject, Sendable {
        /// Stops the server and reaps it (see ``SpawnedProcess/stop(_:)``), and removes what it left behind.
        func stop() async
    }

    extension LocalServer {
        /// Makes a server with `make` on a thread of its own (making keys and waiting for a program to listen
        /// block, and must not hold one of the few threads every test's tasks share), runs `body` with it, and
        /// stops it however `body` ends.
        public static func with(
            _ make: @escaping @Sendable () throws -> Self, _ body: (Self) async throws -> Void
        ) async throws {
            let server = try await withCheckedThrowingContinuation { continuation in
                Thread { continuation.resume(with: Result { try make() }) }.start()
            }
            do {
                try await body(server)
            } catch {
                await server.stop()
                throw error
            }
            await server.stop()
        }
    }

    extension SpawnedProcess {
        /// Starts a server with `start` on ports chosen by it (free when asked: another test's connection or server
        /// may take one first, and the program then exits), until the program itself listens on every port in
        /// `ports` (5 s at most each try), trying afresh up to four times; a try that fails is stopped with
        /// `stopSignal`. Returns what `start` made.
        ///
        /// A connection accepted on the port is no proof: another test's loopback server, bound to port 0, can be
        /// given the same port between the asking and the program's bind. Then the program exits, and the test
        /// talked to the other server (TLS to plain HTTP: a TLS test failed so in a full run).
        public static func listening<Value>(
            _ name: String, stopSignal: Int32 = SIGKILL,
            _ start: () throws -> (process: SpawnedProcess, ports: [UInt16], value: Value)
        ) throws -> Value {
            for _ in 0..<4 {
                let (process, ports, value) = try start()
                let deadline = Date().addingTimeInterval(5)
                while !process.listens(on: ports), Date() < deadline { usleep(10_000) }
                if process.listens(on: ports) { return value }
                process.send(stopSignal)
                _ = process.waitForExit()
            }
            throw SetupFailure("\(name) did not start listening on any of 4 ports")
        }

        /// True when this process holds a listening socket on each of `ports` (read from /proc: the sockets listening
        /// on 127.0.0.1 or any address, against the process's open descriptors).
        public func listens(on ports: [UInt16]) -> Bool {
            var owned: Set<String> = []
            if let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd") {
                for descriptor in descriptors {
                    if let target = try? FileManager.default.destinationOfSymbolicLink(
                        atPath: "/proc/\(pid)/fd/\(descriptor)")
                    {
                        owned.insert(target)
                    }
                }
            }
            var listening: [UInt16: Set<String>] = [:]
            for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
                // Read to its end: Foundation's String(contentsOfFile:) stops at the first page of a /proc file.
                guard let text = readText(of: URL(fileURLWithPath: table)) else { continue }
                // sl local_address rem_address st … inode: the state 0A is LISTEN.
                for line in text.split(separator: "\n").dropFirst() {
                    let fields = line.split(separator: " ")
                    guard fields.count > 9, fields[3] == "0A", let colon = fields[1].lastIndex(of: ":"),
                        let port = UInt16(fields[1][fields[1].index(after: colon)...], radix: 16)
                    else { continue }
                    listening[port, default: []].insert("socket:[\(fields[9])]")
                }
            }
            return ports.allSatisfy { !(listening[$0] ?? []).isDisjoint(with: owned) }
        }

        /// Sends `signal` (SIGKILL by default; nginx's master wants SIGTERM to stop its workers) and reaps the
        /// process on a thread of its own (a blocking wait must not hold a thread the tests' tasks share), so no
        /// zombie is left behind.
        public func stop(_ signal: Int32 = SIGKILL) async {
            await withCheckedContinuation { (exited: CheckedContinuation<Void, Never>) in
                send(signal)
                Thread {
                    waitForExit()
                    exited.resume()
                }.start()
            }
        }
    }
#endif
