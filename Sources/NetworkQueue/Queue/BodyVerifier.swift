import Dispatch
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Holds one transfer's body to the request's ``NetworkRequest/Integrity-swift.struct/checksum`` and the response's own digests
/// (``DigestRules``), hashing it as it streams.
///
/// A value kept in its transfer's ``TransferPipeline`` (no allocation of its own), and cheap when there is nothing to
/// check (the common case: no checksum, no digest field): the hashing machinery is made only once a head asks for it.
/// Only the transfer's events, which are serial, call it: ``begin(_:continuing:)``, then ``update(_:)``, then
/// ``finish()``.
struct BodyVerifier {
    private let checksum: Checksum?
    private let verifiesServerDigests: Bool
    private var hashing: Hashing?

    /// A verifier for a request, or nil when it has nothing to check.
    init?(checksum: Checksum?, verifiesServerDigests: Bool) {
        guard checksum != nil || verifiesServerDigests else { return nil }
        self.checksum = checksum
        self.verifiesServerDigests = verifiesServerDigests
    }

    /// The final head arrived: decides what to check. `part` is the part file a 206 continues (its
    /// first `length` bytes are hashed first, for the checks that cover the whole file).
    mutating func begin(_ response: ResponseHead, continuing part: (url: URL, length: Int64)?) {
        var promises =
            verifiesServerDigests
            ? DigestRules.promises(of: response, continuesPart: part != nil, preferring: checksum?.algorithm) : []
        if let checksum { promises.insert(.init(checksum: checksum, scope: .representation), at: 0) }
        hashing = promises.isEmpty ? nil : Hashing(promises, part: part)
    }

    /// A piece of the body (as delivered: decoded), valid only during this call.
    func update(_ bytes: UnsafeRawBufferPointer) {
        hashing?.update(bytes)
    }

    /// The body ended: the first check that failed, as what was expected and what arrived; nil when every
    /// check passed (or there was none).
    func finish() -> (expected: Checksum, actual: Checksum)? {
        hashing?.finish()
    }
}

/// The hashes of one response body, computed on a serial queue of their own beside the transport's
/// thread (which writes the file meanwhile), so that a checksum costs little time. The body is copied into
/// a few reused buffers of ``bufferSize`` bytes: when all are waiting for the queue, the transport waits
/// (memory stays bounded), and no piece of the transport's is kept alive, which would make the allocator
/// fetch fresh pages for every piece.
private final class Hashing: Sendable {
    /// One hash the body is checked against.
    private struct Check {
        var expected: Checksum
        /// True: the part file's bytes come first (a continued download's whole file).
        var includesPart: Bool
        var digest: any StreamingDigest
    }

    /// Which buffer the transport's thread fills and how full it is, and the free ones.
    private struct Buffers {
        var filling: Int?
        var count = 0
        var free = Array(0..<Hashing.bufferCount)
    }

    static let bufferCount = 4
    static let bufferSize = 1 << 20

    /// Touched on `queue` only; locked because the type cannot show that.
    private let checks: Locked<[Check]>
    private let buffers = Locked(Buffers())
    /// The buffers, one allocation. A buffer is written by the transport's thread while it fills it and
    /// read by the queue once handed over: the `freeBuffers` semaphore and the lock order the two.
    nonisolated(unsafe) private let storage = UnsafeMutableRawPointer.allocate(
        byteCount: Hashing.bufferCount * Hashing.bufferSize, alignment: 64)
    private let queue = DispatchQueue(label: "NetworkQueue.hash", qos: .userInitiated)
    /// Counts the free buffers. Made at 0 and signalled up to ``bufferCount``: libdispatch traps when a
    /// semaphore is disposed of below the value it was made with, which a transfer that ends while a buffer
    /// is being filled (dropped, cancelled, paused, retried: no ``finish()``) would otherwise do.
    private let freeBuffers = DispatchSemaphore(value: 0)

    init(_ promises: [DigestRules.Promise], part: (url: URL, length: Int64)?) {
        let engine = DigestEngine.preferred
        let checks = promises.map {
            Check(
                expected: $0.checksum, includesPart: part != nil && $0.scope == .representation,
                digest: engine.make($0.checksum.algorithm))
        }
        self.checks = Locked(checks)
        for _ in 0..<Self.bufferCount { freeBuffers.signal() }
        if let part, checks.contains(where: \.includesPart) {
            queue.async { self.hashPart(part.url, length: part.length) }
        }
    }

    deinit { storage.deallocate() }

    /// Copies `bytes` into the buffers, handing each full one to the queue.
    func update(_ bytes: UnsafeRawBufferPointer) {
        var offset = 0
        while offset < bytes.count {
            let (index, count) = takeBuffer()
            let copied = min(Self.bufferSize - count, bytes.count - offset)
            (storage + index * Self.bufferSize + count).copyMemory(from: bytes.baseAddress! + offset, byteCount: copied)
            offset += copied
            if count + copied == Self.bufferSize {
                hand(index, count: Self.bufferSize)
            } else {
                buffers.withLock { $0.count = count + copied }
            }
        }
    }

    /// The buffer being filled and how full it is; a free one (waiting for one) when none is.
    private func takeBuffer() -> (index: Int, count: Int) {
        if let filling = buffers.withLock({ buffers in buffers.filling.map { ($0, buffers.count) } }) { return filling }
        freeBuffers.wait()
        return buffers.withLock { buffers in
            let index = buffers.free.removeLast()
            buffers.filling = index
            buffers.count = 0
            return (index, 0)
        }
    }

    /// Hashes the first `count` bytes of buffer `index` on the queue, then frees it for the transport.
    private func hand(_ index: Int, count: Int) {
        buffers.withLock { buffers in
            buffers.filling = nil
            buffers.count = 0
        }
        queue.async {
            let bytes = UnsafeRawBufferPointer(start: self.storage + index * Self.bufferSize, count: count)
            self.checks.withLock { checks in for check in checks { check.digest.update(bytes) } }
            self.buffers.withLock { $0.free.append(index) }
            self.freeBuffers.signal()
        }
    }

    func finish() -> (expected: Checksum, actual: Checksum)? {
        if let (index, count) = buffers.withLock({ buffers in buffers.filling.map { ($0, buffers.count) } }) {
            hand(index, count: count)
        }
        return queue.sync {
            checks.withLock { checks in
                for check in checks {
                    let actual = Checksum(check.expected.algorithm, digest: check.digest.finalize())
                    if !check.expected.matches(actual) { return (check.expected, actual) }
                }
                return nil
            }
        }
    }

    /// Hashes the first `length` bytes of the part file into the whole-file checks. A part that reads
    /// short leaves those checks short: they fail.
    private func hashPart(_ url: URL, length: Int64) {
        FilePieces.read(url, upTo: length) { bytes in
            checks.withLock { checks in for check in checks where check.includesPart { check.digest.update(bytes) } }
        }
    }
}
