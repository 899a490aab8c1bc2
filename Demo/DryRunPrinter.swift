import DemoKit
import Foundation
import NetworkQueue

/// `--dry-run`'s output: a line per probe as it ends (status, size, the file name the download would write, the final
/// URL after redirects, redacted as the log is), then a total.
final class DryRunPrinter: @unchecked Sendable {
    private let lock = NSLock()
    private var succeeding = 0
    private var failing = 0
    private var knownBytes: Int64 = 0
    private var unknownSizes = 0
    /// `--content-disposition`: the name a response gives shows in place of the one from its URL.
    private let namesFromResponse: Bool

    init(namesFromResponse: Bool = false) { self.namesFromResponse = namesFromResponse }

    /// Prints what the probe of `request` learned, and counts it.
    func ended(_ request: NetworkRequest, _ result: Result<NetworkResponse, NetworkQueueError>) {
        let answer = DryRun.answer(request, result)
        let status = answer.status.map { String($0) } ?? "---"
        let size = answer.size.map(Format.bytes) ?? "-"
        var name = request.userInfo[DryRun.nameKey] as? String ?? "(memory)"
        if namesFromResponse, let given = request.head?.suggestedFileName {
            // In the line's folder, as the download would put it (made unique when it is saved).
            name = name.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(name[...$0]) + given } ?? given
        }
        let url = NetworkQueueLogRecord.redacted(request.head?.url ?? request.url)
        var line =
            "\(status.padding(toLength: 4, withPad: " ", startingAt: 0))"
            + "\(String(repeating: " ", count: max(0, 10 - size.count)))\(size)  \(name)  \(url)"
        if let problem = answer.problem { line += "  would fail: \(problem)" }
        lock.withLock {
            print(line)
            if answer.wouldSucceed {
                succeeding += 1
                if let size = answer.size { knownBytes += size } else { unknownSizes += 1 }
            } else {
                failing += 1
            }
        }
    }

    /// Prints the total; true when every probe would succeed.
    func finish(kept: Int) -> Bool {
        lock.withLock {
            var total =
                "Dry run: \(succeeding + failing) checked, \(succeeding) would succeed, \(failing) would fail;"
                + " \(Format.bytes(knownBytes)) to download"
            if unknownSizes > 0 { total += " (+ \(unknownSizes) of unknown size)" }
            if kept > 0 { total += "; \(kept) kept (already there)" }
            print(total)
            fflush(nil)
            return failing == 0
        }
    }
}
