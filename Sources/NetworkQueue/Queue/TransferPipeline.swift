import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One transfer's own pipeline between its transport and the engine: the file its body goes to and the
/// verifier that hashes it. It reads the final head once (``HeadReading``: the `Range` outcome, whether the
/// body is the resource's) and hands that one reading to the file, the verifier and the engine.
///
/// A transfer's events are serial, and the pipeline runs them outside the queue's lock (file writes and
/// hashing happen here), then tells the engine what it must hear, as the transfer's `slot` and `token`.
///
/// One object a transfer (its verifier a value inside it): the transport's event and body callbacks capture it
/// alone, so that they need no context of their own.
///
/// A file attempt that may use several connections has its connections here too (``Connections``, in
/// `TransferPipeline+Connections.swift`): the pipeline is the one shell of a file attempt, whatever its connections.
final class TransferPipeline: ConnectionShell, @unchecked Sendable {
    /// What the engine hears about one transport event.
    enum Step {
        /// The engine hears the event as it is (``TransferNotice/Kind/event(_:)``; not copied into the step: the caller
        /// still holds it).
        case event
        /// A final head, read.
        case head(HeadReading)
        /// The file could not be written: the request fails.
        case fileFailed(NetworkQueueError)
        /// The body did not hash as expected.
        case integrityFailed(expected: Checksum, actual: Checksum)
    }

    /// The queue whose engine hears the transfer. Held strongly: a queue stays alive while it has transfers in
    /// flight.
    let owner: NetworkQueue
    let slot: Int
    let token: UInt64
    /// The file the body goes to (file destination).
    let sink: FileSink?
    /// The checks the body is held to (nil when there are none, or for a HEAD).
    // Unchecked, and why the class is `@unchecked Sendable`: only the transfer's events touch it, and they are
    // serial (a split download's head and end are ordered by the queue's lock).
    @exclusivity(unchecked) private var verifier: BodyVerifier?
    /// The request's acceptable statuses (nil: any); unused for a HEAD.
    private let acceptableStatusCodes: Range<Int>?
    /// True when the transfer asks for its existing file only if it changed: a 304 then keeps that file.
    private let revalidates: Bool
    /// True once a 304 said the existing file is the resource.
    @exclusivity(unchecked) private var keepsExistingFile = false
    /// True when the notices may wait for the end of an engine pass (``NetworkQueue/tell(_:batching:)``): false for a
    /// file that may be shared, whose connections' events reach the engine directly, until one connection carries the
    /// file (its earlier events were all applied at once: what it tells next may wait for the pass's end).
    // Unchecked: set by the carrying connection's thread, then read by the same connection's events alone.
    @exclusivity(unchecked) var batches: Bool
    /// The connections of a file that may be shared over several (nil for any other transfer): the transport they run
    /// on and each one's route.
    let connections: Connections?
    /// The rule the first connection's final head is read by, when the pipeline started that connection itself as its
    /// own transfer (``firstEvent(_:)``): a head it may share begins the download; any other is carried.
    let firstRule: SplitRules.CarryRule?
    /// The first connection's route, once its head began the download (nil before, and for a file it carries).
    // Unchecked: set by the first connection's thread at its head, then read by its own events and by the work that
    // follows them (done on the same thread, or after the queue's lock ordered it).
    @exclusivity(unchecked) var firstRoute: Route?
    /// True once the first connection's final head came (started by the pipeline itself).
    @exclusivity(unchecked) var firstHeadCame = false
    /// The first connection's handle's cell, when the pipeline started it itself: its route's, should its head begin
    /// the download. Weak, as a route's: the handle holds the transport's callbacks, which hold this pipeline.
    weak var firstCell: TransferCell?

    /// A pipeline for transfer `token` of the request in `slot` of `owner` (`request` nil: a HEAD preflight), writing
    /// to `sink`; with `connections`, of a file that may be shared over several, and with `firstRule`, one whose first
    /// connection it starts itself, read by that rule (see ``firstEvent(_:)``).
    init(
        owner: NetworkQueue, slot: Int, token: UInt64, request: NetworkRequest?, sink: FileSink?,
        revalidates: Bool = false, connections: Connections? = nil, firstRule: SplitRules.CarryRule? = nil
    ) {
        self.owner = owner
        self.revalidates = revalidates
        self.connections = connections
        self.firstRule = connections == nil ? nil : firstRule
        batches = connections == nil
        self.slot = slot
        self.token = token
        self.sink = sink
        verifier = request.flatMap {
            BodyVerifier(checksum: $0.checksum, verifiesServerDigests: $0.verifiesServerDigests)
        }
        acceptableStatusCodes = request?.acceptableStatusCodes
    }

