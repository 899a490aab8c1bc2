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
    public let output: URL?
    /// The output folder's path with a slash after it, made once: each file's URL is made from its path (half the cost
    /// of appending a component to a folder's URL).
    private let outputPrefix: String?
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

    /// The list at `path`, read from `reader` when it was opened already (to count its lines on the same
    /// descriptor: a list is opened and read once), else opened at the first read.
    public init(
        path: String, reader: LineReader? = nil, output: URL?, shard: Shard, noClobber: Bool,
        existingFile: NetworkRequest.ExistingFile, validation: NetworkRequest.Validation = .init(),
        headers: SentHeaders = .init(), split: Int = 1, dryRunAttempts: Int? = nil, treeCutDirs: Int? = nil,
        namesFromResponse: Bool = false, session: SessionFile? = nil, tally: Tally
    ) {
        self.session = session
        self.namesFromResponse = namesFromResponse
        self.treeCutDirs = treeCutDirs
        self.dryRunAttempts = dryRunAttempts
        self.headers = headers
        self.split = split
        self.path = path
        opened = reader
        self.output = output
        outputPrefix = output.map { $0.path.hasSuffix("/") ? $0.path : $0.path + "/" }
        self.shard = shard
        self.noClobber = noClobber
        self.existingFile = existingFile
        self.validation = validation
        self.tally = tally
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let source: ListSource
        var reader: LineReader?
        var namer = FileNamer()
        /// The folders under the output folder made so far (each made once).
        var madeFolders: Set<String> = []

        public mutating func next() async throws -> NetworkRequest? {
            if reader == nil { reader = try source.opened ?? LineReader(path: source.path) }
            while let (line, number) = try reader!.next() {
                guard let entry = try InputList.parse(line, number: number) else { continue }
                let place = reader!.lastLine
                source.session?.noteRead(
                    line: number, offset: place.offset, length: place.length, text: line,
                    tracks: source.shard.contains(entry.url))
                if source.output == nil, entry.name != nil || entry.folder != nil {
                    throw InputList.Problem(line: number, reason: "out= and dir= need --output DIR")
                }
                // Named before the shard is chosen: every shard names the whole list alike.
                let name =
                    source.output == nil
                    ? nil
                    : namer.name(
                        forBase: FileNames.base(
                            for: entry.url, name: entry.name, folder: entry.folder, treeCutDirs: source.treeCutDirs))
                guard source.shard.contains(entry.url) else {
                    source.tally.skip()
                    continue
                }
                var destination = NetworkRequest.Destination.memory
                if let prefix = source.outputPrefix, let name {
                    // Said to be a file: Foundation would otherwise stat the path to find out.
                    let file = URL(fileURLWithPath: prefix + name, isDirectory: false)
                    // Its folder under the output folder, made once (a dry run makes nothing; a folder that cannot be
                    // made fails the file's request, not the list).
                    if source.dryRunAttempts == nil, let slash = name.lastIndex(of: "/") {
                        let folder = prefix + name[..<slash]
                        if madeFolders.insert(folder).inserted {
                            try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                        }
                    }
                    // Files only appear complete (renamed into place), so a regular file there is whole. Anything
                    // else (a directory, a FIFO) is not a download: the request runs and fails on it.
                    if source.noClobber, FileNames.isRegularFile(file) {
                        source.tally.keep()
                        source.session?.finished(line: number)
                        continue
                    }
                    destination = .file(file)
                }
                if let attempts = source.dryRunAttempts {
                    // Asked about, not fetched: the name it would get comes with it.
                    return DryRun.probe(entry.url, headers: source.headers, name: name, attempts: attempts, tag: number)
                }
                guard source.headers.sendsNothing(to: entry.url) else {
                    return NetworkRequest(
                        source.headers.request(for: entry.url), destination: destination, validation: source.validation,
                        integrity: .init(checksum: entry.checksum),
                        fileOptions: source.fileOptions(mirrors: entry.mirrors), tag: number)
                }
                return NetworkRequest(
                    url: entry.url, destination: destination, validation: source.validation,
                    integrity: .init(checksum: entry.checksum),
                    fileOptions: source.fileOptions(mirrors: entry.mirrors), tag: number)
            }
            reader?.finish()
            return nil
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(source: self) }

    /// The file options of an entry with `mirrors`: the list's existing-file rule and connections.
    func fileOptions(mirrors: [URL]) -> NetworkRequest.FileOptions {
        .init(
            existingFile: existingFile, maximumConnections: split, mirrors: mirrors,
            namesFileFromResponse: namesFromResponse)
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
