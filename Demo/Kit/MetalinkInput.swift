import Foundation
import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads the `--metalink` document: a regular file only, read whole up to the document limit before anything of it
/// is used. A FIFO, a device or a folder is refused without blocking (the file is opened without waiting for a
/// writer, then checked on its descriptor), and so is a file larger than the limit.
public enum MetalinkInput {
    /// Why the document could not be used.
    public struct Problem: Error, Equatable, CustomStringConvertible {
        /// The reason, for a person.
        public let description: String
    }

    /// True when `url`'s path ends in `.meta4` or `.metalink` (any case): a list's line that names a document.
    public static func namesDocument(_ url: URL) -> Bool {
        let path = url.path.lowercased()
        return path.hasSuffix(".meta4") || path.hasSuffix(".metalink")
    }

    /// The document at `path`, read and checked (``Metalink/init(parsing:limits:)``).
    public static func document(at path: String, limits: Metalink.Limits = .init()) throws(Problem) -> Metalink {
        let data = try contents(of: path, limit: limits.maximumDocumentBytes)
        do {
            return try Metalink(parsing: data, limits: limits)
        } catch {
            throw Problem(description: error.description)
        }
    }

    /// The document at `request`'s URL, fetched into memory on its own queue over `transport` (at most the document
    /// limit: a longer body fails the fetch), then read and checked. The queue's retry policy is `retries`.
    public static func document(
        from request: URLRequest, transport: any Transport, retries: Int, limits: Metalink.Limits = .init()
    ) async throws(Problem) -> Metalink {
        let queue = NetworkQueue(transport: transport)
        queue.retryPolicy = RetryPolicy(maximumAttempts: retries + 1)
        let fetch = NetworkRequest(
            request, validation: .init(maximumResponseSize: .bytes(Int64(limits.maximumDocumentBytes))))
        do {
            try queue.add(fetch)
        } catch {
            throw Problem(description: "cannot fetch it: \(error.localizedDescription)")
        }
        queue.go()
        _ = await queue.run()
        switch fetch.result {
        case .success(let response)?:
            do {
                return try Metalink(parsing: response.body, limits: limits)
            } catch {
                throw Problem(description: error.description)
            }
        case .failure(let error)?:
            throw Problem(description: "cannot fetch it: \(error.localizedDescription)")
        case nil:
            throw Problem(description: "cannot fetch it: the fetch did not end")
        }
    }

    /// The bytes of the regular file at `path`; more than `limit` is refused.
    static func contents(of path: String, limit: Int) throws(Problem) -> Data {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw Problem(description: "cannot open it: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw Problem(description: "it is not a regular file (a FIFO, a device or a folder is there)")
        }
        guard Int(info.st_size) <= limit else {
            throw Problem(description: "metalink refused: the document has \(info.st_size) bytes, more than \(limit)")
        }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw Problem(description: "cannot read it: \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            data.append(contentsOf: buffer[..<count])
            // It grew while it was read.
            guard data.count <= limit else {
                throw Problem(description: "metalink refused: the document has more than \(limit) bytes")
            }
        }
        return data
    }
}
