import Foundation
import TestSupport
import Testing

/// The tests' admission (see `AdmissionTrait`): a test runs on its slot's own thread, before and after it suspends, and
/// no more tests run at once than there are slots; a task it starts unstructured (the library's kind) runs elsewhere.
@Suite(
    .admitted, .timeLimit(.minutes(10)),
    .enabled(if: AdmissionTrait.testSlots > 0, "NQ_TEST_SLOTS=0 admits every test at once")
) struct TestAdmissionTests {
    @Test(arguments: 0..<3) func aTestRunsOnItsSlotsThread(_ run: Int) async {
        #expect(AdmissionTrait.isOnASlotsThread)
        await Task.yield()
        #expect(AdmissionTrait.isOnASlotsThread)
        #expect(await Task.detached { AdmissionTrait.isOnASlotsThread }.value == false)
    }

    @Test func noMoreTestsRunThanThereAreSlots() async {
        let admitted = await AdmissionTrait.admittedCount
        #expect(admitted >= 1 && admitted <= AdmissionTrait.testSlots, "\(admitted) of \(AdmissionTrait.testSlots)")
    }
}
