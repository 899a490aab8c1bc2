import Foundation
import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The `--input` list as a source of requests for `NetworkQueue.add(contentsOf:)`: read a chunk at a time
/// as the queue asks, so that a list of any length runs in the memory of the queue's window.
///
/// With an output folder, every entry of the whole list is named in order (``FileNamer``), also those of
/// other shards, so that a URL gets the same file name whether the list runs whole or in shards. An entry of
/// another shard, or (with `noClobber`) whose file exists already, gives no request: ``Tally`` counts it.
public struct ListSource: AsyncSequence, Sendable {
    public typealias Element = NetworkRequest

    /// What the list gave besides its requests.
    public final class Tally: Sendable {
        private let counts = DemoLocked((kept: 0, otherShards: 0))
        public init() {}
        /// Entries whose file was there already (`--no-clobber`): no request.
        public var kept: Int { counts.value.kept }
        /// Entries of other shards.
        public var otherShards: Int { counts.value.otherShards }
        func keep() { counts.update { $0.kept += 1 } }
        func skip() { counts.update { $0.otherShards += 1 } }
    }

    /// The list's path (`-`: standard input), opened at the first read unless it was opened already.
    public let path: String
    /// The list opened already (to count its lines on the same descriptor: a list is opened and read once).
    private let opened: LineReader?
    /// The output folder's guardian: each file's place is checked by it, and its folders are made below it without
    /// following a link as the request is added.
    public let output: OutputFolder?
    public let shard: Shard
    public let noClobber: Bool
    /// What each request's file does when it exists (without `noClobber`).
    public let existingFile: NetworkRequest.ExistingFile
    /// What counts as each request's success (its size cap: `--max-filesize`).
    public let validation: NetworkRequest.Validation
    /// The fields every request sends (none: each request is made from its URL alone, the compact form).
    public let headers: SentHeaders
    /// The connections each file may use (`--split`).
    public let split: Int
    /// With `--dry-run`: the attempts each probe may take (nil: the lines are downloaded).
    public let dryRunAttempts: Int?
    /// `--save-session`: the list's unfinished lines, kept as the run goes.
    public let session: SessionFile?
    /// `--content-disposition`: each file takes the name its response gives it.
    public let namesFromResponse: Bool
    /// With `--tree`: the leading folders of each URL's path that are dropped (`--cut-dirs`); nil: no tree.
    public let treeCutDirs: Int?
    public let tally: Tally
    /// The namer the list starts from: the program's own files in the output folder reserved.
    let namer: FileNamer
    /// Told once of each option name the list gives that the Demo does not know (and ignores), with its line.
    public let ignoredOption: @Sendable (String, Int) -> Void
    /// Fetches and reads the Metalink document of a line whose URL ends in `.meta4` or `.metalink` (nil: such a line is
    /// a file like any other). Its files become the line's requests.
    public let metalink: (@Sendable (URLRequest) async throws(MetalinkInput.Problem) -> Metalink)?

