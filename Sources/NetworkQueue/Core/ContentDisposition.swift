import Foundation

/// The file name a response gives itself in `Content-Disposition` (RFC 6266, with RFC 8187's `filename*`), made safe
/// to be one file in a folder. Pure.
enum ContentDisposition {
    /// The safe file name `value` (a `Content-Disposition` field) gives, or nil when it gives none that is safe:
    /// `filename*` when it decodes (UTF-8 or ISO-8859-1), else `filename`.
    static func fileName(in value: String) -> String? {
        let parameters = Self.parameters(of: value)
        if let extended = parameters["filename*"], let decoded = decodeExtended(extended), let safe = safeName(decoded)
        {
            return safe
        }
        return parameters["filename"].flatMap(safeName)
    }

    /// The parameters after the disposition type, names lowercased, the first of each name kept; quoted values
    /// unquoted (`\\` escapes read).
    static func parameters(of value: String) -> [String: String] {
        var result: [String: String] = [:]
        var scalars = Substring(value).unicodeScalars[...]
        // The disposition type.
        while let first = scalars.first, first != ";" { scalars.removeFirst() }
        while !scalars.isEmpty {
            scalars.removeFirst()  // ";"
            while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
            var name = ""
            while let first = scalars.first, first != "=", first != ";" {
                name.unicodeScalars.append(first)
                scalars.removeFirst()
            }
            guard scalars.first == "=" else { continue }
            scalars.removeFirst()
            while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
            var parameterValue = ""
            if scalars.first == "\"" {
                scalars.removeFirst()
                while let first = scalars.first, first != "\"" {
                    scalars.removeFirst()
                    if first == "\\", let escaped = scalars.first {
                        parameterValue.unicodeScalars.append(escaped)
                        scalars.removeFirst()
                    } else {
                        parameterValue.unicodeScalars.append(first)
                    }
                }
                if !scalars.isEmpty { scalars.removeFirst() }
                while let first = scalars.first, first != ";" { scalars.removeFirst() }
            } else {
                while let first = scalars.first, first != ";" {
                    parameterValue.unicodeScalars.append(first)
                    scalars.removeFirst()
                }
                parameterValue = parameterValue.trimmingCharacters(in: .whitespaces)
            }
            let key = name.trimmingCharacters(in: .whitespaces).lowercased()
            if !key.isEmpty, result[key] == nil { result[key] = parameterValue }
        }
        return result
    }

    /// An RFC 8187 value (`charset'language'percent-encoded`) decoded, or nil: an unknown charset, bad
    /// percent-encoding or bytes that are not valid in the charset.
    static func decodeExtended(_ value: String) -> String? {
        let parts = value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        let charset = parts[0].lowercased()
        var bytes: [UInt8] = []
        var utf8 = parts[2].utf8[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%") {
                guard let high = utf8.popFirst().flatMap(hexValue), let low = utf8.popFirst().flatMap(hexValue) else {
                    return nil
                }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        switch charset {
        case "utf-8": return String(validating: bytes, as: UTF8.self)
        case "iso-8859-1": return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        default: return nil
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// `raw` as one safe file name, or nil: its last path component (after any `/` or `\`), made safe by the rule
    /// every name in an output folder follows (``FileName/safe(_:)``).
    static func safeName(_ raw: String) -> String? {
        let last = raw.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "/" || $0 == "\\" }).last ?? ""
        return FileName.safe(String(last))
    }
}
