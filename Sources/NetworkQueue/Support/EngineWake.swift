#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One wake of a transport's engine thread (one pass of its loop): what its transfers' events owe the queues they
/// belong to, held until the pass ends and then handed in, one lock round trip per queue for the whole pass rather
/// than one per event.
///
/// The engine thread installs its wake once (``install(_:)``) and calls ``flush()`` at the end of each pass. The
/// events' receivers find it with ``current`` (a thread-specific value: nil on every thread that is not such an
/// engine's, where events go in at once) and keep what they owe in a ``Sink`` of their own, enlisted for the pass.
/// Only the engine's thread touches its wake.
final class EngineWake {
    /// What one receiver (a queue) is owed in one pass; subclassed by the receiver, which hands it in when the pass
    /// ends. Sinks are kept for the next passes once flushed (their owner let go), so that a busy engine makes none.
    class Sink {
        /// The receiver this sink belongs to for the pass (held for it: what the sink keeps is owed to it), nil
        /// between passes.
        @exclusivity(unchecked) fileprivate(set) var owner: AnyObject?

        required init() {}

        /// Hands in what was kept this pass. Called on the engine's thread, once per pass the sink was enlisted in.
        func flush() {}
    }

    /// The sinks enlisted in this pass, in the order they were first used (usually one: one queue).
    // Unchecked, as the sinks' own lists: only the engine's thread touches a wake.
    @exclusivity(unchecked) private var sinks: [Sink] = []
    /// Flushed sinks kept for reuse (at most ``maximumSpares``).
    @exclusivity(unchecked) private var spares: [Sink] = []
    private static let maximumSpares = 4

    init() {}

    /// The wake of the calling thread's engine, nil when the thread is not one that batches its events.
    static var current: EngineWake? {
        guard let value = pthread_getspecific(key) else { return nil }
        return Unmanaged<EngineWake>.fromOpaque(value).takeUnretainedValue()
    }

    /// Makes `wake` the calling thread's (its engine's thread, for as long as it lives; the engine holds the wake).
    static func install(_ wake: EngineWake?) {
        pthread_setspecific(key, wake.map { UnsafeRawPointer(Unmanaged.passUnretained($0).toOpaque()) })
    }

    /// The sink of `owner` for this pass: the one enlisted already, or a spare or new one of type `Kept`, enlisted now.
    func sink<Kept: Sink>(of owner: AnyObject, _: Kept.Type) -> Kept {
        for sink in sinks where sink.owner === owner { return unsafeDowncast(sink, to: Kept.self) }
        let sink: Kept
        if let index = spares.lastIndex(where: { type(of: $0) == Kept.self }) {
            sink = unsafeDowncast(spares.remove(at: index), to: Kept.self)
        } else {
            sink = Kept()
        }
        sink.owner = owner
        sinks.append(sink)
        return sink
    }

    /// Ends the pass: every enlisted sink hands in what it kept, in the order enlisted. A sink enlisted while another
    /// flushes (an event its handing in caused) is flushed in the same call. No owner is held after it: a queue is
    /// not kept alive by an idle engine.
    func flush() {
        var index = 0
        while index < sinks.count {
            sinks[index].flush()
            index += 1
        }
        for sink in sinks {
            sink.owner = nil
            if spares.count < Self.maximumSpares { spares.append(sink) }
        }
        sinks.removeAll(keepingCapacity: true)
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()
}
