import TestSupport
import Testing

@testable import NetworkQueue

/// An engine pass's wake: one sink per owner, flushed in order when the pass ends, a sink enlisted during the flush
/// flushed too, no owner held after it, sinks reused.
@Suite(.admitted, .timeLimit(.minutes(10))) struct EngineWakeTests {
    final class Owner {
        let name: String
        init(_ name: String) { self.name = name }
    }

    /// Records its flushes in a shared log; may enlist another owner's sink while flushing.
    final class Recording: EngineWake.Sink {
        nonisolated(unsafe) static var log: [String] = []
        var kept: [Int] = []
        var onFlush: (() -> Void)?

        required init() {}

        override func flush() {
            let name = (owner as? Owner)?.name ?? "?"
            Self.log.append("\(name) \(kept)")
            kept = []
            let then = onFlush
            onFlush = nil
            then?()
        }
    }

    @Test func sinksAreOnePerOwnerFlushedInOrderAndLetGo() {
        Recording.log = []
        let wake = EngineWake()
        var a: Owner? = Owner("a")
        let b = Owner("b")
        weak let weakA = a
        wake.sink(of: a!, Recording.self).kept.append(1)
        let second = wake.sink(of: b, Recording.self)
        second.kept.append(2)
        let first = wake.sink(of: a!, Recording.self)
        first.kept.append(3)
        let late = Owner("late")
        // Flushing a's sink enlists another: it is flushed in the same call.
        nonisolated(unsafe) var third: Recording?
        first.onFlush = {
            third = wake.sink(of: late, Recording.self)
            third?.kept.append(4)
        }
        wake.flush()
        #expect(Recording.log == ["a [1, 3]", "b [2]", "late [4]"])
        // No owner is held once the pass ends.
        a = nil
        #expect(weakA == nil)
        #expect(first.owner == nil)
        // The next pass reuses a flushed sink rather than making one.
        let reused = wake.sink(of: b, Recording.self)
        #expect(third !== nil && reused === third)
        #expect(second !== first && third !== first && third !== second)
        #expect(reused.owner === b)
        wake.flush()
        #expect(Recording.log.last == "b []")
    }

    @Test func onlyTheThreadThatInstalledAWakeSeesIt() async {
        #expect(EngineWake.current == nil)
        let wake = EngineWake()
        EngineWake.install(wake)
        #expect(EngineWake.current === wake)
        EngineWake.install(nil)
        #expect(EngineWake.current == nil)
    }
}
