/// Bytes per second over a sliding window, from (time, cumulative bytes) samples passed in.
///
/// Keeps at most one sample per `resolution` seconds and forgets samples older than `window`, so memory
/// and cost per call are constant.
struct ThroughputMeter {
    private var samples: [(time: Double, total: Int64)] = []
    private var first = 0
    let window: Double
    let resolution: Double

    init(window: Double = 3, resolution: Double = 0.1) {
        self.window = window
        self.resolution = resolution
    }

    mutating func record(total: Int64, at time: Double) {
        if let last = samples.last, time - last.time < resolution, samples.count - first > 1 {
            samples[samples.count - 1] = (time, total)
        } else {
            samples.append((time, total))
        }
        while first < samples.count - 2, time - samples[first + 1].time >= window { first += 1 }
        if first > 64 {
            samples.removeFirst(first)
            first = 0
        }
    }

    /// Bytes per second between the oldest kept sample and `time`, or nil with fewer than two samples.
    func rate(at time: Double) -> Double? {
        guard samples.count - first >= 2, let last = samples.last else { return nil }
        let oldest = samples[first]
        let elapsed = max(time, last.time) - oldest.time
        guard elapsed > 0 else { return nil }
        return Double(last.total - oldest.total) / elapsed
    }

    /// Seconds to move `remaining` bytes at `rate` bytes per second: 0 when nothing remains, nil when either
    /// is unknown or the rate is not positive.
    static func timeRemaining(_ remaining: Int64?, at rate: Double?) -> Double? {
        guard let remaining else { return nil }
        if remaining <= 0 { return 0 }
        guard let rate, rate > 0 else { return nil }
        return Double(remaining) / rate
    }
}
