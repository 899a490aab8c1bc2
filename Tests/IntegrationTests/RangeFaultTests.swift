import Foundation
import LoopbackServer
import NetworkQueue
import TestSupport
import Testing

/// A split file whose server gets its ranges wrong (issue 50), over each transport. Each case waits on a server paced
/// at 1 MB/s for most of its time: the cases run at once, not one after another as the other split files' tests do.
@Suite(.admitted, .timeLimit(.minutes(10))) struct RangeFaultTests {
    /// Issue 50, item 2: one server that says `Accept-Ranges: bytes` and then answers its ranges wrongly. Splitting
    /// is an optimisation: the first connection's stream of the whole file was good, so it goes on alone, taking each
    /// waiting range it reaches, and the file completes in its first attempt; the source takes no more ranges.
    /// Without the fallback every mode failed the attempt at once ("bad server response").
    @Test(
        arguments: TransportKind.allCases,
        ["whole", "416", "offset", "noRange", "multipart", "length", "etag", "gzip", "short"])
    func aServerThatGetsRangesWrongIsFetchedOverItsOneGoodConnection(_ transport: TransportKind, _ fault: String)
        async throws
    {
        let server = try LoopbackServer()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("ranges-\(fault).bin")
        let request = SplitIntegrationTests.request(
            server.url("/bytes/\(SplitIntegrationTests.size)?rate=1000000&rangeFault=\(fault)"), to: file)
        _ = try await SplitIntegrationTests.run(request, transport, file: file)
        let asked = SplitIntegrationTests.ranges(server)
        #expect(asked.first == .some(nil) && asked.count >= 2, "the file was split: \(asked)")
        let sources = request.metrics?.final?.segments?.locations ?? []
        // The source is never dropped. (Whether a wrong answer was judged before the stream reached its range, which
        // then takes it over, depends on how soon the answer comes: refusedRanges is not checked here.)
        #expect(sources.map(\.wasDropped) == [false], "\(sources)")
        #expect(sources.map(\.bytes) == [Int64(SplitIntegrationTests.size)], "\(sources)")
    }

    /// With a mirror beside it, a source that gets ranges wrong keeps its stream of the file and the mirror takes
    /// the ranges: both serve the file, neither is dropped.
    @Test(arguments: TransportKind.allCases) func aSourceThatGetsRangesWrongLeavesTheRangesToAMirror(
        _ transport: TransportKind
    ) async throws {
        let (first, second) = (try LoopbackServer(), try LoopbackServer())
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("ranges-mirror.bin")
        let path = "/bytes/\(SplitIntegrationTests.size)?rate=1000000"
        let request = SplitIntegrationTests.request(
            first.url(path + "&rangeFault=whole"), to: file, mirrors: [second.url(path)])
        _ = try await SplitIntegrationTests.run(request, transport, file: file)
        let sources = request.metrics?.final?.segments?.locations ?? []
        // The mirror is never dropped and never refuses a range. (The origin's wrong answers are judged only when they
        // come before its stream reaches their ranges; one that comes after its stream stopped drops it, since the
        // mirror can stand in.)
        #expect(sources.last?.wasDropped == false && sources.last?.refusedRanges == false, "\(sources)")
        #expect(sources.map(\.bytes).reduce(0, +) == Int64(SplitIntegrationTests.size))
    }
}
