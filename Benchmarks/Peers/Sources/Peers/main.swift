import Foundation

// `swift run -c release Peers [--rounds N] [--quick] [--only NAME] [--benchmarks PATH] [--demo PATH]` (see
// ./run.sh): the four workloads against one nginx (for files, AsyncHTTPClient both with its file delegate and
// streaming its body itself), each side of each round in a child process, sides in a rotating order; prints the
// medians and the same-round ratios as a table. Then the small files to a folder (`--only smallfiles`; see
// `SmallFiles`) against curl, wget2 and the Demo. `--child …` is the child's mode (see `Child`).

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--child" {
    guard let child = Child(arguments: arguments) else {
        FileHandle.standardError.write(Data("usage: Peers --child SIDE URL COUNT WINDOW DIRECTORY|- CAFILE|-\n".utf8))
        exit(2)
    }
    do {
        try await child.run()
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("child failed: \(error)\n".utf8))
        exit(1)
    }
}

func value(after flag: String) -> String? {
    arguments.firstIndex(of: flag).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
}

let quick = arguments.contains("--quick")
let rounds = value(after: "--rounds").flatMap(Int.init) ?? (quick ? 1 : 5)
let benchmarks = URL(fileURLWithPath: value(after: "--benchmarks") ?? "../../.build/release/Benchmarks")
guard FileManager.default.isExecutableFile(atPath: benchmarks.path) else {
    print("The raw libcurl loop is the root package's Benchmarks binary, not found at \(benchmarks.path):")
    print("run `swift build -c release --product Benchmarks` at the root, or ./run.sh.")
    exit(1)
}

let workloads = [
    Workload(name: "small", title: "\(quick ? 500 : 5_000) x 1 KB, 8 in flight", file: "1k.bin", size: 1_024,
             count: quick ? 500 : 5_000, window: 8, toFiles: false, secure: false),
    Workload(name: "big", title: "1 x \(quick ? 20 : 200) MB to a file", file: "big.bin", size: quick ? 20_000_000 : 200_000_000,
             count: 1, window: 1, toFiles: true, secure: false),
    Workload(name: "files", title: "8 x \(quick ? 5 : 50) MB to files, 4 at once", file: "medium.bin",
             size: quick ? 5_000_000 : 50_000_000, count: 8, window: 4, toFiles: true, secure: false),
    Workload(name: "https", title: "\(quick ? 500 : 5_000) x 1 KB over HTTPS, HTTP/2, 8 in flight", file: "1k.bin", size: 1_024,
             count: quick ? 500 : 5_000, window: 8, toFiles: false, secure: true),
].filter { value(after: "--only") == nil || value(after: "--only") == $0.name }
let runsSmallFiles = value(after: "--only") == nil || value(after: "--only") == "smallfiles"
let runsCapped = value(after: "--only") == nil || value(after: "--only") == "capped"
let runsRerun = value(after: "--only") == nil || value(after: "--only") == "rerun"
// The capped file: 256 MB at 32 MB/s a connection (the figures); quick: 32 MB at 8 MB/s.
let (cappedSize, cappedRate) = quick ? (32_000_000, 8_000_000) : (256_000_000, 32_000_000)

let nginx = try Nginx(
    files: [("1k.bin", 1_024), ("big.bin", quick ? 20_000_000 : 200_000_000),
            ("medium.bin", quick ? 5_000_000 : 50_000_000), ("capped.bin", cappedSize)],
    cappedRate: cappedRate)
defer { nginx.stop() }
let sides = [
    Side(name: "NetworkQueue", executable: URL(fileURLWithPath: CommandLine.arguments[0]), mode: ["--child", "nq"]),
    Side(name: "AsyncHTTPClient", executable: URL(fileURLWithPath: CommandLine.arguments[0]), mode: ["--child", "ahc"]),
    Side(name: "raw libcurl", executable: benchmarks, mode: ["--peer-child", "curl"]),
    Side(
        name: "AHC streamed", executable: URL(fileURLWithPath: CommandLine.arguments[0]), mode: ["--child", "ahc-stream"],
        filesOnly: true),
    // What a checksum costs, against nginx: the one big body with its SHA-256 checked as it streams.
    Side(
        name: "NQ + SHA-256", executable: URL(fileURLWithPath: CommandLine.arguments[0]), mode: ["--child", "nq-sha256"],
        filesOnly: true, onlyWorkload: "big"),
]
// The children of the checksum side read the big file's SHA-256 from the environment.
if let digest = try? sha256Hex(of: nginx.folder.appendingPathComponent("www/big.bin")) { setenv("NQ_SHA256", digest, 1) }

print("Peers: \(rounds) round(s); nginx \(nginx.port) (HTTP/1.1) and \(nginx.securePort) (TLS, HTTP/2); \(ProcessInfo.processInfo.activeProcessorCount) cores")
var rows: [[String]] = []
for workload in workloads {
    var samples: [String: [Sample]] = [:]
    for round in 0..<rounds {
        for offset in sides.indices {
            let side = sides[(round + offset) % sides.count]
            if side.filesOnly, !workload.toFiles { continue }
            if let only = side.onlyWorkload, only != workload.name { continue }
            let sample = try side.run(workload, nginx: nginx)
            guard sample.failures == 0 else { throw PeerFailure("\(side.name): \(sample.failures) failures in \(workload.title)") }
            samples[side.name, default: []].append(sample)
        }
    }
    rows += workload.rows(samples, sides: sides.map(\.name), inverted: ["NQ + SHA-256"])
}
if !rows.isEmpty {
    printTable(
        ["workload", "NetworkQueue", "AsyncHTTPClient", "raw libcurl", "AHC streamed", "NQ + SHA-256", "NQ / AHC", "NQ / raw",
         "NQ / AHC streamed", "NQ + SHA-256 / NQ"], rows)
}

