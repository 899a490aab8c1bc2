/// Gzip streams for the server's `/gzip` endpoint, built from stored (uncompressed) deflate blocks:
/// no compression library needed, and every decoder must accept them.
enum Gzip {
    /// `data` as a complete gzip member.
    static func encode(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255]
        out.reserveCapacity(data.count + data.count / 65_535 * 5 + 32)
        appendStoredBlocks(data, to: &out)
        out += littleEndian(crc32(data)) + littleEndian(UInt32(truncatingIfNeeded: data.count))
        return out
    }

    /// `data` as raw deflate (RFC 1951): stored blocks of at most 65,535 bytes, the last one marked final.
    private static func appendStoredBlocks(_ data: [UInt8], to out: inout [UInt8]) {
        var offset = 0
        repeat {
            let length = min(65_535, data.count - offset)
            out.append(offset + length == data.count ? 1 : 0)
            out += littleEndian(UInt16(length)) + littleEndian(~UInt16(length))
            out.append(contentsOf: data[offset..<(offset + length)])
            offset += length
        } while offset < data.count
    }

    /// `data` as a zlib stream (RFC 1950: header, stored deflate blocks, Adler-32), as `deflate` means in HTTP.
    static func deflate(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        appendStoredBlocks(data, to: &out)
        var (a, b): (UInt32, UInt32) = (1, 0)
        for byte in data {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        out += [
            UInt8(truncatingIfNeeded: b >> 8), UInt8(truncatingIfNeeded: b), UInt8(truncatingIfNeeded: a >> 8),
            UInt8(truncatingIfNeeded: a),
        ]
        return out
    }

    /// `data` framed as a chunked body in chunks of at most `size` bytes, ended by `trailer` lines.
    static func chunked(_ data: [UInt8], size: Int = 1_000, trailer: String = "") -> [UInt8] {
        var out: [UInt8] = []
        var offset = 0
        while offset < data.count {
            let length = min(size, data.count - offset)
            out += LoopbackServer.chunk(data[offset..<(offset + length)])
            offset += length
        }
        return out + Array("0\r\n\(trailer)\r\n".utf8)
    }

    static func crc32(_ data: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xffff_ffff
        // Buffer pointers: checked array access per byte is slow in debug builds, slower under sanitizers.
        data.withUnsafeBufferPointer { bytes in
            table.withUnsafeBufferPointer { table in
                for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xff)] ^ (crc >> 8) }
            }
        }
        return ~crc
    }

    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xedb8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    private static func littleEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        (0..<(T.bitWidth / 8)).map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }
    }
}
