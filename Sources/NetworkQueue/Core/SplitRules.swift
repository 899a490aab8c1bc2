import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The rules of one file fetched over several connections and locations: when a response allows it,
/// what each segment's request says and whether a segment's response is the file's bytes. Pure functions of heads.
enum SplitRules {
    /// What every location of a split file must agree on.
    struct Shape: Equatable, Sendable {
        /// The file's length in bytes.
        let length: Int64
        /// The validator of the location that answered first (its `If-Range`), which the part's record keeps.
        let validator: RangeRules.Validator
        /// The first answer's `Last-Modified`, which every location that sends one must agree with (other
        /// servers make other entity tags for the same file, but the same date).
        var lastModified: String? = nil
    }

    /// Why a response does not allow splitting (logged, so that a user sees why one connection was used).
    enum Refusal: Error, Equatable, Sendable {
        case status(Int)
        case encoded
        case unknownLength
        case noByteRanges
        case noValidator
        case tooSmall(length: Int64)

        /// The reason in words.
        var text: String {
            switch self {
            case .status(let code): "the response is a \(code), not a 200"
            case .encoded: "the body has a content coding"
            case .unknownLength: "the length is not known"
            case .noByteRanges: "the server does not say Accept-Ranges: bytes"
            case .noValidator: "the response has neither a strong ETag nor Last-Modified"
            case .tooSmall(let length): "\(length) bytes are too few to share"
            }
        }
    }

    /// The file's shape when `head`, the first response to a GET without a range, allows splitting it into
    /// segments of at least `minimumSize` bytes; else why not.
    static func shape(of head: ResponseHead, minimumSize: Int64) -> Result<Shape, Refusal> {
        guard head.statusCode == 200 else { return .failure(.status(head.statusCode)) }
        guard !ResponseRules.isEncoded(head) else { return .failure(.encoded) }
        guard let length = ResponseRules.knownLength(of: head, encoded: false) else {
            return .failure(.unknownLength)
        }
        // The length first: most files are small, and it is the cheapest look (no field read again).
        guard length >= 2 * minimumSize else { return .failure(.tooSmall(length: length)) }
        guard acceptsByteRanges(head) else { return .failure(.noByteRanges) }
        guard let validator = RangeRules.validator(of: head) else { return .failure(.noValidator) }
        let lastModified = head.value(forHTTPHeaderField: "Last-Modified").map { String(HeaderName.trimmed($0)) }
        return .success(Shape(length: length, validator: validator, lastModified: lastModified))
    }

    /// The end game: when a connection whose head was accepted `running` seconds ago, having received
    /// `received` bytes since, would bring the `remaining` bytes of its range at its pace (infinite when it brought
    /// none). Nil while it is too new to judge: under `settle` seconds.
    static func finishTime(remaining: Int64, received: Int64, running: Double, settle: Double) -> Double? {
        guard running >= settle else { return nil }
        guard received > 0 else { return .infinity }
        return Double(remaining) * running / Double(received)
    }

    /// Whether a new connection is worth racing a running one for the `remaining` bytes of its range, the running one
    /// expected to take `finishTime` seconds (``finishTime(remaining:received:running:settle:)``): a new one would
    /// take `startDelay` to its first byte, then bring them at `rate` bytes a second (the best pace any connection of
    /// the file kept; nil: none measured yet, judged by the start delay alone). Worth it when the running one would
    /// take more than twice as long: no fixed threshold, only the file's own pace. A connection that stopped sending
    /// (a stalled mirror) is raced as soon as it is judged.
    static func isWorthRacing(remaining: Int64, finishTime: Double, rate: Double?, startDelay: Double) -> Bool {
        guard remaining > 0 else { return false }
        let fresh = startDelay + (rate.map { Double(remaining) / max($0, 1) } ?? 0)
        return finishTime > 2 * fresh
    }

    /// How long each window is over which the first connection's pace is judged, while it runs alone, in seconds:
    /// long enough to tell a fast connection from a capped one, short against what sharing saves (10 ms).
    static let probeSeconds = 0.01
    /// A file whose rest one connection would fetch in less than this many seconds is not shared: more connections
    /// would cost more than they save (0.5 s).
    static let worthSharingSeconds = 0.5

