import Foundation

/// The ordered outbox: the machine's lock order is the delivery order. It also decides what is worth posting:
/// events only someone can hear, log records only while someone logs.
///
/// An item that someone is waiting for is *urgent* and makes a delivery pass due; others (a settlement nobody
/// hears about) wait for the next pass, or for the outbox to hold ``batchSize`` items. A due pass runs at once
/// after a quiet spell, and at most once per ``passInterval`` while events flow: a batch of small requests is
/// delivered in batches, not with a thread woken per request.
struct Outbox {
    /// Items that make a pass due even when none is urgent.
    static let batchSize = 4_096
    /// The shortest time between two delivery passes, in seconds: 1 ms, far below what a person sees, and
    /// enough for a batch of small files to hand over about ten requests' events a pass.
    static let passInterval = 0.001
    /// The longest, while events flood in (see ``take(now:)``): 10 ms, still below what a person sees.
    static let longestPassInterval = 0.01
    /// The items a pass may carry per millisecond of the interval before the next: a pass that took more stretches
    /// the next interval, in proportion, up to ``longestPassInterval``.
    static let itemsPerMillisecond = 16

    private(set) var items: [Delivery] = []
    /// True when a pass became due since the machine last handed over its actions.
    private var isUnannounced = false
    /// Paces the passes (see ``passInterval``); scheduled from the pass's announcement to its take.
    private var pacing = DeliveryThrottle(interval: passInterval)
    /// True from the moment a pass becomes due until it takes the items.
    private var isScheduled: Bool { isUnannounced || pacing.isScheduled }
    /// True when a delegate or an `events()` subscriber may hear queue events; when false, events nobody can
    /// receive are not posted.
    var hasListeners = false
    /// True while a ``NetworkQueue/logHandler`` is set: decisions are posted as log records.
    var isLogging = false
    /// The wall-clock time (seconds since 1970) at 0 on the queue's clock, set by the shell: it dates log
    /// records, and an HTTP-date `Retry-After` that comes without a `Date` header.
    var wallClockOrigin: Double = 0

    /// Appends an item; a pass becomes due when it is urgent or the outbox is full.
    mutating func post(_ item: Delivery, urgent: Bool = true) {
        items.append(item)
        guard !isScheduled, urgent || items.count >= Self.batchSize else { return }
        isUnannounced = true
    }

    /// Posts a queue event unless nobody can receive it: no listener and, for a request's end, no completion
    /// handler. Progress always goes out: ``NetworkQueue/foundationProgress`` follows it.
    mutating func post(_ event: NetworkQueueEvent) {
        if !hasListeners {
            switch event {
            case .didFinish(let request, _), .didFail(let request, _):
                guard request.completionHandler != nil else { return }
            case .didUpdateProgress: break
            case .didStart, .didReceiveHeaders, .didCollectMetrics, .willRetry, .didPause, .didResume, .sourceDidFail,
                .serverHoldChanged, .queueDidFinish:
                return
            }
        }
        post(.event(event))
    }

    /// Posts a record about `request` when someone logs; `message` is built only then.
    mutating func log(
        _ level: NetworkQueueLogRecord.Level, _ event: NetworkQueueLogRecord.Event, _ request: NetworkRequest,
        now: Double, _ message: () -> String
    ) {
        guard isLogging else { return }
        let record = NetworkQueueLogRecord(
            level: level, event: event, message: message(), request: request, timestamp: wallClock(at: now))
        post(.log(record))
    }

    /// A redirect the transport met.
    mutating func log(_ redirect: TransferRedirect, of request: NetworkRequest, now: Double) {
        // Redacting parses the URL: only when someone logs.
        guard isLogging else { return }
        let target = redirect.to.map(Redaction.describe) ?? "(no URL)"
        if let refusal = redirect.refusal {
            log(.warning, .redirectRefused, request, now: now) {
                "\(redirect.statusCode) redirect to \(target) refused: \(NetworkQueueError.transport(refusal))"
            }
        } else {
            log(.info, .redirectFollowed, request, now: now) { "\(redirect.statusCode) redirect followed to \(target)" }
        }
    }

    /// `now` on the queue's clock as a wall-clock date.
    func wallClock(at now: Double) -> Date { Date(timeIntervalSince1970: wallClockOrigin + now) }

    /// Once after a pass became due, at `now`: the delay after which the actions handed over then ask for it
    /// (0 after a quiet spell); nil otherwise.
    mutating func announce(now: Double) -> Double? {
        guard isUnannounced else { return nil }
        isUnannounced = false
        return pacing.change(at: now) ?? 0
    }

    /// Takes everything posted so far, for one delivery pass at `now`.
    ///
    /// A pass of n items makes the next wait n / ``itemsPerMillisecond`` milliseconds (1 to 10): while more than
    /// 16,000 items a second flow (a batch of small files: two or three a request), passes come every 10 ms and
    /// each wakes the delivery thread for hundreds of items; a quieter queue keeps its 1 ms passes. Measured on
    /// the Demo's 20,000 small files: 12% less CPU, a tenth of the timer's wake-ups.
    mutating func take(now: Double) -> [Delivery] {
        pacing.flushed(at: now)
        let stretch = Double(items.count) / Double(Self.itemsPerMillisecond) * 0.001
        pacing.interval = min(Self.longestPassInterval, max(Self.passInterval, stretch))
        defer { items = [] }
        return items
    }
}
