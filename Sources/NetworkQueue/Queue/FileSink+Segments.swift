import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What a split part left by an earlier attempt or segment holds: read from its record, or (a part of one connection
/// continued by a split request) its bytes from 0 with its validator.
struct PartSegments: Equatable, Sendable {
    /// The ranges on disk.
    let done: [Range<Int64>]
    /// The validator they were fetched under.
    let validator: RangeRules.Validator
    /// The file's length, when the record says it (a part of one connection does not).
    let length: Int64?

    /// The bytes on disk.
    var onDisk: Int64 { done.reduce(0) { $0 + Int64($1.count) } }

    /// The first range not on disk: up to the next range on disk, or to the end (the length, or, unknown, the
    /// largest offset).
    var firstHole: Range<Int64> {
        SegmentPlan.complement(of: done, in: 0..<(length ?? Int64.max)).first ?? 0..<0
    }
}

/// A split part's writes: each connection's bytes are gathered in a buffer of their own and written at
/// their offset (`pwrite`), and the ranges written are recorded beside the part (``SegmentRecord``), written whole
/// to a temporary name and renamed over the last, as ``SplitRules/recordThreshold(secondsSinceRecord:)`` says and
/// whenever the part is kept.
/// The record claims only bytes the part holds: a rerun after kill -9 fetches at most what was written since.
struct SegmentWriter {
    /// One connection's bytes not written yet, from `offset` on.
    struct Pending {
        var offset: Int64
        var data: Data
    }

    let length: Int64
    let validator: RangeRules.Validator
    /// The ranges written (merged).
    private(set) var written: [Range<Int64>]
    private var pending: [Int: Pending] = [:]
    /// Bytes written since the record was last saved.
    private(set) var sinceRecord: Int64 = 0

    /// A connection's buffer is written once it holds this many bytes.
    static let bufferSize = 1 << 20

    init(length: Int64, validator: RangeRules.Validator, written: [Range<Int64>]) {
        self.length = length
        self.validator = validator
        self.written = SegmentPlan.merged(written)
    }

    /// The record's text for what is written.
    var recordText: String? {
        SegmentRecord(length: length, validator: validator.recordText, done: written).encoded()
    }

    /// Gathers `bytes` of connection `segment` at `offset`; writes its buffer when full or when the bytes do not follow
    /// it.
    mutating func take(
        _ bytes: UnsafeRawBufferPointer, at offset: Int64, segment: Int, fd: Int32
    ) throws(FileSink.FileFailure) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        if let buffer = pending[segment], buffer.offset + Int64(buffer.data.count) != offset { try flush(segment, fd) }
        if bytes.count >= FileSink.directWriteSize {
            // A big piece is written where it is, after what was gathered before it: never copied.
            try flush(segment, fd)
            try FileSink.writeAll(fd, bytes, at: offset)
            wrote(offset..<(offset + Int64(bytes.count)))
            return
        }
        if pending[segment] == nil {
            var data = Data()
            data.reserveCapacity(Self.bufferSize)
            pending[segment] = Pending(offset: offset, data: data)
        }
        pending[segment]!.data.append(base.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        if pending[segment]!.data.count >= Self.bufferSize { try flush(segment, fd) }
    }

    /// Writes connection `segment`'s buffer at its offset.
    mutating func flush(_ segment: Int, _ fd: Int32) throws(FileSink.FileFailure) {
        guard let buffer = pending.removeValue(forKey: segment), !buffer.data.isEmpty else { return }
        try buffer.data.withUnsafeBytes { bytes in
            Result { () throws(FileSink.FileFailure) in try FileSink.writeAll(fd, bytes, at: buffer.offset) }
        }.get()
        wrote(buffer.offset..<(buffer.offset + Int64(buffer.data.count)))
    }

    /// `range` is on disk.
    private mutating func wrote(_ range: Range<Int64>) {
        // Most writes extend the range they follow: no merge of the whole list.
        if let index = written.firstIndex(where: { $0.upperBound == range.lowerBound }),
            index + 1 == written.count || written[index + 1].lowerBound > range.upperBound
        {
            written[index] = written[index].lowerBound..<range.upperBound
        } else {
            written = SegmentPlan.merged(written + [range])
        }
        sinceRecord += Int64(range.count)
    }

    /// Writes every connection's buffer.
    mutating func flushAll(_ fd: Int32) throws(FileSink.FileFailure) {
        for segment in Array(pending.keys) { try flush(segment, fd) }
    }

    /// The record was saved.
    mutating func recorded() { sinceRecord = 0 }
}

extension FileSink {
    /// The part becomes a split file of `shape`: sized to its length (holes where nothing is written yet), its
    /// record saved before any byte (a part with holes is never left without one), a one-connection validator file
    /// removed. `done` is what a continued part holds already.
    func beginSegments(_ shape: SplitRules.Shape, done: [Range<Int64>]) -> NetworkQueueError? {
        perform { state throws(FileFailure) in
            state.pendingResponse = nil
            if state.hasValidator { unlinkat(folder.fd, names.validator, 0) }
            state.hasValidator = false
            var writer = SegmentWriter(length: shape.length, validator: shape.validator, written: done)
            try Self.check(ftruncate(state.fd, off_t(shape.length)) == 0)
            recordOrigin(&state)
            try saveRecord(&writer)
            state.segments = writer
            state.hasBytes = true
        }
    }

    /// Writes `bytes` of connection `segment` at `offset` of a split part (gathered per connection; see
    /// ``SegmentWriter``), and saves the record once `threshold` bytes were written since the last. The bytes may be
    /// lent: nothing of them is kept but a copy. Returns the failure, and whether the record was saved.
    func writeSegment(_ bytes: UnsafeRawBufferPointer, at offset: Int64, segment: Int, recordingAfter threshold: Int64)
        -> (failure: NetworkQueueError?, recorded: Bool)
    {
        var recorded = false
        let failure = perform { state throws(FileFailure) in
            guard state.isAccepting, state.segments != nil else { return }
            try state.segments!.take(bytes, at: offset, segment: segment, fd: state.fd)
            if state.segments!.sinceRecord >= threshold {
                try saveRecord(&state.segments!)
                recorded = true
            }
        }
        return (failure, recorded)
    }

    /// Writes what connection `segment` gathered: its range is done, or it stopped.
    func endSegment(segment: Int) -> NetworkQueueError? {
        perform { state throws(FileFailure) in
            guard state.segments != nil, state.fd >= 0 else { return }
            try state.segments!.flush(segment, state.fd)
        }
    }

    /// Saves the record of the ranges on disk now (what the connections gathered and did not write yet is not on it).
    func saveRecordNow() -> NetworkQueueError? {
        perform { state throws(FileFailure) in
            guard state.segments != nil else { return }
            try saveRecord(&state.segments!)
        }
    }

    /// Writes every connection's buffer and the record, for a part kept for the next attempt or segment.
    func keepSegments(_ state: inout State) throws(FileFailure) {
        guard state.segments != nil, state.fd >= 0 else { return }
        try state.segments!.flushAll(state.fd)
        try saveRecord(&state.segments!)
    }

    /// Saves the record of what `writer` wrote: whole, to a temporary name, then renamed over the last one.
    private func saveRecord(_ writer: inout SegmentWriter) throws(FileFailure) {
        guard let text = writer.recordText else { throw FileFailure(reason: "the validator cannot be recorded") }
        let path = Self.recordPath(of: partialPath)
        let (record, temporary) = (names.record, names.record + ".new")
        let fd = Self.openRegular(
            temporary, in: folder.fd, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw FileFailure(reason: "cannot write \(path).new: \(Self.openFailure(fd))") }
        var bytes = text
        do throws(FileFailure) {
            try bytes.withUTF8 { bytes in Result { () throws(FileFailure) in try Self.writeAll(fd, .init(bytes)) } }
                .get()
        } catch {
            closeDescriptor(fd)
            unlinkat(folder.fd, temporary, 0)
            throw error
        }
        closeDescriptor(fd)
        guard renameat(folder.fd, temporary, folder.fd, record) == 0 else {
            let failure = FileFailure.current()
            // Nothing new is left beside the part.
            unlinkat(folder.fd, temporary, 0)
            throw FileFailure(reason: "cannot replace \(path): \(failure.reason)")
        }
        writer.recorded()
    }
}
