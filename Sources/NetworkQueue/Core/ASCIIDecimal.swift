/// Decimal numbers read from ASCII bytes where they lie, with no string made: what `Int64(_:)` reads from text.
enum ASCIIDecimal {
    /// The number `bytes` spell: an optional `+` (or `-`, when `signed`), then one or more digits and nothing else;
    /// nil for anything else, or for a value `Int64` cannot hold.
    static func value(of bytes: Slice<UnsafeBufferPointer<UInt8>>, signed: Bool) -> Int64? {
        var index = bytes.startIndex
        let negative = signed && index < bytes.endIndex && bytes[index] == 0x2D
        if index < bytes.endIndex, negative || bytes[index] == 0x2B { index += 1 }
        guard index < bytes.endIndex else { return nil }
        var value: Int64 = 0
        while index < bytes.endIndex {
            let digit = bytes[index] &- 0x30
            guard digit < 10 else { return nil }
            // Accumulated towards its sign, so that Int64.min reads as `Int64("-9223372036854775808")` does.
            let (shifted, overflowed) = value.multipliedReportingOverflow(by: 10)
            let (next, carried) =
                negative
                ? shifted.subtractingReportingOverflow(Int64(digit)) : shifted.addingReportingOverflow(Int64(digit))
            guard !overflowed, !carried else { return nil }
            value = next
            index += 1
        }
        return value
    }
}
