/// ASCII case folding for header names, without Foundation's locale-aware string comparison: these run
/// for every header of every request and response, so none of them allocates.
enum HeaderName {
    /// `text` without its leading and trailing optional whitespace (spaces and tabs, RFC 9110 §5.6.3), found on its
    /// UTF-8 bytes: no Foundation, nothing allocated.
    static func trimmed(_ text: Substring) -> Substring {
        let bytes = text.utf8
        guard let first = bytes.firstIndex(where: { $0 != 32 && $0 != 9 }),
            let last = bytes.lastIndex(where: { $0 != 32 && $0 != 9 })
        else { return text[text.endIndex...] }
        return text[first...last]
    }

    /// ``trimmed(_:)-(Substring)`` of a whole string.
    static func trimmed(_ text: String) -> Substring { trimmed(text[...]) }

    /// Whether `name` equals `key` (already lowercase), ignoring ASCII case.
    static func matches(_ name: String, lowercased key: String) -> Bool { equal(name.utf8, key.utf8) }

    /// Whether two names are the same but for the case of ASCII letters.
    @inline(__always)
    static func equal<A: Collection<UInt8>, B: Collection<UInt8>>(_ a: A, _ b: B) -> Bool {
        guard a.count == b.count else { return false }
        // Over the bytes where they are when both have contiguous storage (native strings, buffers).
        let contiguous = a.withContiguousStorageIfAvailable { left in
            b.withContiguousStorageIfAvailable { right in equal(buffers: left, right) }
        }
        if let contiguous, let result = contiguous { return result }
        var right = b.makeIterator()
        for x in a {
            guard let y = right.next(), same(x, y) else { return false }
        }
        return true
    }

    private static func equal(buffers left: UnsafeBufferPointer<UInt8>, _ right: UnsafeBufferPointer<UInt8>) -> Bool {
        for index in 0..<left.count where !same(left[index], right[index]) { return false }
        return true
    }

    /// Equal bytes, or the same ASCII letter in either case.
    @inline(__always)
    private static func same(_ x: UInt8, _ y: UInt8) -> Bool {
        x == y || (x | 0x20 == y | 0x20 && (97...122).contains(x | 0x20))
    }
}
