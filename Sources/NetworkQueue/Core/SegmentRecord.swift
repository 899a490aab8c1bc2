/// What a segmented download records beside its part so that a rerun after kill -9 continues each range instead
/// of starting over: the file's length and validator, and the ranges on disk. Pure text in, text out.
///
/// The format, one item a line, written whole to a temporary name and renamed over the last record (atomic):
///
///     nq-segments 1
///     length 268435456
///     validator "5e1f-a2b3"
///     done 0-1048575
///     done 4194304-5242879
///
/// `validator` is the strong `ETag` (quoted, as sent) or `Last-Modified: <date>`; `done a-b` is a range of bytes
/// on disk, inclusive as HTTP ranges are, in order and apart (touching ranges are one). A record that does not
/// parse, or whose length or validator differs from the response's, is not used: the part starts over.
struct SegmentRecord: Equatable, Sendable {
    /// The file's length in bytes.
    var length: Int64
    /// The validator the ranges were fetched under (one line).
    var validator: String
    /// The ranges on disk (sorted, disjoint, within the length).
    var done: [Range<Int64>]

    static let header = "nq-segments 1"

    /// The record's text; nil when the validator holds a line break (no such validator can be sent either).
    func encoded() -> String? {
        guard !validator.contains(where: { $0 == "\n" || $0 == "\r" }) else { return nil }
        var lines = [Self.header, "length \(length)", "validator \(validator)"]
        for range in SegmentPlan.merged(done) { lines.append("done \(range.lowerBound)-\(range.upperBound - 1)") }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The record in `text`, or nil when anything in it is not as ``encoded()`` writes it: another version, a
    /// missing or negative length, no validator, a range out of order, overlapping, empty or past the length.
    static func decode(_ text: String) -> SegmentRecord? {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if lines.last == "" { lines.removeLast() }
        guard lines.count >= 3, lines[0] == header, lines[1].hasPrefix("length "), lines[2].hasPrefix("validator "),
            let length = Int64(lines[1].dropFirst("length ".count)), length >= 0
        else { return nil }
        let validator = String(lines[2].dropFirst("validator ".count))
        guard !validator.isEmpty else { return nil }
        var done: [Range<Int64>] = []
        for line in lines.dropFirst(3) {
            guard line.hasPrefix("done ") else { return nil }
            let bounds = line.dropFirst("done ".count).split(separator: "-", omittingEmptySubsequences: false)
            let previousEnd = done.last?.upperBound ?? -1
            guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]), first >= 0,
                last >= first, length > last, first > previousEnd
            else { return nil }
            done.append(first..<(last + 1))
        }
        return SegmentRecord(length: length, validator: validator, done: done)
    }
}