    /// The list at `path`, read from `reader` when it was opened already (to count its lines on the same
    /// descriptor: a list is opened and read once), else opened at the first read.
    public init(
        path: String, reader: LineReader? = nil, output: OutputFolder?, shard: Shard, noClobber: Bool,
        existingFile: NetworkRequest.ExistingFile, validation: NetworkRequest.Validation = .init(),
        headers: SentHeaders = .init(), split: Int = 1, dryRunAttempts: Int? = nil, treeCutDirs: Int? = nil,
        namesFromResponse: Bool = false, session: SessionFile? = nil, namer: FileNamer = FileNamer(), tally: Tally,
        ignoredOption: @escaping @Sendable (String, Int) -> Void = { _, _ in },
        metalink: (@Sendable (URLRequest) async throws(MetalinkInput.Problem) -> Metalink)? = nil
    ) {
        self.metalink = metalink
        self.namer = namer
        self.ignoredOption = ignoredOption
        self.session = session
        self.namesFromResponse = namesFromResponse
        self.treeCutDirs = treeCutDirs
        self.dryRunAttempts = dryRunAttempts
        self.headers = headers
        self.split = split
        self.path = path
        opened = reader
        self.output = output
        self.shard = shard
        self.noClobber = noClobber
        self.existingFile = existingFile
        self.validation = validation
        self.tally = tally
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let source: ListSource
        var reader: LineReader?
        var namer: FileNamer
        var assembler: InputList.Assembler
        var isAtEnd = false
        /// True once ``next()`` returned nil (the list closed).
        var isFinished = false
        /// The requests of a Metalink line not handed out yet, in reverse.
        var pending: [NetworkRequest] = []

        public mutating func next() async throws -> NetworkRequest? {
            if let request = pending.popLast() { return request }
            // Past the end it stays there: the list is not opened (or closed) again.
            guard !isFinished else { return nil }
            if reader == nil { reader = try source.opened ?? LineReader(path: source.path) }
            while let (entry, spans) = try nextEntry() {
                if source.metalink != nil, source.output != nil, source.dryRunAttempts == nil,
                    MetalinkInput.namesDocument(entry.url)
                {
                    pending = try await requests(ofDocument: entry, spans: spans).reversed()
                    if let request = pending.popLast() { return request }
                    continue
                }
                if let request = try request(for: entry, spans: spans) { return request }
            }
            reader?.finish()
            reader = nil
            isFinished = true
            return nil
        }

        /// The next whole entry of the list (its URL line and its option lines), or nil at the end.
        private mutating func nextEntry() throws -> (entry: InputList.Entry, spans: [InputList.LineSpan])? {
            if let problem = assembler.takeDeferred() {
                // The line after the last entry given: the list stops there.
                isAtEnd = true
                throw problem
            }
            guard !isAtEnd else { return nil }
            let waitsForLines = reader!.isStream
            while true {
                // A list read as it comes (`tail -f list | Demo --input -`): an entry whose next line is long in
                // coming is whole once the stream has had nothing to give for a moment (its option lines, if any,
                // come with it), so that its URL is asked now, not at the next line.
                if waitsForLines, assembler.hasEntry, !reader!.isReady(within: 200) {
                    return assembler.finish()
                }
                guard let (line, number) = try reader!.next() else { break }
                let span = reader!.lastLine
                if let done = try assembler.feed(line, number: number, offset: span.offset, length: span.length) {
                    return done
                }
            }
            isAtEnd = true
            return assembler.finish()
        }

        /// The request of `entry` (nil: none, the entry is another shard's or kept).
        private mutating func request(for read: InputList.Entry, spans: [InputList.LineSpan]) throws -> NetworkRequest?
        {
            let number = read.line
            source.session?.noteRead(line: number, spans: spans, tracks: source.shard.contains(read.url))
            let entry = try Self.placed(read, output: source.output?.path)
            // Named before the shard is chosen: every shard names the whole list alike.
            let place =
                source.output == nil
                ? nil
                : namer.place(
                    for: FileNames.base(
                        for: entry.url, name: entry.name, folders: entry.folders, treeCutDirs: source.treeCutDirs))
            guard source.shard.contains(entry.url) else {
                source.tally.skip()
                return nil
            }
            var destination = NetworkRequest.Destination.memory
            if let output = source.output, let place {
                // Its components were checked by the list's parser and the namer; the guardian checks them again.
                guard let checked = try? place.place() else {
                    throw InputList.Problem(line: number, reason: "\(place.relativePath) is not a place for a file")
                }
                let file = output.url(for: checked)
                // Files only appear complete (renamed into place), so a regular file there is whole. Anything
                // else (a directory, a FIFO) is not a download: the request runs and fails on it. A file another
                // URL saved is another's: this line's goes beside it.
                if source.noClobber, FileNames.holdsFile(at: file, of: entry.url) {
                    source.tally.keep()
                    source.session?.finished(line: number)
                    return nil
                }
                destination = .file(file)
            }
            var headers = source.headers
            // Checked when the line was read: setting them again cannot fail.
            for field in entry.headers.fields { try? headers.set(field.name, field.value) }
            if let attempts = source.dryRunAttempts {
                // Asked about, not fetched: the name it would get comes with it.
                return DryRun.probe(
                    entry.url, headers: headers, name: place?.relativePath, attempts: attempts, tag: number)
            }
            guard headers.sendsNothing(to: entry.url) else {
                return NetworkRequest(
                    headers.request(for: entry.url), destination: destination, validation: source.validation,
                    integrity: .init(checksum: entry.checksum),
                    fileOptions: source.fileOptions(mirrors: entry.mirrors), tag: number)
            }
            return NetworkRequest(
                url: entry.url, destination: destination, validation: source.validation,
                integrity: .init(checksum: entry.checksum),
                fileOptions: source.fileOptions(mirrors: entry.mirrors), tag: number)
        }

        /// The requests of the Metalink document `read` names: each file under its own name in the line's folder
        /// (made unique over the list as any line's), with its mirrors and hash, tagged with the line. The line stays
        /// in the session until all of them finished. A document that cannot be fetched or is refused is a bad line.
        private mutating func requests(ofDocument read: InputList.Entry, spans: [InputList.LineSpan]) async throws
            -> [NetworkRequest]
        {
            let number = read.line
            let tracks = source.shard.contains(read.url)
            source.session?.noteRead(line: number, spans: spans, tracks: tracks)
            let entry = try Self.placed(read, output: source.output?.path)
            try Self.checkDocumentLine(entry, output: source.output?.path)
            guard tracks else {
                source.tally.skip()
                return []
            }
            guard let output = source.output, let fetch = source.metalink else { return [] }
            var headers = source.headers
            for field in entry.headers.fields { try? headers.set(field.name, field.value) }
            let document: Metalink
            do {
                document = try await fetch(headers.request(for: entry.url))
            } catch {
                throw InputList.Problem(line: number, reason: "--metalink \(entry.url.absoluteString): \(error)")
            }
            var requests: [NetworkRequest] = []
            for file in document.files {
                let place = namer.place(for: NamedPlace(folders: entry.folders ?? [], name: file.name))
                guard let checked = try? place.place() else {
                    throw InputList.Problem(line: number, reason: "\(place.relativePath) is not a place for a file")
                }
                let destination = output.url(for: checked)
                if source.noClobber, FileNames.holdsFile(at: destination, of: file.locations[0].url) {
                    source.tally.keep()
                    continue
                }
                var options = source.fileOptions(mirrors: [])
                options.namesFileFromResponse = false
                requests.append(
                    file.request(
                        savedAt: destination, fileOptions: options, validation: source.validation,
                        making: headers.request(for:), tag: number))
            }
            if requests.isEmpty {
                source.session?.finished(line: number)
            } else {
                source.session?.expect(line: number, requests: requests.count)
            }
            return requests
        }

        /// Throws for a line that names a Metalink document (with `--output`) and gives `out=` or a checksum: the
        /// document names its own files and hashes.
        static func checkDocumentLine(_ entry: InputList.Entry, output: String?) throws {
            guard output != nil, MetalinkInput.namesDocument(entry.url), entry.name != nil || entry.checksum != nil
            else { return }
            throw InputList.Problem(
                line: entry.line, reason: "a Metalink document's line takes no out= or checksum: it names its own files"
            )
        }

        /// `entry` with its `dir=` under the output folder at `output`: an absolute one (as aria2 saves one) made
        /// relative to it. Throws for `out=` or `dir=` without an output folder, or a folder outside it.
        static func placed(_ entry: InputList.Entry, output: String?) throws -> InputList.Entry {
            guard let output else {
                if entry.name != nil || entry.folder != nil {
                    throw InputList.Problem(line: entry.line, reason: "out= and dir= need --output DIR")
                }
                return entry
            }
            guard let folder = entry.folder, folder.hasPrefix("/") else { return entry }
            var placed = entry
            placed.folder = try relative(folder, to: output, line: entry.line)
            return placed
        }

        /// An absolute `dir=` (as aria2 saves one) as a folder under `output`: nil for the folder itself; a folder
        /// outside it is a bad line.
        private static func relative(_ folder: String, to output: String, line: Int) throws -> String? {
            let root = ReportFile.resolved(output)
            let resolved = ReportFile.resolved(folder)
            if resolved == root { return nil }
            let prefix = root.hasSuffix("/") ? root : root + "/"
            guard resolved.hasPrefix(prefix) else {
                throw InputList.Problem(
                    line: line, reason: "dir=\(InputList.quoted(folder)) is outside the --output folder \(output)")
            }
            return String(resolved.dropFirst(prefix.count))
        }
    }

