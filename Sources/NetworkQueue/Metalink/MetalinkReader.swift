import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// Reads a Metalink document with Foundation's `XMLParser` (libxml2 on Linux, through FoundationXML), after a check
/// of its bytes that no XML parser sees a declaration in: the parser is given only UTF-8 (or ASCII) documents with no
/// `DOCTYPE` and no entity, so that nothing it could expand or fetch reaches it.
enum MetalinkReader {
    static let namespace4 = "urn:ietf:params:xml:ns:metalink"
    static let namespace3 = "http://www.metalinker.org/"
    /// The deepest nesting read.
    static let maximumDepth = 32
    /// The most whole-file hashes, and the most `pieces` lists, of one file.
    static let maximumHashesPerFile = 64

    static func read(_ data: Data, limits: Metalink.Limits) throws(MetalinkError) -> Metalink {
        guard data.count <= limits.maximumDocumentBytes else {
            throw MetalinkError(
                .tooLarge, "the document has \(data.count) bytes, more than \(limits.maximumDocumentBytes)")
        }
        try checkBytes(data)
        let reader = Collector(limits: limits)
        let parser = XMLParser(data: data)
        parser.shouldProcessNamespaces = true
        parser.shouldReportNamespacePrefixes = false
        parser.shouldResolveExternalEntities = false
        parser.delegate = reader
        let parsed = parser.parse()
        if let refusal = reader.refusal { throw refusal }
        guard parsed else {
            let detail = parser.parserError.map { " (\($0.localizedDescription))" } ?? ""
            throw MetalinkError(.notXML, "the document is not well-formed XML at line \(parser.lineNumber)\(detail)")
        }
        guard let version = reader.version else {
            throw MetalinkError(.notMetalink, "the document has no metalink element")
        }
        // FoundationXML on Linux reports success for a document cut short: its end must have been read.
        guard reader.isRootClosed else {
            throw MetalinkError(
                .notXML, "the document is not well-formed XML: it ends at line \(parser.lineNumber) inside an element")
        }
        guard !reader.files.isEmpty else { throw MetalinkError(.noFiles, "the document names no file") }
        return Metalink(version: version, files: reader.files)
    }

    /// Refuses what must not reach the XML parser: another encoding than UTF-8 (a byte check could not see a
    /// declaration in it), and any `DOCTYPE` or entity declaration. On the document's bytes where they are, each a pass
    /// of `memchr`.
    private static func checkBytes(_ data: Data) throws(MetalinkError) {
        let (holdsNUL, declares) = data.withUnsafeBytes { bytes -> (Bool, Bool) in
            (Self.hasNUL(in: bytes), Self.declaresEntities(in: bytes))
        }
        if data.starts(with: [0xFE, 0xFF]) || data.starts(with: [0xFF, 0xFE]) || holdsNUL {
            throw MetalinkError(.notXML, "the document is not UTF-8 (only UTF-8 documents are read)")
        }
        if declares {
            throw MetalinkError(
                .declaresEntities, "the document declares a DOCTYPE or an entity (a Metalink needs neither)")
        }
        // The XML declaration's encoding, when it names one: UTF-8 or its subset ASCII only.
        let opening = Array("<?xml".utf8)
        if data.starts(with: opening) || data.starts(with: [0xEF, 0xBB, 0xBF] + opening) {
            let end = data.firstIndex(of: UInt8(ascii: ">")) ?? data.endIndex
            let declaration = String(decoding: data[..<end], as: UTF8.self).lowercased()
            if let range = declaration.range(of: "encoding") {
                let rest = declaration[range.upperBound...].drop { $0 == " " || $0 == "=" || $0 == "\"" || $0 == "'" }
                let name = rest.prefix { $0 != "\"" && $0 != "'" && $0 != " " && $0 != "?" }
                guard ["utf-8", "utf8", "us-ascii", "ascii"].contains(String(name)) else {
                    throw MetalinkError(
                        .notXML, "the document's encoding is \(name) (only UTF-8 documents are read)")
                }
            }
        }
    }

