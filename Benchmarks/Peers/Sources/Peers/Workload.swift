import Foundation

/// One measured run of one side.
struct Sample {
    var seconds: Double
    var cpuSeconds: Double
    var peakResidentBytes: Int
    var failures: Int
}

/// What is fetched, how often, how many at once, and where the bodies go.
struct Workload {
    var name: String
    var title: String
    var file: String
    var size: Int
    var count: Int
    var window: Int
    var toFiles: Bool
    var secure: Bool

    func url(_ nginx: Nginx) -> String {
        secure ? "https://127.0.0.1:\(nginx.securePort)/\(file)" : "http://127.0.0.1:\(nginx.port)/\(file)"
    }

    /// The table's rows: throughput (requests or megabytes a second) and, for small bodies, CPU time per request,
    /// for big ones peak memory. Each ratio is the median of the rounds' own ratios (each round runs every side once).
    /// `inverted`: sides whose ratio column is their figure over ours in every row (a variant of ours, such as
    /// ours with a checksum: the share of our speed it keeps, the CPU it adds).
    func rows(_ samples: [String: [Sample]], sides: [String], inverted: Set<String> = []) -> [[String]] {
        let ours = sides[0]
        func rate(_ sample: Sample) -> Double {
            toFiles ? Double(size * count) / sample.seconds / 1e6 : Double(count) / sample.seconds
        }
        func cpu(_ sample: Sample) -> Double { sample.cpuSeconds / Double(count) * 1e6 }
        func memory(_ sample: Sample) -> Double { Double(sample.peakResidentBytes) / Double(1 << 20) }
        func row(_ label: String, _ measure: (Sample) -> Double, higherIsBetter: Bool, format: String) -> [String] {
            var cells = [label]
            for side in sides {
                // A side that does not run this workload (AHC's streamed body, for bodies kept in memory).
                guard let measured = samples[side], !measured.isEmpty else {
                    cells.append("–")
                    continue
                }
                cells.append(String(format: format, median(measured.map(measure))))
            }
            for other in sides.dropFirst() {
                guard samples[other]?.isEmpty == false else {
                    cells.append("–")
                    continue
                }
                let ratios = zip(samples[ours, default: []], samples[other, default: []]).map { mine, theirs in
                    if inverted.contains(other) { return measure(theirs) / measure(mine) }
                    return higherIsBetter ? measure(mine) / measure(theirs) : measure(theirs) / measure(mine)
                }
                cells.append(String(format: "%.2f", median(ratios)))
            }
            return cells
        }
        if toFiles {
            return [
                row(title + ", MB/s", rate, higherIsBetter: true, format: "%.0f"),
                row(title + ", CPU s (ratio: theirs / ours)", \.cpuSeconds, higherIsBetter: false, format: "%.2f"),
                row(title + ", peak RSS MiB (ratio: theirs / ours)", memory, higherIsBetter: false, format: "%.0f"),
            ]
        }
        return [
            row(title + ", req/s", rate, higherIsBetter: true, format: "%.0f"),
            row(title + ", CPU µs/req (ratio: theirs / ours)", cpu, higherIsBetter: false, format: "%.1f"),
        ]
    }
}

/// A client under comparison: the executable and arguments that run one workload once in a child process.
struct Side {
    var name: String
    var executable: URL
    var mode: [String]
    /// Runs only the workloads whose bodies go to files.
    var filesOnly = false
    /// Runs only the workload of this name (nil: any).
    var onlyWorkload: String?

    func run(_ workload: Workload, nginx: Nginx) throws -> Sample {
        var directory: URL?
        if workload.toFiles {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("nq-peers-out-\(getpid())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            directory = folder
        }
        defer { if let directory { try? FileManager.default.removeItem(at: directory) } }
        let process = Process()
        process.executableURL = executable
        process.arguments = mode + [
            workload.url(nginx), String(workload.count), String(workload.window), directory?.path ?? "-",
            workload.secure ? nginx.certificate.path : "-",
        ]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0,
            let line = text.split(separator: "\n").last(where: { $0.hasPrefix("RESULT ") })
        else { throw PeerFailure("\(name) failed on \(workload.title): \(text)") }
        let fields = line.split(separator: " ").dropFirst()
        guard fields.count == 4, let seconds = Double(fields[fields.startIndex]),
            let cpu = Double(fields[fields.startIndex + 1]), let rss = Int(fields[fields.startIndex + 2]),
            let failures = Int(fields[fields.startIndex + 3])
        else { throw PeerFailure("\(name) printed an unreadable result: \(line)") }
        return Sample(seconds: seconds, cpuSeconds: cpu, peakResidentBytes: rss, failures: failures)
    }
}

func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

/// A Markdown table, columns padded.
func printTable(_ header: [String], _ rows: [[String]]) {
    let all = [header] + rows
    let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
    func line(_ cells: [String]) -> String {
        "| " + cells.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined(separator: " | ") + " |"
    }
    print(line(header))
    print("|" + widths.map { String(repeating: "-", count: $0 + 2) }.joined(separator: "|") + "|")
    for row in rows { print(line(row)) }
}
