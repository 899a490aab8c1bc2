import Foundation

/// One big file from a server that caps each connection (nginx's `limit_rate`, as object stores and public mirrors
/// do; issue 36): what splitting it over several connections buys. Every tool saves `/capped/capped.bin` into an
/// empty folder: `aria2c -x 8 -s 8 -k 1M` (the reference every ratio is taken against), aria2c over one
/// connection, curl, wget2, and the Demo over 8 connections (`--split 8`) and over one. Wall time and CPU seconds.
struct CappedFile {
    let size: Int
    /// Bytes per second nginx sends on each connection.
    let rate: Int
    let url: String
    /// Where every tool writes (on tmpfs when there is one), emptied before and after each run.
    let folder: URL

    /// False: the same file from the uncapped location (what splitting costs when nothing caps a connection).
    let isCapped: Bool

    var title: String {
        let pace = isCapped ? "\(rate / 1_000_000) MB/s per connection" : "uncapped"
        return "1 x \(size / 1_000_000) MB, \(pace)\(folder.path.hasPrefix("/dev/shm") ? " (tmpfs)" : "")"
    }

    init(size: Int, rate: Int, nginx: Nginx, capped: Bool = true) {
        self.size = size
        self.rate = rate
        isCapped = capped
        url = "http://127.0.0.1:\(nginx.port)/\(capped ? "capped/" : "")capped.bin"
        let shm = URL(fileURLWithPath: "/dev/shm")
        folder =
            FileManager.default.isWritableFile(atPath: shm.path)
            ? shm.appendingPathComponent("nq-peers-capped-\(getpid())") : nginx.folder.appendingPathComponent("capped")
    }

    /// The tools, in the table's order; the first is the reference (nil command: not installed).
    func tools(demo: String) -> [SmallFiles.Tool] {
        func installed(_ name: String) -> String? {
            ["/usr/bin/\(name)", "/usr/local/bin/\(name)"].first(where: FileManager.default.isExecutableFile(atPath:))
        }
        let output = folder.appendingPathComponent("capped.bin").path
        func aria2(_ connections: Int) -> [String]? {
            installed("aria2c").map {
                [$0, "-q", "-x", "\(connections)", "-s", "\(connections)", "-k", "1M", "--file-allocation=none",
                 "--allow-overwrite=true", "--auto-file-renaming=false", "-d", folder.path, "-o", "capped.bin", url]
            }
        }
        return [
            SmallFiles.Tool(name: "aria2c -x 8 -s 8", command: aria2(8)),
            SmallFiles.Tool(name: "aria2c -x 1", command: aria2(1)),
            SmallFiles.Tool(name: "curl", command: installed("curl").map { [$0, "-s", "-o", output, url] }),
            SmallFiles.Tool(name: "wget2", command: installed("wget2").map { [$0, "-q", "-O", output, url] }),
            SmallFiles.Tool(
                name: "Demo --split 8",
                command: FileManager.default.isExecutableFile(atPath: demo)
                    ? [demo, "--no-accurate", "--split", "8", "--output", folder.path, url] : nil),
            SmallFiles.Tool(
                name: "Demo",
                command: FileManager.default.isExecutableFile(atPath: demo)
                    ? [demo, "--no-accurate", "--output", folder.path, url] : nil),
        ]
    }

    func measure(_ command: [String]) throws -> Sample {
        try measureTool(command, into: folder, expecting: 1, of: size)
    }
}
