/// One download's bytes per second over the last one and a half to three seconds, from (time, cumulative
/// bytes) samples passed in: the queue's ``ThroughputMeter`` window, kept in three samples so that a
/// request's meter allocates nothing.
struct RateWindow {
    private var anchor: (time: Double, total: Int64)
    private var middle: (time: Double, total: Int64)
    private var last: (time: Double, total: Int64)
    let window: Double

    /// A window starting at `time` with nothing moved.
    init(startingAt time: Double, window: Double = 3) {
        anchor = (time, 0)
        middle = anchor
        last = anchor
        self.window = window
    }

    mutating func record(total: Int64, at time: Double) {
        last = (time, total)
        if time - middle.time >= window / 2 {
            anchor = middle
            middle = last
        }
    }

    /// Bytes per second from the oldest kept sample to `time`, or nil before any time has passed.
    func rate(at time: Double) -> Double? {
        let elapsed = max(time, last.time) - anchor.time
        guard elapsed > 0, last.time > anchor.time else { return nil }
        return Double(last.total - anchor.total) / elapsed
    }
}
