import Foundation
import LoopbackServer
import TestSupport

/// The Demo executable, built beside this test bundle by `swift build` / `swift test`.
let demo: URL = {
    let here = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
    var directory = here.deletingLastPathComponent()
    // On Linux the tests run from `<build>/NetworkQueuePackageTests.xctest`; on Apple platforms from inside a bundle.
    while !FileManager.default.fileExists(atPath: directory.appendingPathComponent("Demo").path),
        directory.pathComponents.count > 1
    {
        directory.deleteLastPathComponent()
    }
    return directory.appendingPathComponent("Demo")
}()

/// Runs the Demo with `arguments` (standard input from `input`) and `environment` added to this process's
/// (`NAME=value` each); returns its exit status and output (its standard error too, after the output, when
/// `withErrors`).
func runDemo(
    _ arguments: [String], input: URL? = nil, in directory: URL, environment: [String] = [], withErrors: Bool = false
) async throws -> (status: Int32, output: String) {
    let output = directory.appendingPathComponent("demo-\(UUID().uuidString).log")
    let errors = withErrors ? directory.appendingPathComponent("demo-\(UUID().uuidString).errors") : nil
    let (path, words) =
        environment.isEmpty ? (demo.path, arguments) : ("/usr/bin/env", environment + [demo.path] + arguments)
    let status = try await SpawnedProcess(path, words, in: directory, input: input, output: output, errors: errors)
        .exitStatus()
    defer { try? FileManager.default.removeItem(at: output) }
    if let errors {
        defer { try? FileManager.default.removeItem(at: errors) }
        return (status, (readText(of: output) ?? "") + (readText(of: errors) ?? ""))
    }
    // An empty file is not read: FoundationEssentials' readBytesFromFile leaks its 4 KiB buffer for one (seen
    // by LeakSanitizer).
    let size = (try? FileManager.default.attributesOfItem(atPath: output.path)[.size] as? Int) ?? 0
    guard size > 0 else { return (status, "") }
    return (status, (try? String(contentsOf: output, encoding: .utf8)) ?? "")
}

/// A loopback server and a new folder holding `list.txt` (the server's `paths`, then `extraLines`, one a line)
/// and an empty `out` folder.
struct DemoSetup {
    let server: LoopbackServer
    let directory: URL
    let output: URL
    let list: URL

    init(paths: [String], extraLines: [String] = []) throws {
        server = try LoopbackServer()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("nq-demo-\(UUID().uuidString)")
        output = directory.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
        list = directory.appendingPathComponent("list.txt")
        let server = server
        try Data((paths.map { server.url($0).absoluteString } + extraLines).map { $0 + "\n" }.joined().utf8).write(
            to: list)
    }

    func tearDown() {
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Kills `process` (SIGKILL) once `condition` returns a value, and keeps that value in the box returned (nil until
/// then). Watched from a thread of its own, not a task: the suite's long synchronous loops can hold the cooperative
/// pool's two threads for seconds, longer than a whole download. Polled every 5 ms for at most 30 s: the bound only
/// guards a broken run.
func kill(_ process: SpawnedProcess, once condition: @escaping @Sendable () -> Int?) -> Box<Int?> {
    let seen = Box<Int?>(nil)
    let watcher = Thread {
        for _ in 0..<6000 {
            if let value = condition() {
                // Kept before the kill: the test, woken by the process's end, reads it.
                seen.with { $0 = value }
                process.kill()
                return
            }
            usleep(5_000)
        }
    }
    watcher.start()
    return seen
}