if runsSmallFiles {
    // On tmpfs (the clients alone), then on a fresh ext4 (what users have) when this process can make one.
    var places: [(parent: URL, fileSystem: String)?] = [nil]
    let ext4 = Ext4Folder()
    defer { ext4?.stop() }
    if let ext4 { places.append((ext4.mountPoint, "ext4")) } else {
        print("small files on ext4: left out (a fresh ext4 needs root, mkfs.ext4 and a loop device)")
    }
    let demo = value(after: "--demo") ?? benchmarks.deletingLastPathComponent().appendingPathComponent("Demo").path
    var table: [[String]] = []
    var header: [String] = []
    for place in places {
        let smallFiles = try SmallFiles(count: quick ? 2_000 : 20_000, nginx: nginx, into: place)
        let tools = smallFiles.tools(peers: CommandLine.arguments[0], demo: demo)
        if place == nil { for tool in tools where tool.command == nil { print("\(tool.name): not installed, left out") } }
        var samples: [String: [Sample]] = [:]
        let present = tools.filter { $0.command != nil }
        for round in 0..<rounds {
            for offset in present.indices {
                let tool = present[(round + offset) % present.count]
                let sample = try smallFiles.measure(tool.command ?? [])
                guard sample.failures == 0 else {
                    throw PeerFailure("\(tool.name): \(sample.failures) files missing in \(smallFiles.title)")
                }
                samples[tool.name, default: []].append(sample)
            }
        }
        header = ["workload (ratio: to curl in the same round)"] + tools.map(\.name)
        table += smallFiles.rows(samples, tools: tools)
    }
    print("")
    printTable(header, table)
}

if runsRerun {
    // The same small files, saved once by each tool, then asked again with nothing changed (issue 64).
    var places: [(parent: URL, fileSystem: String)?] = [nil]
    let ext4 = Ext4Folder()
    defer { ext4?.stop() }
    if let ext4 { places.append((ext4.mountPoint, "ext4")) }
    let demo = value(after: "--demo") ?? benchmarks.deletingLastPathComponent().appendingPathComponent("Demo").path
    var table: [[String]] = []
    var header: [String] = []
    for place in places {
        let rerun = try Rerun(try SmallFiles(count: quick ? 2_000 : 20_000, nginx: nginx, into: place))
        defer { rerun.remove() }
        let tools = rerun.tools(demo: demo)
        let present = tools.filter { $0.command != nil }
        for tool in present { try rerun.fill(tool.command ?? []) }
        var samples: [String: [Sample]] = [:]
        for round in 0..<rounds {
            for offset in present.indices {
                let tool = present[(round + offset) % present.count]
                let sample = try rerun.measure(tool.command ?? [], folder: Rerun.folderName(of: tool.name))
                guard sample.failures == 0 else {
                    throw PeerFailure("\(tool.name): \(sample.failures) files missing after \(rerun.title)")
                }
                samples[tool.name, default: []].append(sample)
            }
        }
        header = ["workload (ratio: to curl in the same round)"] + tools.map(\.name)
        table += toolRows(rerun.title, samples, tools: tools)
    }
    print("")
    printTable(header, table)
}

if runsCapped {
    let demo = value(after: "--demo") ?? benchmarks.deletingLastPathComponent().appendingPathComponent("Demo").path
    var rows: [[String]] = []
    var names: [String] = []
    // Capped (what splitting buys), then uncapped (what it costs).
    for capped in [true, false] {
        let file = CappedFile(size: cappedSize, rate: cappedRate, nginx: nginx, capped: capped)
        let tools = file.tools(demo: demo)
        names = tools.map(\.name)
        for tool in tools where tool.command == nil && capped { print("\(tool.name): not installed, left out") }
        let present = tools.filter { $0.command != nil }
        var samples: [String: [Sample]] = [:]
        for round in 0..<rounds {
            for offset in present.indices {
                let tool = present[(round + offset) % present.count]
                let sample = try file.measure(tool.command ?? [])
                guard sample.failures == 0 else { throw PeerFailure("\(tool.name): the file is missing in \(file.title)") }
                samples[tool.name, default: []].append(sample)
            }
        }
        rows += toolRows(file.title, samples, tools: tools)
    }
    print("")
    printTable(["big file (ratio: to aria2c -x 8 in the same round)"] + names, rows)
}

/// The SHA-256 of the file at `url`, in hex, by `sha256sum`.
func sha256Hex(of url: URL) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
    process.arguments = [url.path]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard let hex = text.split(separator: " ").first, hex.count == 64 else { throw PeerFailure("sha256sum failed: \(text)") }
    return String(hex)
}
