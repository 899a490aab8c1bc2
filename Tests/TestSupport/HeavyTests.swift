/// The suite's heaviest tests (batches of 100,000 requests) run one at a time when a whole run is at the scale tier's
/// sizes (`NQ_SCALE_TESTS=1 swift test`); every other test runs beside them as before. On two cores, two such batches at
/// once starved the process's dispatch threads for tens of seconds: a cancel or a timer of an unrelated test waited
/// past its test's 30–60 s bounds. The first tier (`swift test`: 10,000 requests) needs no gate, and the scale tier's
/// script (`.ci/scale`) runs each heavy test in a process of its own, where the gate is never waited for: a test's time
/// limit counts its own run.
public enum HeavyTests {
    private static let gate = SlotPool([()])

    /// Runs `body` once no other heavy test runs, and keeps the others waiting until it returns. A run with smaller
    /// batches (`NQ_BIG_BATCH` under 100,000: the sanitizers' runs) runs it at once, beside the others: there the
    /// batches are light, and holding the other heavy tests back only stretched the time the rest shared the cores
    /// with one of them (tests with a 60 s bound ran out under the thread sanitizer).
    public static func exclusively<Result>(_ body: () async throws -> Result) async throws -> Result {
        guard TestEnvironment.bigBatch >= 100_000 else { return try await body() }
        return try await gate.holding { _ in try await body() }
    }
}