    /// Handles one transport event (the transfer's events callback): the file and the hashes first, then the engine
    /// hears the event, or the failure.
    func receive(_ event: TransferEvent) {
        switch step(event) {
        case .event: tell(.event(event))
        case .head(let reading): tell(.head(event, reading))
        case let failed: pass(failed)
        }
    }

    /// Writes and hashes a body piece lent by the transport (the transfer's ``LentBodyReceiver``), then tells the
    /// engine its count, or the file's or the checks' failure. Returns false on a failure: the transport stops the
    /// transfer before it reads more.
    func lend(_ piece: borrowing LentBytes) -> Bool {
        // A body sent with a 304 (none is allowed) is no one's.
        if keepsExistingFile { return true }
        let count = piece.count
        switch piece.withUnsafeBytes({ take($0) }) {
        case nil:
            tell(.body(count))
            return true
        case let failed?:
            pass(failed)
            return false
        }
    }

    /// Tells the engine that the transfer's file or checks failed (the steps that are not an event or a head).
    func pass(_ failed: Step) {
        switch failed {
        case .fileFailed(let error): tell(.file(.failed(error)))
        case .integrityFailed(let expected, let actual): tell(.checksumMismatch(expected: expected, actual: actual))
        case .event, .head: break
        }
    }

    /// Tells the engine of this transfer's notice (see ``NetworkQueue/tell(_:batching:)``).
    private func tell(_ kind: TransferNotice.Kind) {
        owner.tell(TransferNotice(slot: slot, token: token, kind: kind), batching: batches)
    }

    /// How `head`, a final head of the transfer, reads against its part and its request: what ``step(_:)`` hands on.
    func reading(of head: ResponseHead) -> HeadReading {
        HeadReading(
            head, continuedFrom: sink?.continuedFrom ?? 0, acceptableStatusCodes: acceptableStatusCodes,
            revalidates: revalidates)
    }

    /// Applies one transport event to the file and the hashes, and returns what the engine must hear.
    func step(_ event: TransferEvent) -> Step {
        switch event {
        case .head(let head) where !ResponseRules.isInterim(head):
            let reading = reading(of: head)
            if reading.isNotModified {
                // The file there is the resource: nothing is written or hashed, and the part is discarded.
                keepsExistingFile = true
                return .head(reading)
            }
            if let sink, let error = sink.begin(reading) { return .fileFailed(error) }
            if verifier != nil {
                // A 206 that continues the part: the whole-file checks hash the part's bytes first.
                var part: (URL, Int64)?
                if let sink, case .append? = reading.continuation { part = (sink.partial, sink.continuedFrom) }
                verifier?.begin(head, continuing: part)
            }
            return .head(reading)
        case .data where keepsExistingFile:
            // A body sent with a 304 (none is allowed) is no one's.
            break
        case .data(let data) where sink != nil || verifier != nil:
            if let error = data.withUnsafeBytes({ take($0) }) { return error }
        case .data:
            break
        case .completed(nil) where keepsExistingFile:
            break
        case .completed(nil):
            if let sink, let error = sink.finishWriting() { return .fileFailed(error) }
            if let (expected, actual) = verifier?.finish() {
                return .integrityFailed(expected: expected, actual: actual)
            }
        case .head, .sent, .redirect, .metrics, .completed(.some):
            // An interim head is the engine's to ignore; a failed transfer's file is discarded by the engine.
            break
        }
        return .event
    }

    /// A split download's every byte is in its part: the file is closed, then the whole part (`length` bytes) is
    /// hashed for the checks that cover the file (a digest of one range's content never applies to the file).
    func finishSplit(head: ResponseHead, length: Int64) -> Step {
        guard let sink else { return .event }
        if let error = sink.finishWriting() { return .fileFailed(error) }
        guard verifier != nil else { return .event }
        let whole =
            head.statusCode == 206
            ? ResponseHead(
                url: head.url, statusCode: 206, httpVersion: head.httpVersion,
                fields: head.fields.filter { $0.name.lowercased() != "content-digest" }) : head
        verifier?.begin(whole, continuing: (sink.partial, length))
        if let (expected, actual) = verifier?.finish() { return .integrityFailed(expected: expected, actual: actual) }
        return .event
    }

    /// A body piece to the file and the hashes; nil when all is well.
    private func take(_ bytes: UnsafeRawBufferPointer) -> Step? {
        if let sink, let error = sink.write(bytes) { return .fileFailed(error) }
        verifier?.update(bytes)
        return nil
    }
}
