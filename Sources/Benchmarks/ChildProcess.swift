import Foundation

/// This executable, for running its own modes in child processes.
let selfExecutable = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])

/// A `Benchmarks --serve` child: a LoopbackServer in its own process, stopped when this object stops it.
final class ServerProcess {
    let process = Process()
    let input = Pipe()
    let port: Int

    init() throws {
        let output = Pipe()
        process.executableURL = selfExecutable
        process.arguments = ["--serve"]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        guard
            let port = Int(
                line.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "PORT ", with: ""))
        else {
            process.terminate()
            throw BenchmarkFailure("the server child said '\(line)'")
        }
        self.port = port
    }

    func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    func stop() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}

/// Runs `Benchmarks <arguments>` and returns the values of its `RESULT` line.
func runChild(_ arguments: [String]) throws -> [Double] {
    let process = Process()
    let output = Pipe()
    process.executableURL = selfExecutable
    process.arguments = arguments
    process.standardOutput = output
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0,
        let line = text.split(separator: "\n").first(where: { $0.hasPrefix("RESULT ") })
    else { throw BenchmarkFailure("child \(arguments) exited \(process.terminationStatus): \(text)") }
    return line.split(separator: " ").dropFirst().compactMap { Double($0) }
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