    /// True when one connection that received `received` bytes in `elapsed` seconds would take longer than
    /// ``worthSharingSeconds`` for the `remaining` bytes (always, when nothing was received yet).
    static func isWorthSharing(remaining: Int64, received: Int64, elapsed: Double) -> Bool {
        guard received > 0, elapsed > 0 else { return remaining > 0 }
        return Double(remaining) / (Double(received) / elapsed) > worthSharingSeconds
    }

    /// The bytes written after which a split part's record is saved again, `secondsSinceRecord` after the last: 1 MiB
    /// once a tenth of a second has passed, else 64 MiB. A rerun after kill -9 fetches again at most a tenth of a
    /// second's bytes (or 1 MiB) per file beyond the connections' buffers, and a fast download saves at most ten
    /// records a second (four system calls each) and one per 64 MiB.
    static func recordThreshold(secondsSinceRecord: Double) -> Int64 {
        secondsSinceRecord >= 0.1 ? 1 << 20 : 64 << 20
    }

    /// True when the head says `Accept-Ranges: bytes` (among other units, if any).
    static func acceptsByteRanges(_ head: ResponseHead) -> Bool {
        guard let value = head.value(forHTTPHeaderField: "Accept-Ranges") else { return false }
        return value.split(separator: ",").contains { HeaderName.equal(HeaderName.trimmed($0).utf8, "bytes".utf8) }
    }

    /// The headers asking for the bytes `range` (`open`: to the end of the file) under `validator` (nil: a location
    /// whose own validator is not known yet is asked without `If-Range`).
    static func headers(for range: Range<Int64>, open: Bool, validator: RangeRules.Validator?) -> [String: String] {
        let last = open ? "" : String(range.upperBound - 1)
        var headers = ["Range": "bytes=\(range.lowerBound)-\(last)"]
        if let validator { headers["If-Range"] = validator.headerValue }
        return headers
    }

    /// The validator a location's answer names for itself, whatever its status: its strong `ETag`, else its
    /// `Last-Modified`; nil when it has neither.
    static func ownValidator(of head: ResponseHead) -> RangeRules.Validator? {
        if let tag = head.value(forHTTPHeaderField: "ETag")?.trimmingCharacters(in: .whitespaces),
            RangeRules.isStrongEntityTag(tag)
        {
            return .entityTag(tag)
        }
        guard let date = head.value(forHTTPHeaderField: "Last-Modified")?.trimmingCharacters(in: .whitespaces),
            !date.isEmpty, !date.contains("\n")
        else { return nil }
        return .lastModified(date)
    }

    /// True when two `Last-Modified` values name the same second (as written, or as parsed dates).
    static func sameDate(_ one: String, _ other: String) -> Bool {
        one == other || HTTPDate.parse(one).map { $0 == HTTPDate.parse(other) } == true
    }

    /// Why a segment's response is not the file's bytes from `start` (the location is dropped), or nil when it is: a
    /// 206 from `start` of a body of the file's length, without a content coding. Each location is held to its own
    /// validator (`validator`, learned from its first answer; the file's for the location that answered first). Other
    /// server software makes another entity tag for the same file (RFC 9110 §13.1.5): a location answering for the
    /// first time (`validator` nil, its range asked without `If-Range`) may name another entity tag than the file's
    /// only when both name the same `Last-Modified`; a tag of its own without a date to agree on is another file.
    static func problem(
        with head: ResponseHead, start: Int64, shape: Shape, validator: RangeRules.Validator? = nil
    ) -> String? {
        guard head.statusCode == 206 else {
            return head.statusCode == 200
                ? "it sent the whole file (200) for a range" : "it answered \(head.statusCode)"
        }
        guard !ResponseRules.isEncoded(head) else { return "the range has a content coding" }
        guard let range = RangeRules.contentRange(head.value(forHTTPHeaderField: "Content-Range")),
            range.first == start
        else { return "its Content-Range does not start at byte \(start)" }
        guard range.total == shape.length else {
            return "its length is \(range.total.map(String.init) ?? "unknown"), not \(shape.length)"
        }
        let expected = validator ?? shape.validator
        guard let other = self.validator(of: head, kind: expected), other != expected else { return nil }
        // A location asked for the first time: another server's entity tag for the same file, when both say the
        // same Last-Modified.
        let theirDate = head.value(forHTTPHeaderField: "Last-Modified")?.trimmingCharacters(in: .whitespaces)
        if validator == nil, case .entityTag = expected, let theirDate, let ours = shape.lastModified {
            return sameDate(theirDate, ours) ? nil : "its Last-Modified \(theirDate) is not \(ours)"
        }
        return "its validator \(other.headerValue) is not \(expected.headerValue)"
    }

