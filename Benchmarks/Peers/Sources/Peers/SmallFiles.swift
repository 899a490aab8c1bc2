import Foundation

/// The batch users run most: a list of small files saved to a folder. Every side gets the same list of distinct
/// URLs (`/s/f<i>.bin`, 4 KB each) against the one nginx and saves each to its own file in an empty folder, 8 at
/// once: the library (`NetworkQueue.run()`, no delegate), the Demo (`--input LIST --output DIR`), `curl
/// --parallel` with a config of url/output pairs, `wget2 -i LIST`, and AsyncHTTPClient (its file delegate, and its
/// body streamed to a descriptor). Wall time and CPU seconds (user + system) of each side's process.
struct SmallFiles {
    let count: Int
    let size = 4_096
    let window = 8
    /// The list of URLs, one per line.
    let list: URL
    /// The `curl --parallel` config, `url`/`output` pairs into ``folder``.
    let curlConfig: URL
    /// Where every side writes (on tmpfs when there is one), emptied before and after each run.
    let folder: URL

    /// The file system the folder is on, as the table names it ("tmpfs", "ext4"; empty: the machine's own disk).
    let fileSystem: String

    var title: String {
        "\(count.formatted()) x 4 KB to a folder\(fileSystem.isEmpty ? "" : " (\(fileSystem))"), 8 in flight"
    }

    /// Writes the files into nginx's `www/s`, the list and curl's config. `into`: the folder's parent and its file
    /// system's name (default: tmpfs where there is one, else nginx's folder on the machine's disk).
    init(count: Int, nginx: Nginx, into place: (parent: URL, fileSystem: String)? = nil) throws {
        self.count = count
        let served = nginx.folder.appendingPathComponent("www/s")
        try FileManager.default.createDirectory(at: served, withIntermediateDirectories: true)
        var body = [UInt8](repeating: 0, count: size)
        for index in body.indices { body[index] = UInt8.random(in: 0...255) }
        let data = Data(body)
        // On tmpfs where there is one: the comparison is of the clients, and a disk's file system (this machine's ext4
        // takes seconds to create 20,000 files again after deleting them) would be most of every side's time.
        let shm = URL(fileURLWithPath: "/dev/shm")
        if let place {
            folder = place.parent.appendingPathComponent("nq-peers-out-\(getpid())")
            fileSystem = place.fileSystem
        } else if FileManager.default.isWritableFile(atPath: shm.path) {
            folder = shm.appendingPathComponent("nq-peers-out-\(getpid())")
            fileSystem = "tmpfs"
        } else {
            folder = nginx.folder.appendingPathComponent("out")
            fileSystem = ""
        }
        var urls = ""
        var config = ""
        for index in 0..<count {
            try data.write(to: served.appendingPathComponent("f\(index).bin"))
            let url = "http://127.0.0.1:\(nginx.port)/s/f\(index).bin"
            urls += url + "\n"
            config += "url = \"\(url)\"\noutput = \"\(folder.path)/f\(index).bin\"\n"
        }
        list = nginx.folder.appendingPathComponent("list.txt")
        curlConfig = nginx.folder.appendingPathComponent("curl-\(fileSystem.isEmpty ? "disk" : fileSystem).cfg")
        try urls.write(to: list, atomically: true, encoding: .utf8)
        try config.write(to: curlConfig, atomically: true, encoding: .utf8)
    }

    /// A side of the comparison: its name and the command that runs it once (nil when its tool is missing).
    struct Tool {
        var name: String
        var command: [String]?
    }

    /// The sides, in the table's order; the first is the one every ratio is taken against.
    func tools(peers: String, demo: String) -> [Tool] {
        func installed(_ name: String) -> String? {
            ["/usr/bin/\(name)", "/usr/local/bin/\(name)"].first(where: FileManager.default.isExecutableFile(atPath:))
        }
        let child = { (side: String) in [peers, "--child", side, "@" + list.path, String(count), "8", folder.path, "-"] }
        return [
            Tool(
                name: "curl --parallel",
                command: installed("curl").map { [$0, "--parallel", "--parallel-max", "8", "-s", "-K", curlConfig.path] }),
            Tool(name: "NetworkQueue", command: child("nq")),
            Tool(
                name: "Demo",
                command: FileManager.default.isExecutableFile(atPath: demo)
                    ? [demo, "--no-accurate", "--concurrency", "8", "--output", folder.path, "--input", list.path] : nil),
            Tool(
                name: "wget2 -i",
                command: installed("wget2").map { [$0, "-q", "-i", list.path, "--max-threads=8", "-P", folder.path] }),
            Tool(name: "AHC file delegate", command: child("ahc")),
            Tool(name: "AHC streamed", command: child("ahc-stream")),
        ]
    }