    /// Reads the regular list at `path` through once, as a run would (its entries, and where `out=` and `dir=` place
    /// them under `output`), and throws the first ``InputList/Problem``, or a read error. Nothing is sent or written.
    public static func check(
        path: String, output: URL?, ignoredOption: @escaping @Sendable (String, Int) -> Void
    ) throws {
        // Standard input redirected from a file is read from where it stands, which the run's own reading needs again.
        let start = path == "-" ? lseek(STDIN_FILENO, 0, SEEK_CUR) : 0
        var reader = try LineReader(path: path)
        defer {
            reader.finish()
            if path == "-", start >= 0 { lseek(STDIN_FILENO, start, SEEK_SET) }
        }
        var assembler = InputList.Assembler(ignored: ignoredOption)
        let outputPath = output?.path
        func check(_ entry: InputList.Entry) throws {
            _ = try AsyncIterator.placed(entry, output: outputPath)
            try AsyncIterator.checkDocumentLine(entry, output: outputPath)
        }
        // Nearly every line of a long list is one plain URL: known good from its bytes, it is never made a string, and
        // the assembler hears of it only when an option line follows (an entry of one plain URL line is good as it is).
        var plainLine: Int?
        while try reader.nextBytes({ bytes, number in
            if InputList.isPlainWebURL(bytes) {
                plainLine = number
                return
            }
            if let pending = plainLine, let done = assembler.feedPlainURL(number: pending) { try check(done.entry) }
            plainLine = nil
            let line = Substring(LineReader.text(of: bytes, number: number))
            if let done = try assembler.feed(line, number: number, offset: 0, length: bytes.count) {
                try check(done.entry)
            }
            if let problem = assembler.takeDeferred() { throw problem }
        }) != nil {}
        if let pending = plainLine, let done = assembler.feedPlainURL(number: pending) { try check(done.entry) }
        if let done = assembler.finish() { try check(done.entry) }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(source: self, namer: namer, assembler: InputList.Assembler(ignored: ignoredOption))
    }

    /// The file options of an entry with `mirrors`: the list's existing-file rule and connections.
    func fileOptions(mirrors: [URL]) -> NetworkRequest.FileOptions {
        .init(
            existingFile: existingFile, maximumConnections: split, mirrors: mirrors,
            namesFileFromResponse: namesFromResponse, outputFolder: output)
    }
}

/// A value under a lock, for the Demo's counters.
final class DemoLocked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value { lock.withLock { stored } }
    func update(_ change: (inout Value) -> Void) { lock.withLock { change(&stored) } }
}
