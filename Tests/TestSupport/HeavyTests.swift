/// The suite's heaviest tests (batches of 100,000 requests) and the heap-growth measurement (which reads the whole
/// process's heap) run one at a time; every other test runs beside them as before. On two cores, two such batches at
/// once starved the process's dispatch threads for tens of seconds: a cancel or a timer of an unrelated test waited
/// past its test's 30–60 s bounds.
public enum HeavyTests {
    private static let gate = Slots(count: 1)

    /// Runs `body` once no other heavy test runs, and keeps the others waiting until it returns. A run with smaller
    /// batches (`NQ_BIG_BATCH` under 100,000: the sanitizers' runs) runs it at once, beside the others: there the
    /// batches are light, and holding the other heavy tests back only stretched the time the rest shared the cores
    /// with one of them (tests with a 60 s bound ran out under the thread sanitizer).
    public static func exclusively<Result>(_ body: () async throws -> Result) async throws -> Result {
        guard TestEnvironment.bigBatch >= 100_000 else { return try await body() }
        return try await gate.holding(body)
    }
}
