import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// When the outbox asks for a delivery pass: at once after a quiet spell, at most once per pass interval while
/// events flow, and never for what nobody hears.
@Suite(.admitted, .timeLimit(.minutes(10))) struct OutboxTests {
    private let request = NetworkRequest(URLRequest(url: URL(string: "http://127.0.0.1/a")!))

    private func listening() -> Outbox {
        var outbox = Outbox()
        outbox.hasListeners = true
        return outbox
    }

    @Test func aPassAfterAQuietSpellIsDueAtOnceAndTheNextWaitsForTheInterval() {
        var outbox = listening()
        outbox.post(.didStart(request))
        #expect(outbox.announce(now: 10.0) == 0)
        // Announced once: the events posted before the pass ride on it.
        outbox.post(.queueDidFinish)
        #expect(outbox.announce(now: 10.0) == nil)
        #expect(outbox.take(now: 10.0).count == 2)
        // Posted 0.2 ms after the pass: due 0.8 ms later.
        outbox.post(.didStart(request))
        let delay = outbox.announce(now: 10.000_2)
        #expect(delay.map { abs($0 - 0.000_8) < 1e-9 } == true)
        #expect(outbox.take(now: 10.001).count == 1)
        // A quiet spell longer than the interval: at once again.
        outbox.post(.didStart(request))
        #expect(outbox.announce(now: 10.5) == 0)
    }

    @Test func aFloodOfEventsGetsPassesThatStretchToTheLongestInterval() {
        var outbox = listening()
        var now = 0.0
        var due: Double?
        var passes = 0
        var delivered = 0
        // 100,000 events, one every 10 µs (one second): the shell runs each pass when it falls due.
        for _ in 0..<100_000 {
            now += 0.000_01
            if let time = due, time <= now {
                delivered += outbox.take(now: time).count
                passes += 1
                due = nil
            }
            outbox.post(.didStart(request))
            if let delay = outbox.announce(now: now) { due = now + delay }
        }
        if let time = due { delivered += outbox.take(now: time).count }
        #expect(delivered == 100_000)
        // 100,000 items a second: the first pass at once (1 item), the next after 1 ms (100 items), then 6.25 ms
        // (625), then every 10 ms (1,000 each) to the end of the second.
        #expect(passes == 3 + 99)
        // The flood over, one event 20 ms later: a pass at once, and the next interval back to 1 ms.
        now += 0.02
        outbox.post(.didStart(request))
        #expect(outbox.announce(now: now) == 0)
        #expect(outbox.take(now: now).count == 1)
        outbox.post(.didStart(request))
        let delay = outbox.announce(now: now + 0.000_2)
        #expect(delay.map { abs($0 - 0.000_8) < 1e-9 } == true)
    }

    @Test func eventsNobodyHearsMakeNoPass() {
        var outbox = Outbox()
        outbox.post(.didStart(request))
        #expect(outbox.announce(now: 1) == nil)
        #expect(outbox.take(now: 1).isEmpty)
    }
}
