import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Revalidated files in the engine alone (DESIGN semantics 23), at a real batch's scale: no HEAD, even with accurate
/// progress on; each start carries the file's validator; a 304 ends each request with its file kept.
@Suite(.admitted, .timeLimit(.minutes(10))) struct RevalidationMachineTests {
    @Test func aBigBatchOfRevalidatedFilesSendsNoHeadAndEndsEachWithItsFileKept() async throws {
        // 100,000 requests and their claims: one of the suite's heavy tests (see ``HeavyTests``).
        try await HeavyTests.exclusively { try bigBatch() }
    }

    private func bigBatch() throws {
        var driver = MachineDriver(limit: 8)
        driver.machine.showsAccurateProgress = true
        let folder = "/nq-revalidation-\(UUID().uuidString)"
        let count = TestEnvironment.bigBatch
        let state = ExistingFileRules.FileState(
            size: 10, modified: Date(timeIntervalSince1970: 1), conditional: .entityTag("\"v1\""))
        var claims: [DestinationClaim] = []
        defer { for claim in claims { claim.endRequest() } }
        for tag in 1...count {
            let file = URL(fileURLWithPath: "\(folder)/f\(tag)")
            let request = NetworkRequest(
                URLRequest(url: URL(string: "http://example.test/\(tag)")!), destination: .file(file),
                fileOptions: .init(existingFile: .revalidate), tag: tag)
            let claim = try #require(DestinationClaim.claim(file))
            claims.append(claim)
            driver.requests[tag] = request
            let (slot, actions) = driver.machine.add(request, claim: claim, existingFile: state, now: 0)
            driver.slots[tag] = slot
            _ = driver.apply(actions)
        }
        _ = driver.go()
        let head = ResponseHead(
            url: URL(string: "http://example.test/")!, statusCode: 304, httpVersion: "HTTP/1.1",
            fields: [.init(name: "ETag", value: "\"v1\"")])
        var (starts, preflights, conditional, kept) = (0, 0, 0, 0)
        while let transfer = driver.transfers.first {
            starts += 1
            switch transfer.start.body {
            case .preflight: preflights += 1
            case .checked(_, _, _, let revalidation, _, _): if revalidation == .entityTag("\"v1\"") { conditional += 1 }
            }
            let (slot, token) = (transfer.start.slot, transfer.start.token)
            let reading = HeadReading(head, continuedFrom: 0, acceptableStatusCodes: 200..<300, revalidates: true)
            let heard = TransferNotice(slot: slot, token: token, kind: .head(.head(head), reading))
            _ = driver.apply(driver.machine.notice(heard, now: 0))
            driver.transfers.removeFirst()
            let ended = driver.machine.notice(
                TransferNotice(slot: slot, token: token, kind: .event(.completed(nil))), now: 0)
            for item in driver.machine.takeDeliveries() {
                guard case .event(.didFinish(let request, let response)) = item else { continue }
                if response.keptExistingFile, response.statusCode == 304,
                    response.fileURL?.path == "\(folder)/f\(request.tag)"
                {
                    kept += 1
                }
            }
            _ = driver.apply(ended)
        }
        #expect(starts == count && preflights == 0 && conditional == count)
        #expect(kept == count)
        #expect(Array(driver.machine.table.records).isEmpty)
    }
}
