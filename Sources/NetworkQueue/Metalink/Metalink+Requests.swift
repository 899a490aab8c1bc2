import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension Metalink {
    /// One request per file, saved in `folder` under the file's name: the file's best location as its URL, the
    /// others as its ``NetworkRequest/FileOptions-swift.struct/mirrors`` (best first), its strongest hash as its
    /// ``NetworkRequest/Integrity-swift.struct/checksum``.
    ///
    /// Every name goes through the output folder's guardian (``OutputFolder/Place``) before any request is made:
    /// a name the folder refuses (one of the project's own suffixes, say) refuses the whole document, and nothing is
    /// added. A mirror on another origin gets no credentials of the first (see
    /// ``NetworkRequest/FileOptions-swift.struct/mirrors``).
    ///
    /// - Parameters:
    ///   - folder: where the files go.
    ///   - fileOptions: the options each request gets, with its ``NetworkRequest/FileOptions-swift.struct/mirrors``
    ///     and ``NetworkRequest/FileOptions-swift.struct/outputFolder`` replaced; default the defaults.
    ///   - validation: each request's validation; default the defaults.
    ///   - making: the request sent to a file's first location, made from its URL (headers of your own, say); default
    ///     a plain GET. Its mirrors get the same fields but those a cross-origin redirect strips.
    public func requests(
        in folder: OutputFolder, fileOptions: NetworkRequest.FileOptions = .init(),
        validation: NetworkRequest.Validation = .init(), making: (URL) -> URLRequest = { URLRequest(url: $0) }
    ) throws(MetalinkError) -> [NetworkRequest] {
        var places: [OutputFolder.Place] = []
        places.reserveCapacity(files.count)
        for file in files {
            do {
                places.append(try OutputFolder.Place(name: file.name))
            } catch {
                throw MetalinkError(.unsafeName, "the output folder refuses file '\(file.name)': \(error.description)")
            }
        }
        var options = fileOptions
        options.outputFolder = folder
        return zip(files, places).map { file, place in
            file.request(savedAt: folder.url(for: place), fileOptions: options, validation: validation, making: making)
        }
    }
}

extension Metalink.File {
    /// The request for this file saved at `destination`: its best location as its URL (sent as `making` makes it), the
    /// others as its ``NetworkRequest/FileOptions-swift.struct/mirrors`` (those of `fileOptions` replaced), its
    /// ``checksum`` as its ``NetworkRequest/Integrity-swift.struct/checksum``. What
    /// ``Metalink/requests(in:fileOptions:validation:making:)`` makes of each file, for a caller that places the files
    /// itself (`destination` should lie in `fileOptions`' ``NetworkRequest/FileOptions-swift.struct/outputFolder``).
    /// `tag`: the request's ``NetworkRequest/tag``; default 0.
    public func request(
        savedAt destination: URL, fileOptions: NetworkRequest.FileOptions = .init(),
        validation: NetworkRequest.Validation = .init(), making: (URL) -> URLRequest = { URLRequest(url: $0) },
        tag: Int = 0
    ) -> NetworkRequest {
        var options = fileOptions
        options.mirrors = locations.dropFirst().map(\.url)
        return NetworkRequest(
            making(locations[0].url), destination: .file(destination), validation: validation,
            integrity: .init(checksum: checksum), fileOptions: options, tag: tag)
    }
}
