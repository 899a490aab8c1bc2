/// A response head's fields kept as the bytes they arrived as: every name and value in one buffer, each field
/// the spans of its name and value in it. A head costs two allocations whatever its fields, and a `String` is
/// made only for a field someone reads (a batch reads three or four of a head's ten fields).
///
/// Names and values are decoded as UTF-8 when read, invalid bytes repaired (U+FFFD), as `String(decoding:as:)`
/// does. A value changed after it was added (joined with a repeated field's, continued by an obs-fold line,
/// rewritten) is written anew at the buffer's end; its old bytes stay unreachable until the head is freed.
struct HeadFields: Sendable, Equatable {
    /// Where one field's name and value lie in ``bytes``.
    private struct Span: Sendable {
        var nameStart: UInt32
        var nameEnd: UInt32
        var valueStart: UInt32
        var valueEnd: UInt32
    }

    private var bytes: [UInt8] = []
    private var spans: [Span] = []
    /// Bit `n % 64` is set when a field name of `n` bytes is present (``lengthBit(_:)``): a lookup of an absent
    /// field (most are) usually ends here without comparing names.
    private(set) var nameLengths: UInt64 = 0

    /// The bit of ``nameLengths`` for a name of `count` bytes.
    @inline(__always)
    static func lengthBit(_ count: Int) -> UInt64 { 1 << UInt64(count & 63) }

    /// No fields.
    init() {}

    /// The fields of `fields`, in order.
    init(_ fields: [ResponseHead.Field]) {
        reserve(bytes: fields.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count }, fields: fields.count)
        for field in fields { append(name: field.name.utf8, value: field.value.utf8) }
    }

    /// Room for `bytes` bytes of names and values and `fields` fields without growing.
    mutating func reserve(bytes: Int, fields: Int) {
        self.bytes.reserveCapacity(bytes)
        spans.reserveCapacity(fields)
    }

    /// How many fields there are.
    var count: Int { spans.count }

    /// The fields as values, in order.
    var fields: [ResponseHead.Field] {
        (0..<count).map { ResponseHead.Field(name: name(at: $0), value: value(at: $0)) }
    }

    /// Adds a field.
    mutating func append<Name: Collection<UInt8>, Value: Collection<UInt8>>(name: Name, value: Value) {
        let nameStart = UInt32(bytes.count)
        bytes.append(contentsOf: name)
        let nameEnd = UInt32(bytes.count)
        bytes.append(contentsOf: value)
        spans.append(Span(nameStart: nameStart, nameEnd: nameEnd, valueStart: nameEnd, valueEnd: UInt32(bytes.count)))
        nameLengths |= Self.lengthBit(name.count)
    }

    /// Sets the value of the field at `index` to `value`.
    mutating func setValue<Value: Collection<UInt8>>(at index: Int, to value: Value) {
        let start = UInt32(bytes.count)
        bytes.append(contentsOf: value)
        spans[index].valueStart = start
        spans[index].valueEnd = UInt32(bytes.count)
    }

    /// Adds `separator` and `more` to the value of the field at `index`.
    mutating func extendValue<More: Collection<UInt8>>(at index: Int, separator: StaticString, with more: More) {
        let span = spans[index]
        let start = UInt32(bytes.count)
        // Copied within the buffer: appending may move it, so by index, not by a slice of it.
        for position in Int(span.valueStart)..<Int(span.valueEnd) { bytes.append(bytes[position]) }
        separator.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: more)
        spans[index].valueStart = start
        spans[index].valueEnd = UInt32(bytes.count)
    }

    /// Removes the field at `index`.
    mutating func remove(at index: Int) {
        spans.remove(at: index)
        nameLengths = 0
        for span in spans { nameLengths |= Self.lengthBit(Int(span.nameEnd - span.nameStart)) }
    }

    /// The bytes of the name of the field at `index`.
    func nameBytes(at index: Int) -> ArraySlice<UInt8> {
        bytes[Int(spans[index].nameStart)..<Int(spans[index].nameEnd)]
    }

    /// The bytes of the value of the field at `index`.
    func valueBytes(at index: Int) -> ArraySlice<UInt8> {
        bytes[Int(spans[index].valueStart)..<Int(spans[index].valueEnd)]
    }

    /// The name of the field at `index`, as received.
    func name(at index: Int) -> String { String(decoding: nameBytes(at: index), as: UTF8.self) }

    /// The value of the field at `index`.
    func value(at index: Int) -> String { String(decoding: valueBytes(at: index), as: UTF8.self) }

    /// The index of the first field named `name`, compared without regard to ASCII case; nil when absent.
    func index<Name: Collection<UInt8>>(of name: Name) -> Int? {
        guard nameLengths & Self.lengthBit(name.count) != 0 else { return nil }
        for index in spans.indices where HeaderName.equal(nameBytes(at: index), name) { return index }
        return nil
    }

    /// The value of the first field named `name` (any ASCII case); nil when absent.
    func value(named name: String) -> String? { index(of: name.utf8).map { value(at: $0) } }

    static func == (lhs: HeadFields, rhs: HeadFields) -> Bool { lhs.fields == rhs.fields }
}
