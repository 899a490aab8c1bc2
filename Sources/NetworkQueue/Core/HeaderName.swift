/// ASCII case folding for header names, without Foundation's locale-aware string comparison: these run
/// for every header of every request and response.
enum HeaderName {
    /// `bytes` with A-Z turned into a-z.
    static func lowercased<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> [UInt8] {
        bytes.map(lowercased)
    }

    /// Whether `name` equals `key` (already lowercase), ignoring ASCII case.
    static func matches(_ name: String, lowercased key: String) -> Bool {
        name.utf8.count == key.utf8.count && zip(name.utf8, key.utf8).allSatisfy { lowercased($0) == $1 }
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 { (65...90).contains(byte) ? byte + 32 : byte }
}
