import TestSupport
import Testing

@testable import NetworkQueue

@Suite(.admitted, .timeLimit(.minutes(10))) struct DeadlineHeapTests {
    @Test func popsDueEntriesEarliestFirstAndKeepsTheRest() {
        var heap = DeadlineHeap<Int>()
        for (id, deadline) in [(1, 5.0), (2, 1.0), (3, 3.0), (4, 9.0), (5, 3.0)] {
            heap.insert(.init(deadline: deadline, id: id, stamp: UInt64(id)))
        }
        #expect(heap.earliest == 1.0)
        #expect(heap.popDue(at: 3.0).map(\.deadline) == [1.0, 3.0, 3.0])
        #expect(heap.earliest == 5.0)
        #expect(heap.popDue(at: 4.9).isEmpty)
        #expect(heap.popDue(at: 100).map(\.id) == [1, 4])
        #expect(heap.earliest == nil)
    }

    @Test func seededRandomDeadlinesComeOutSorted() {
        var rng = SeededGenerator(seed: 7)
        var heap = DeadlineHeap<Int>()
        var all: [Double] = []
        for id in 0..<5_000 {
            let deadline = Double.random(in: 0...1_000, using: &rng)
            all.append(deadline)
            heap.insert(.init(deadline: deadline, id: id, stamp: 0))
        }
        var popped: [Double] = []
        var now = 0.0
        while heap.count > 0 {
            now += Double.random(in: 0...50, using: &rng)
            popped += heap.popDue(at: now).map(\.deadline)
        }
        #expect(popped == all.sorted())
    }
}
