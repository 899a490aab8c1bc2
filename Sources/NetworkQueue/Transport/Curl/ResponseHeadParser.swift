import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Assembles a response head from the header lines libcurl hands over one at a time (status line,
/// fields, blank line), keeping only the final head: an interim `1xx` head is dropped, and lines after
/// the final head (trailers of a chunked body) are ignored. Pure; tested alone.
///
/// Lenient where RFC 9112 allows it and curl agrees: a line may end in a bare LF (§2.2), an obs-fold line
/// continues the field before it (§5.2). Strict where framing is at stake, so that every part of the
/// library sees exactly the fields libcurl framed the body by: a bare CR or a NUL inside a line, a folded
/// or space-padded `Transfer-Encoding`/`Content-Length`, a final head whose `Content-Length` values differ or
/// are not numbers, or a head over ``maximumFieldLines`` lines or ``maximumHeadBytes`` bytes set
/// ``violation``: the head is never completed, so nothing of it (a cookie, a redirect) can take effect.
/// Linear in the head's size: a repeated field is found through an index once a head has many fields.
struct ResponseHeadParser {
    /// The most field lines one head may have.
    static let maximumFieldLines = 1_000
    /// The most bytes one head (status line, fields, interim heads) may have.
    static let maximumHeadBytes = 256 << 10

    private var statusCode: Int?
    private var httpVersion = ""
    /// The fields as bytes (see ``HeadFields``): a line's name and value are copied, not made into strings.
    private var fields = HeadFields()
    /// Where the framing fields are in ``fields``, once seen.
    private var contentLengthIndex: Int?
    private var transferEncodingIndex: Int?
    /// Lowercased name → index in `fields`, built once a head has more fields than a scan handles cheaply.
    private var fieldIndex: [String: Int]?
    private var setCookies: [String] = []
    /// The field the last field line started (an obs-fold line continues it), as its index.
    private var lastField: Int?
    private var fieldLines = 0
    private var headBytes = 0
    private(set) var isComplete = false
    /// Why the head breaks HTTP's framing rules; once set, no head is completed.
    private(set) var violation: String?

    /// Feeds one line (with its CRLF or LF); returns the head when this line completes the final one.
    mutating func feed(_ rawLine: Substring) -> Head? { feed(bytes: Array(rawLine.utf8)) }

    /// Feeds one line where libcurl hands it over: bytes ending in LF, usually CRLF (libcurl splits lines at LF).
    mutating func feed(bytes rawLine: UnsafeRawBufferPointer) -> Head? { feed(line: rawLine) }

    /// Feeds one line as libcurl hands it over: bytes ending in LF, usually CRLF (libcurl splits lines at LF).
    mutating func feed<Bytes: Collection<UInt8>>(bytes rawLine: Bytes) -> Head? {
        if let head = rawLine.withContiguousStorageIfAvailable({ feed(line: UnsafeRawBufferPointer($0)) }) {
            return head
        }
        return Array(rawLine).withUnsafeBytes { feed(line: $0) }
    }

    /// The work of ``feed(bytes:)``, on the bytes where they are (this runs for every header line of every
    /// response: it reads the line once, on a pointer, and copies only the name and value it keeps).
    private mutating func feed(line rawLine: UnsafeRawBufferPointer) -> Head? {
        guard !isComplete, violation == nil else { return nil }
        headBytes += rawLine.count
        guard headBytes <= Self.maximumHeadBytes else {
            return fail("a response head over \(Self.maximumHeadBytes) bytes")
        }
        var count = rawLine.count
        guard count >= 1, let start = rawLine.baseAddress, rawLine[count - 1] == 10 else {
            return fail("a header line not ended by LF")
        }
        count -= 1
        if count > 0, rawLine[count - 1] == 13 { count -= 1 }
        let line = UnsafeBufferPointer(start: start.assumingMemoryBound(to: UInt8.self), count: count)
        // One pass finds what every line is checked for: the first CR, LF and NUL (none may be inside a line), and
        // the first colon.
        var (firstCR, firstLF, firstNUL, colon) = (-1, -1, -1, -1)
        for index in 0..<count {
            let byte = line[index]
            if byte > 13 {
                if byte == 58, colon < 0 { colon = index }
            } else if byte == 13 {
                if firstCR < 0 { firstCR = index }
            } else if byte == 10 {
                if firstLF < 0 { firstLF = index }
            } else if byte == 0, firstNUL < 0 {
                firstNUL = index
            }
        }
        let breaking = firstCR >= 0 ? firstCR : firstLF
        if breaking >= 0, firstNUL < 0 || breaking < firstNUL { return fail("a bare CR in a header line") }
        if firstNUL >= 0 { return fail("a NUL in a header line") }
        guard let code = statusCode else {
            // Only a status line starts a head: "HTTP/1.1 200 OK", the version up to the first space, then the
            // code (three digits) after any spaces. Anything else before it is not ours (libcurl refuses it).
            if count >= 5, line[0] == 72, line[1] == 84, line[2] == 84, line[3] == 80, line[4] == 47 {
                startHead(line)
            }
            return nil
        }
        if count == 0 {
            if (100..<200).contains(code) {
                statusCode = nil
                return nil
            }
            return completeHead(code)
        }
        fieldLines += 1
        guard fieldLines <= Self.maximumFieldLines else {
            return fail("a response head over \(Self.maximumFieldLines) fields")
        }
        if line[0] == 32 || line[0] == 9 {
            // Obsolete line folding: the line continues the previous field's value, read as one space.
            guard let last = lastField else { return nil }
            if isFramingField(fields.nameBytes(at: last)) { return fail("a folded \(fields.name(at: last)) field") }
            let more = Self.trimmed(line, 0, count)
            if fields.valueBytes(at: last).isEmpty {
                fields.setValue(at: last, to: more)
            } else if !more.isEmpty {
                fields.extendValue(at: last, separator: " ", with: more)
            }
            return nil
        }
        lastField = nil
        guard colon >= 0 else { return nil }
        let nameBytes = Self.trimmed(line, 0, colon)
        guard !nameBytes.isEmpty else { return nil }
        if nameBytes.count != colon, isFramingField(nameBytes) {
            // libcurl would not read "Transfer-Encoding :" as a framing field; we must not either way.
            return fail("white space around a framing field's name")
        }
        let value = Self.trimmed(line, colon + 1, count)
        if nameBytes.count == Self.setCookieKey.count, HeaderName.equal(nameBytes, Self.setCookieKey) {
            setCookies.append(String(decoding: value, as: UTF8.self))
        }
        if let index = existingField(nameBytes) {
            if nameBytes.count == Self.locationKey.count, HeaderName.equal(nameBytes, Self.locationKey),
                RedirectRules.isFollowed(code)
            {
                // Joined, two targets would name a URL the server never sent: a redirect must say one place.
                guard fields.valueBytes(at: index).elementsEqual(value) else {
                    return fail("more than one Location field in a redirect")
                }
                lastField = index
                return nil
            }
            fields.extendValue(at: index, separator: ", ", with: value)
            lastField = index
        } else {
            if fieldIndex != nil { fieldIndex?[String(decoding: nameBytes, as: UTF8.self).lowercased()] = fields.count }
            lastField = fields.count
            if nameBytes.count == Self.contentLengthKey.count, HeaderName.equal(nameBytes, Self.contentLengthKey) {
                contentLengthIndex = fields.count
            } else if nameBytes.count == Self.transferEncodingKey.count,
                HeaderName.equal(nameBytes, Self.transferEncodingKey)
            {
                transferEncodingIndex = fields.count
            }
            fields.append(name: nameBytes, value: value)
        }
        return nil
    }

    /// Starts a head at a status line.
    private mutating func startHead(_ line: UnsafeBufferPointer<UInt8>) {
        let versionEnd = line.firstIndex(of: 32) ?? line.count
        httpVersion = String(decoding: UnsafeBufferPointer(rebasing: line[..<versionEnd]), as: UTF8.self)
        var index = versionEnd
        while index < line.count, line[index] == 32 { index += 1 }
        var code = 0
        var digits = 0
        while index < line.count, (48...57).contains(line[index]), digits < 4 {
            code = code * 10 + Int(line[index] - 48)
            digits += 1
            index += 1
        }
        let isEnd = index == line.count || line[index] == 32
        statusCode = digits > 0 && digits < 4 && isEnd ? code : nil
        fields = HeadFields()
        fields.reserve(bytes: 384, fields: 12)
        contentLengthIndex = nil
        transferEncodingIndex = nil
        fieldIndex = nil
        setCookies = []
        lastField = nil
        fieldLines = 0
    }

    /// The index of the field named `name` (any case), if it is already in the head.
    private mutating func existingField(_ name: UnsafeBufferPointer<UInt8>) -> Int? {
        if let fieldIndex { return fieldIndex[String(decoding: name, as: UTF8.self).lowercased()] }
        // Checked here too, before any call: most lines name a field not seen yet.
        guard fields.nameLengths & HeadFields.lengthBit(name.count) != 0 else { return nil }
        if fields.count < 32 { return fields.index(of: name) }
        // Many fields: from now on, an index keeps each line's cost constant.
        var index: [String: Int] = [:]
        for position in 0..<fields.count {
            let name = fields.name(at: position).lowercased()
            index[name] = index[name] ?? position
        }
        fieldIndex = index
        return index[String(decoding: name, as: UTF8.self).lowercased()]
    }

    private func isFramingField<Name: Collection<UInt8>>(_ name: Name) -> Bool {
        HeaderName.equal(name, Self.transferEncodingKey) || HeaderName.equal(name, Self.contentLengthKey)
    }

    private mutating func fail(_ reason: String) -> Head? {
        violation = reason
        return nil
    }

    /// Ends the final head, checking its framing: one length however often it is repeated, and none
    /// beside a transfer coding.
    private mutating func completeHead(_ code: Int) -> Head? {
        // The fields and cookies move into the head (the parser reads no line after its head is complete), which is
        // made once, at the end, from locals: a head built first and changed after was copied and destroyed on its
        // way out (12 retains and releases a response).
        var storage = HeadFields()
        swap(&storage, &fields)
        var transferCodings: [String] = []
        var unsupported: String?
        var closes = false
        var length: Int64?
        if let coding = transferEncodingIndex {
            switch FramingRules.transferCoding(storage.value(at: coding)) {
            case .valid(let codings, _): transferCodings = codings
            case .unsupported(let name): unsupported = name
            case .invalid(let reason): return fail(reason)
            }
        }
        if let index = contentLengthIndex {
            if transferEncodingIndex != nil {
                storage.remove(at: index)
                closes = true
            } else {
                let value = storage.valueBytes(at: index)
                switch FramingRules.contentLength(bytes: value) {
                case .valid(let number):
                    length = number
                    // Repeated or padded values (" 7 , 7 ") become the one number.
                    if !value.allSatisfy({ (48...57).contains($0) }) || value.first == 48 {
                        storage.setValue(at: index, to: String(number).utf8)
                    }
                case .invalid(let reason):
                    violation = reason
                    return nil
                }
            }
        }
        isComplete = true
        var cookies: [String] = []
        swap(&cookies, &setCookies)
        return Head(
            statusCode: code, httpVersion: httpVersion, storage: storage, setCookies: cookies, contentLength: length,
            transferCodings: transferCodings, unsupportedTransferCoding: unsupported, closesConnection: closes)
    }

    private static let setCookieKey = Array("set-cookie".utf8)
    private static let locationKey = Array("location".utf8)
    private static let contentLengthKey = Array("content-length".utf8)
    private static let transferEncodingKey = Array("transfer-encoding".utf8)

    /// The bytes of `line` from `start` to `end` without leading and trailing spaces and tabs.
    private static func trimmed(_ line: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> UnsafeBufferPointer<
        UInt8
    > {
        var (start, end) = (start, end)
        while start < end, line[start] == 32 || line[start] == 9 { start += 1 }
        while end > start, line[end - 1] == 32 || line[end - 1] == 9 { end -= 1 }
        return UnsafeBufferPointer(rebasing: line[start..<end])
    }
}