    /// Runs `command` once into an empty ``folder`` (see ``measureTool(_:into:expecting:of:)``).
    func measure(_ command: [String]) throws -> Sample {
        try measureTool(command, into: folder, expecting: count, of: size)
    }

    /// The table (see ``toolRows(_:_:tools:)``).
    func rows(_ samples: [String: [Sample]], tools: [Tool]) -> [[String]] { toolRows(title, samples, tools: tools) }
}

/// Runs `command` once into an empty `folder` and measures it from outside: wall time, and the CPU time and peak
/// memory the kernel accounts to it when it is reaped. Failures: of the `count` files of `size` bytes it should
/// leave there, those missing or of another size.
func measureTool(_ command: [String], into folder: URL, expecting count: Int, of size: Int) throws -> Sample {
    try? FileManager.default.removeItem(at: folder)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let start = DispatchTime.now().uptimeNanoseconds
    let usage = try spawnAndWait(command)
    let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
    let whole = names.filter { name in
        let attributes = try? FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(name).path)
        return (attributes?[.size] as? NSNumber)?.intValue == size
    }
    let cpu =
        Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    return Sample(seconds: elapsed, cpuSeconds: cpu, peakResidentBytes: usage.ru_maxrss * 1024,
                  failures: count - whole.count)
}

/// A comparison's table: wall seconds and CPU seconds of each tool (medians), and each one's ratio to the first
/// tool's in the same round.
func toolRows(_ title: String, _ samples: [String: [Sample]], tools: [SmallFiles.Tool]) -> [[String]] {
    let reference = tools[0].name
    func row(_ label: String, _ measure: (Sample) -> Double) -> [String] {
        var cells = [title + ", " + label]
        for tool in tools {
            guard let measured = samples[tool.name], !measured.isEmpty else {
                cells.append("–")
                continue
            }
            let ratios = zip(samples[reference, default: []], measured).map { measure($1) / measure($0) }
            cells.append(String(format: "%.2f (%.2f×)", median(measured.map(measure)), median(ratios)))
        }
        return cells
    }
    return [row("wall s", \.seconds), row("CPU s", \.cpuSeconds)]
}