    /// Why `head`, a 206 to the first request continuing the split part `resumed`, does not continue it (the part
    /// then starts over), or nil when it does: its range starts at the part's first hole, its length is the record's
    /// (when the record has one) and not short of what is on disk, and it is the file the part was fetched under.
    static func continuationProblem(with head: ResponseHead, resumed: PartSegments) -> String? {
        guard let range = RangeRules.contentRange(head.value(forHTTPHeaderField: "Content-Range")),
            let length = range.total
        else { return "its Content-Range says no length" }
        if let recorded = resumed.length, recorded != length {
            return "the file's length is \(length), not the \(recorded) on record"
        }
        if let last = resumed.done.last, length < last.upperBound {
            return "the file's length is \(length), shorter than the part"
        }
        return problem(
            with: head, start: resumed.firstHole.lowerBound, shape: Shape(length: length, validator: resumed.validator),
            validator: resumed.validator)
    }

    /// Why `head`, the answer to a request for the whole file sent to carry a split file on after its ranges
    /// failed, is not the file, or nil when it is: a 200 of the file's length, without a content coding, under
    /// `validator` (the location's own, when known).
    static func streamProblem(with head: ResponseHead, shape: Shape, validator expected: RangeRules.Validator?)
        -> String?
    {
        guard head.statusCode == 200 else { return "it answered \(head.statusCode) to the whole file" }
        guard let length = ResponseRules.knownLength(of: head), length == shape.length else {
            return "its whole file is not \(shape.length) bytes"
        }
        if let expected, let other = validator(of: head, kind: expected), other != expected {
            return "its validator \(other.headerValue) is not \(expected.headerValue)"
        }
        return nil
    }

    /// The validator of `head` of the same kind as `kind` (a strong `ETag`, or `Last-Modified`), read from any
    /// status (a 206's own fields describe the resource).
    static func validator(of head: ResponseHead, kind: RangeRules.Validator) -> RangeRules.Validator? {
        switch kind {
        case .entityTag:
            guard let tag = head.value(forHTTPHeaderField: "ETag")?.trimmingCharacters(in: .whitespaces) else {
                return nil
            }
            return .entityTag(tag)
        case .lastModified:
            return head.value(forHTTPHeaderField: "Last-Modified").map {
                .lastModified($0.trimmingCharacters(in: .whitespaces))
            }
        }
    }

    /// The head the engine hears for a split file continued from a part holding `onDisk` of its bytes: the first
    /// response's, with the range and length of what is left (`Content-Range: bytes onDisk-last/length`), so that
    /// progress starts at the bytes on disk as for a part continued on one connection.
    static func continuingHead(_ head: ResponseHead, onDisk: Int64, length: Int64) -> ResponseHead {
        var fields = head.fields.filter {
            let name = $0.name.lowercased()
            return name != "content-range" && name != "content-length"
        }
        fields.append(.init(name: "Content-Range", value: "bytes \(onDisk)-\(length - 1)/\(length)"))
        fields.append(.init(name: "Content-Length", value: String(length - onDisk)))
        return ResponseHead(url: head.url, statusCode: 206, httpVersion: head.httpVersion, fields: fields)
    }

    /// `request` sent to `location` instead: the headers `policy` strips from a redirect to another origin
    /// (credentials: `Authorization`, `Cookie`, `Proxy-Authorization` and any the user added) stay behind unless
    /// `location` has the same scheme, host and port as `origin`.
    static func request(
        _ request: URLRequest, to location: URL, origin: URL?, policy: RedirectPolicy = .default
    ) -> URLRequest {
        var sent = request
        sent.url = location
        return policy.sending(sent, from: origin)
    }
}

extension RangeRules.Validator {
    /// The validator as one line of a ``SegmentRecord``: an entity tag as sent (it begins with a quote), or
    /// `Last-Modified: <date>`.
    var recordText: String {
        switch self {
        case .entityTag(let tag): tag
        case .lastModified(let date): "Last-Modified: \(date)"
        }
    }

    /// The validator a record's line names.
    init?(recordText text: String) {
        if text.hasPrefix("Last-Modified: ") {
            self = .lastModified(String(text.dropFirst("Last-Modified: ".count)))
        } else if RangeRules.isStrongEntityTag(text) {
            self = .entityTag(text)
        } else {
            return nil
        }
    }
}
