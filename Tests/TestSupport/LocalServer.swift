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
        /// Starts a server with `start` on ports chosen by it (free when asked: another test's connection may take
        /// one first, as its source port, and the program then exits), until every port in `ports` accepts a
        /// connection (5 s at most each try), trying afresh up to four times; a try that fails is stopped with
        /// `stopSignal`. Returns what `start` made.
        public static func listening<Value>(
            _ name: String, stopSignal: Int32 = SIGKILL,
            _ start: () throws -> (process: SpawnedProcess, ports: [UInt16], value: Value)
        ) throws -> Value {
            for _ in 0..<4 {
                let (process, ports, value) = try start()
                let deadline = Date().addingTimeInterval(5)
                while !ports.allSatisfy(LoopbackPorts.accepts), Date() < deadline { usleep(10_000) }
                if ports.allSatisfy(LoopbackPorts.accepts) { return value }
                process.send(stopSignal)
                _ = process.waitForExit()
            }
            throw SetupFailure("\(name) did not start listening on any of 4 ports")
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