    private static func hasNUL(in bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return false }
        return memchr(base, 0, bytes.count) != nil
    }

    /// True when `bytes` hold `<!DOCTYPE`, `<!ENTITY`, `<!ELEMENT` or `<!ATTLIST` anywhere (a comment's or a text's
    /// too): one pass over the `<`s, found by `memchr`.
    private static func declaresEntities(in bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return false }
        let words = ["!DOCTYPE", "!ENTITY", "!ELEMENT", "!ATTLIST"].map { Array($0.utf8) }
        var offset = 0
        while offset < bytes.count, let found = memchr(base + offset, Int32(UInt8(ascii: "<")), bytes.count - offset) {
            let after = base.distance(to: found) + 1
            for word in words where after + word.count <= bytes.count {
                if word.indices.allSatisfy({ bytes[after + $0] == word[$0] }) { return true }
            }
            offset = after
        }
        return false
    }

    /// `text` without XML's white space (space, tab, CR, LF) around it: on its UTF-8, as most texts of a document
    /// (a piece's hash) have none to trim.
    static func trimmed(_ text: String) -> String {
        let bytes = text.utf8
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, isSpace(bytes[start]) { start = bytes.index(after: start) }
        while end > start, isSpace(bytes[bytes.index(before: end)]) { end = bytes.index(before: end) }
        if start == bytes.startIndex, end == bytes.endIndex { return text }
        return String(text[start..<end])
    }

    /// The parser's delegate: the document as it is read, and the first reason to refuse it.
    private final class Collector: NSObject, XMLParserDelegate {
        let limits: Metalink.Limits
        var version: Metalink.Version?
        var files: [Metalink.File] = []
        var refusal: MetalinkError?
        /// True once the root element ended.
        private(set) var isRootClosed = false
        private var names: Set<String> = []
        /// The Metalink elements open, innermost last.
        private var path: [String] = []
        /// How deep inside an element of another namespace (skipped with all it holds); 0 outside one.
        private var foreignDepth = 0
        private var file: FileBuilder?
        /// The text of the element being read, when it is one whose text is used.
        private var text: String?
        private var attributes: [String: String] = [:]

        init(limits: Metalink.Limits) { self.limits = limits }

        private func refuse(_ parser: XMLParser, _ error: MetalinkError) {
            if refusal == nil { refusal = error }
            parser.abortParsing()
        }

        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
            attributes attributeDict: [String: String] = [:]
        ) {
            guard refusal == nil else { return }
            guard path.count + foreignDepth < MetalinkReader.maximumDepth else {
                return refuse(
                    parser, MetalinkError(.tooMany, "elements nest deeper than \(MetalinkReader.maximumDepth)"))
            }
            for (name, value) in attributeDict where name.utf8.count + value.utf8.count > limits.maximumTextBytes {
                return refuse(
                    parser,
                    MetalinkError(
                        .tooMany, "an attribute of <\(elementName)> is longer than \(limits.maximumTextBytes) bytes"))
            }
            if version == nil {
                // The root.
                guard elementName == "metalink" else {
                    return refuse(
                        parser, MetalinkError(.notMetalink, "the root element is <\(elementName)>, not <metalink>"))
                }
                switch namespaceURI {
                case MetalinkReader.namespace4?: version = .metalink4
                case MetalinkReader.namespace3?: version = .metalink3
                default:
                    return refuse(
                        parser,
                        MetalinkError(
                            .notMetalink,
                            "the metalink element's namespace is \(namespaceURI.map { "'\($0)'" } ?? "none"), neither Metalink 4's nor 3's"
                        ))
                }
                path.append(elementName)
                return
            }
            guard foreignDepth == 0,
                namespaceURI == MetalinkReader.namespace4 || namespaceURI == MetalinkReader.namespace3
            else {
                foreignDepth += 1
                return
            }
            let parent = path.last ?? ""
            path.append(elementName)
            switch (elementName, parent) {
            case ("file", "metalink"), ("file", "files"):
                guard files.count < limits.maximumFiles else {
                    return refuse(
                        parser, MetalinkError(.tooMany, "the document names more than \(limits.maximumFiles) files"))
                }
                file = FileBuilder(name: attributeDict["name"])
            case ("size", "file"), ("hash", "file"), ("hash", "verification"), ("hash", "pieces"), ("url", "file"),
                ("url", "resources"):
                guard file != nil else { return }
                text = ""
                attributes = attributeDict
            case ("pieces", "file"), ("pieces", "verification"):
                // Taken out while it changes, so that its arrays are not copied (a copy a piece is quadratic).
                guard var current = file else { return }
                file = nil
                guard current.pieceLists.count < MetalinkReader.maximumHashesPerFile else {
                    return refuse(parser, MetalinkError(.tooMany, "file '\(current.label)' has too many piece lists"))
                }
                current.pieceLists.append(
                    PiecesBuilder(type: attributeDict["type"] ?? "", length: attributeDict["length"] ?? ""))
                file = current
            default:
                break
            }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            guard refusal == nil, foreignDepth == 0, var current = text else { return }
            current += string
            guard current.utf8.count <= limits.maximumTextBytes else {
                return refuse(
                    parser,
                    MetalinkError(
                        .tooMany, "the text of a <\(path.last ?? "")> is longer than \(limits.maximumTextBytes) bytes"))
            }
            text = current
        }

        func parser(
            _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?
        ) {
            guard refusal == nil else { return }
            if foreignDepth > 0 {
                foreignDepth -= 1
                return
            }
            guard let closed = path.popLast() else { return }
            if path.isEmpty { isRootClosed = true }
            let parent = path.last ?? ""
            let value = text.map(MetalinkReader.trimmed)
            text = nil
            // Taken out while it changes, so that its arrays are not copied (a copy a piece is quadratic).
            guard var current = file else { return }
            file = nil
            switch (closed, parent) {
            case ("file", _):
                do throws(MetalinkError) {
                    let made = try current.make(limits: limits, version: version ?? .metalink4)
                    guard names.insert(made.name).inserted else {
                        throw MetalinkError(.unsafeName, "two files are named '\(made.name)'")
                    }
                    files.append(made)
                } catch {
                    refuse(parser, error)
                }
                return
            case ("size", "file"):
                current.size = value
            case ("hash", "file"), ("hash", "verification"):
                guard current.hashes.count < MetalinkReader.maximumHashesPerFile else {
                    return refuse(parser, MetalinkError(.tooMany, "file '\(current.label)' has too many hashes"))
                }
                current.hashes.append((attributes["type"] ?? "", value ?? ""))
            case ("hash", "pieces"):
                guard var pieces = current.pieceLists.popLast() else { return }
                guard pieces.hashes.count < limits.maximumPiecesPerFile else {
                    return refuse(
                        parser,
                        MetalinkError(
                            .tooMany, "file '\(current.label)' has more than \(limits.maximumPiecesPerFile) pieces"))
                }
                pieces.hashes.append(value ?? "")
                current.pieceLists.append(pieces)
            case ("url", "file"), ("url", "resources"):
                guard current.urls.count < limits.maximumLocationsPerFile else {
                    return refuse(
                        parser,
                        MetalinkError(
                            .tooMany,
                            "file '\(current.label)' has more than \(limits.maximumLocationsPerFile) locations"))
                }
                current.urls.append(
                    URLBuilder(
                        text: value ?? "", priority: attributes["priority"], preference: attributes["preference"],
                        country: attributes["location"], type: attributes["type"]))
            default:
                break
            }
            file = current
        }

        // A DOCTYPE never reaches the parser (see `checkBytes`); these refuse one all the same.
        func parser(_ parser: XMLParser, foundInternalEntityDeclarationWithName name: String, value: String?) {
            refuse(parser, MetalinkError(.declaresEntities, "the document declares the entity '\(name)'"))
        }

        func parser(
            _ parser: XMLParser, foundExternalEntityDeclarationWithName name: String, publicID: String?,
            systemID: String?
        ) {
            refuse(parser, MetalinkError(.declaresEntities, "the document declares the entity '\(name)'"))
        }

        func parser(_ parser: XMLParser, resolveExternalEntityName name: String, systemID: String?) -> Data? { nil }
    }
}
