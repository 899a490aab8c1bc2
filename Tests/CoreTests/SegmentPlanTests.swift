import TestSupport
import Testing

@testable import NetworkQueue

/// How a file's bytes are shared among connections (issue 36's ground, pure): every byte written exactly once
/// whatever is stolen or fails, the count never backwards, and the record a rerun reads.
@Suite(.admitted, .timeLimit(.minutes(10))) struct SegmentPlanTests {
    static let mib: Int64 = 1 << 20

    @Test func aFileIsSplitInEqualPartsOfAtLeastTheMinimum() {
        let plan = SegmentPlan(length: 256 * Self.mib, connections: 8, minimumSize: Self.mib)
        let thirtyTwo = 32 * Self.mib
        let expected: [Range<Int64>] = (0..<Int64(8)).map { $0 * thirtyTwo..<($0 + 1) * thirtyTwo }
        #expect(plan.waiting == expected)
        // Too small for more than one part of the minimum: one range.
        #expect(
            SegmentPlan(length: 3 * Self.mib / 2, connections: 8, minimumSize: Self.mib).waiting == [
                0..<3 * Self.mib / 2
            ])
        // A tail under the minimum joins the part before it.
        #expect(SegmentPlan(length: 10, connections: 3, minimumSize: 3).waiting == [0..<4, 4..<10])
        #expect(SegmentPlan(length: 0, connections: 4, minimumSize: 1).waiting.isEmpty)
    }

    @Test func aFreeConnectionTakesHalfOfTheLargestRemainder() {
        var plan = SegmentPlan(length: 100, connections: 2, minimumSize: 10)
        let first = plan.assign()!
        let second = plan.assign()!
        #expect((first.start, first.end, second.start, second.end) == (0, 50, 50, 100))
        #expect(plan.received(40, segment: first.id) == .init(kept: 40, isSegmentDone: false))
        #expect(plan.received(50, segment: second.id) == .init(kept: 50, isSegmentDone: true))
        // The second connection is free: the first has 10 left, under twice the minimum: nothing to take.
        #expect(plan.assign() == nil)

        var wide = SegmentPlan(length: 100, connections: 2, minimumSize: 10)
        let slow = wide.assign()!
        let fast = wide.assign()!
        _ = wide.received(10, segment: slow.id)
        _ = wide.received(50, segment: fast.id)
        // 40 left on the slow one: the new segment takes its second half, and the slow one now ends at 30.
        let stolen = wide.assign()!
        #expect((stolen.start, stolen.end) == (30, 50))
        #expect(wide.segments.first { $0.id == slow.id }?.end == 30)
        // Bytes the slow segment receives past its new end are not its own.
        #expect(wide.received(25, segment: slow.id) == .init(kept: 20, isSegmentDone: true))
        #expect(wide.received(20, segment: stolen.id) == .init(kept: 20, isSegmentDone: true))
        #expect(wide.isComplete && wide.receivedBytes == 100 && wide.doneRanges == [0..<100])
    }

    @Test func aFailedRunKeepsWhatItReceivedAndTheRestWaits() {
        var plan = SegmentPlan(length: 100, connections: 2, minimumSize: 10)
        let first = plan.assign()!
        _ = plan.assign()!
        _ = plan.received(30, segment: first.id)
        let before = plan.receivedBytes
        plan.failed(segment: first.id)
        #expect(plan.receivedBytes == before)
        #expect(plan.waiting == [30..<50])
        #expect(plan.doneRanges == [0..<30])
        // Its events after the end count for nothing.
        #expect(plan.received(5, segment: first.id) == .init(kept: 0, isSegmentDone: false))
        let again = plan.assign()!
        #expect((again.start, again.end) == (30, 50))
    }

    @Test func aResumedFileFetchesOnlyWhatIsMissing() {
        let plan = SegmentPlan(length: 100, connections: 4, minimumSize: 10, done: [0..<30, 60..<70, 95..<200])
        #expect(plan.receivedBytes == 45)
        #expect(plan.doneRanges == [0..<30, 60..<70, 95..<100])
        #expect(plan.waiting.reduce(0) { $0 + $1.count } == 55)
        #expect(SegmentPlan.merged(plan.waiting + plan.doneRanges) == [0..<100])
    }

    /// Random assignments, pieces (often past a shortened end) and failures over small files: no byte is kept
    /// twice, the count is the bytes kept and never goes backwards, the record claims exactly the bytes kept, and
    /// the file always completes.
    @Test func everyByteIsWrittenExactlyOnce() async {
        await forEachSeed(TestEnvironment.modelSeeds / 10) { seed in
            var random = SeededGenerator(seed: seed)
            let length = Int64.random(in: 0...3000, using: &random)
            let minimum = Int64.random(in: 1...200, using: &random)
            var written = [Bool](repeating: false, count: Int(length))
            let done = (0..<Int.random(in: 0...3, using: &random)).map { _ -> Range<Int64> in
                let start = Int64.random(in: 0...max(0, length), using: &random)
                return start..<min(length, start + Int64.random(in: 0...500, using: &random))
            }
            for range in done { for byte in range { written[Int(byte)] = true } }
            var plan = SegmentPlan(
                length: length, connections: Int.random(in: 1...8, using: &random), minimumSize: minimum, done: done)
            var counted = plan.receivedBytes
            var steps = 0
            while !plan.isComplete {
                steps += 1
                #expect(steps < 100_000, "seed \(seed): no progress")
                if steps >= 100_000 { return }
                let roll = Int.random(in: 0..<10, using: &random)
                if plan.segments.isEmpty || roll < 2 {
                    if plan.assign() == nil, plan.segments.isEmpty {
                        Issue.record("seed \(seed): incomplete with nothing to segment")
                        return
                    }
                } else if roll == 2 {
                    plan.failed(segment: plan.segments[Int.random(in: 0..<plan.segments.count, using: &random)].id)
                } else {
                    let segment = plan.segments[Int.random(in: 0..<plan.segments.count, using: &random)]
                    let piece = plan.received(Int64.random(in: 0...400, using: &random), segment: segment.id)
                    for byte in segment.next..<(segment.next + piece.kept) {
                        #expect(!written[Int(byte)], "seed \(seed): byte \(byte) written twice")
                        written[Int(byte)] = true
                    }
                }
                #expect(plan.receivedBytes >= counted, "seed \(seed): the count went back")
                counted = plan.receivedBytes
                #expect(counted == Int64(written.filter { $0 }.count), "seed \(seed)")
                #expect(plan.doneRanges.reduce(0) { $0 + Int64($1.count) } == counted, "seed \(seed)")
                #expect(plan.segments.allSatisfy { $0.remaining >= 0 && $0.start <= $0.next }, "seed \(seed)")
            }
            #expect(written.allSatisfy { $0 }, "seed \(seed)")
            #expect(plan.doneRanges == (length == 0 ? [] : [0..<length]), "seed \(seed)")
        }
    }

    @Test func theRecordReadsBackAndRefusesAnythingElse() throws {
        let record = SegmentRecord(
            length: 5_000_000, validator: "\"5e1f-a2b3\"", done: [1000..<2000, 0..<1000, 4000..<4001])
        let text = try #require(record.encoded())
        #expect(text == "nq-segments 1\nlength 5000000\nvalidator \"5e1f-a2b3\"\ndone 0-1999\ndone 4000-4000\n")
        #expect(
            SegmentRecord.decode(text)
                == SegmentRecord(length: 5_000_000, validator: "\"5e1f-a2b3\"", done: [0..<2000, 4000..<4001]))
        #expect(SegmentRecord(length: 1, validator: "a\nb", done: []).encoded() == nil)
        for bad in [
            "", "nq-segments 2\nlength 5\nvalidator x\n", "nq-segments 1\nlength -1\nvalidator x\n",
            "nq-segments 1\nlength 5\n", "nq-segments 1\nlength 5\nvalidator \n",
            "nq-segments 1\nlength 5\nvalidator x\ndone 3-2\n", "nq-segments 1\nlength 5\nvalidator x\ndone 0-5\n",
            "nq-segments 1\nlength 5\nvalidator x\ndone 2-3\ndone 0-1\n",
            "nq-segments 1\nlength 5\nvalidator x\ndone 0-1\ndone 2-3\n",
            "nq-segments 1\nlength 5\nvalidator x\nextra\n", "nq-segments 1\nlength 5\nvalidator x\ndone 1\n",
        ] {
            #expect(SegmentRecord.decode(bad) == nil, "\(bad)")
        }
        #expect(SegmentRecord.decode("nq-segments 1\nlength 0\nvalidator W/x\n")?.done == [])
    }
}