/// Runs `command` (its output discarded) and returns the kernel's account of it once it exits; throws when it
/// cannot start or exits with a failure.
func spawnAndWait(_ command: [String]) throws -> rusage {
    var actions: posix_spawn_file_actions_t = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    var arguments = command.map { strdup($0) }
    arguments.append(nil)
    defer { for argument in arguments { free(argument) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, command[0], &actions, nil, arguments, environ)
    guard spawned == 0 else { throw PeerFailure("cannot run \(command[0]): \(String(cString: strerror(spawned)))") }
    var status: Int32 = 0
    var usage = rusage()
    while wait4(pid, &status, 0, &usage) < 0 {
        guard errno == EINTR else { throw PeerFailure("wait4 failed: \(String(cString: strerror(errno)))") }
    }
    // Exited normally with 0 (the wait status's low 7 bits are the signal, the next 8 the exit code).
    guard status & 0x7F == 0, (status >> 8) & 0xFF == 0 else {
        throw PeerFailure("\(command.joined(separator: " ")) failed (wait status \(status))")
    }
    return usage
}

/// A rerun of the small files (issue 64): each tool saved the list once into its own folder, and runs again over it
/// with nothing changed on the server, asking each file whether it changed: the Demo (its default: `If-None-Match` with
/// the entity tag each file was saved under), `curl --parallel` with a config of url/output/`time-cond` blocks (one
/// `If-Modified-Since` a file, `-R` so that the first run dated them), `wget2 -N` and `aria2c --conditional-get`
/// (`If-Modified-Since`). Every side sends one request a file and gets a 304; wall time and CPU seconds of the rerun.
struct Rerun {
    let files: SmallFiles
    /// The folder each tool's files stay in between its runs.
    let parent: URL
    /// The curl config of url/output/time-cond blocks into `parent/curl`.
    let curlConfig: URL

    var title: String { "rerun: \(files.count.formatted()) x 4 KB unchanged\(files.fileSystem.isEmpty ? "" : " (\(files.fileSystem))")" }

    init(_ files: SmallFiles) throws {
        self.files = files
        parent = files.folder.deletingLastPathComponent().appendingPathComponent("nq-peers-rerun-\(getpid())")
        let urls = try String(contentsOf: files.list, encoding: .utf8).split(separator: "\n")
        var config = ""
        for (index, url) in urls.enumerated() {
            let output = parent.appendingPathComponent("curl/f\(index).bin").path
            if index > 0 { config += "next\n" }
            config += "url = \"\(url)\"\noutput = \"\(output)\"\nremote-time\ntime-cond = \"\(output)\"\n"
        }
        curlConfig = files.list.deletingLastPathComponent().appendingPathComponent("rerun-curl.cfg")
        try config.write(to: curlConfig, atomically: true, encoding: .utf8)
    }

    /// The sides, the first the reference: each command saves into (and reruns over) its own folder.
    func tools(demo: String) -> [SmallFiles.Tool] {
        func installed(_ name: String) -> String? {
            ["/usr/bin/\(name)", "/usr/local/bin/\(name)"].first(where: FileManager.default.isExecutableFile(atPath:))
        }
        let folder = { (name: String) in parent.appendingPathComponent(name).path }
        return [
            SmallFiles.Tool(
                name: "curl -Z time-cond",
                command: installed("curl").map { [$0, "--parallel", "--parallel-max", "8", "-s", "-K", curlConfig.path] }),
            SmallFiles.Tool(
                name: "Demo",
                command: FileManager.default.isExecutableFile(atPath: demo)
                    ? [demo, "--no-accurate", "--concurrency", "8", "--output", folder("demo"), "--input", files.list.path]
                    : nil),
            SmallFiles.Tool(
                name: "wget2 -N",
                command: installed("wget2").map {
                    [$0, "-q", "-N", "-i", files.list.path, "--max-threads=8", "-P", folder("wget2")]
                }),
            SmallFiles.Tool(
                name: "aria2c --conditional-get",
                command: installed("aria2c").map {
                    [$0, "-q", "-j", "8", "--remote-time=true", "--conditional-get=true", "--allow-overwrite=true",
                     "--auto-file-renaming=false", "-d", folder("aria2"), "-i", files.list.path]
                }),
        ]
    }

    /// The first run of `command`, which fills its folder (not measured).
    func fill(_ command: [String]) throws {
        for name in ["curl", "demo", "wget2", "aria2"] {
            try FileManager.default.createDirectory(at: parent.appendingPathComponent(name), withIntermediateDirectories: true)
        }
        _ = try spawnAndWait(command)
    }

    /// One rerun of `command` over its filled folder, measured; failures: files missing or of another size after it.
    func measure(_ command: [String], folder name: String) throws -> Sample {
        let start = DispatchTime.now().uptimeNanoseconds
        let usage = try spawnAndWait(command)
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let folder = parent.appendingPathComponent(name)
        let whole = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { name in
            let attributes = try? FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(name).path)
            return (attributes?[.size] as? NSNumber)?.intValue == files.size
        }
        let cpu =
            Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        return Sample(seconds: elapsed, cpuSeconds: cpu, peakResidentBytes: usage.ru_maxrss * 1024,
                      failures: files.count - whole.count)
    }

    /// The folder a tool's files are in.
    static func folderName(of tool: String) -> String {
        tool.hasPrefix("curl") ? "curl" : tool.hasPrefix("Demo") ? "demo" : tool.hasPrefix("wget2") ? "wget2" : "aria2"
    }

    func remove() { try? FileManager.default.removeItem(at: parent) }
}
