import Foundation
import TestSupport
import Testing

/// The test lane keeps the tests off the Swift concurrency pool (see `TestLaneTrait`): a test runs on the lane's
/// threads, before and after it suspends; an unstructured task (the library's kind) does not.
@Suite(.testLane, .timeLimit(.minutes(5))) struct TestLaneTests {
    private static func isOnTheLane() -> Bool { TestLane.isCurrentThreadOnLane }

    @Test(arguments: 0..<3) func aTestRunsOnTheLane(_ run: Int) async {
        #expect(Self.isOnTheLane())
        await Task.yield()
        #expect(Self.isOnTheLane())
        // The library's own tasks, unstructured, stay on the pool.
        #expect(await Task { Self.isOnTheLane() }.value == false)
    }
}
