/// One pass of a transport's event loop: for a transport whose own thread reports the events of many transfers in a
/// row (a drain of completions, a poll's readable sockets), so that each queue hears them in one lock round trip
/// rather than one per event.
///
/// Inside ``run(_:)``, each event a queue's transfer reports is handled as always before `events` returns (its body
/// written to the file, hashed), but what the queue's engine must decide about it waits until `body` returns: then
/// each queue applies its transfers' events of the pass in the order they came, under one acquisition of its lock,
/// and performs what they ask once. ``CurlTransport`` runs each pass of its engine this way.
///
/// Do not wait inside a pass for what a queue does about an event reported in the same pass (a cancel, a start): it
/// happens when the pass ends. Passes do not nest: a pass inside another is part of it.
public enum TransportPass {
    /// Runs `body` as one pass on the calling thread, then hands each queue what it must hear of the events reported
    /// in it (even when `body` throws).
    public static func run<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        if EngineWake.current != nil { return try body() }
        let wake = EngineWake()
        EngineWake.install(wake)
        defer {
            wake.flush()
            EngineWake.install(nil)
        }
        return try body()
    }
}
