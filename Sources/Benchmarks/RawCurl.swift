#if os(Linux)
    import CurlShim
    import Foundation
    import Glibc

    /// The libcurl baseline: the smallest multi loop that does the job — `window` reused easy handles on
    /// one multi handle, `curl_multi_perform` + `curl_multi_poll` on the calling thread, each body counted
    /// (or written to a file with 1 MiB coalesced writes, as the queue does). No redirects, no parsing.
    final class RawCurl {
        private typealias Handle = OpaquePointer
        private let easyInit: @convention(c) () -> Handle?
        private let easyCleanup: @convention(c) (Handle?) -> Void
        private let multiInit: @convention(c) () -> Handle?
        private let multiCleanup: @convention(c) (Handle?) -> Int32
        private let multiAdd: @convention(c) (Handle?, Handle?) -> Int32
        private let multiRemove: @convention(c) (Handle?, Handle?) -> Int32
        private let multiPerform: @convention(c) (Handle?, UnsafeMutablePointer<Int32>?) -> Int32
        private let multiPoll:
            @convention(c) (Handle?, UnsafeMutableRawPointer?, UInt32, Int32, UnsafeMutablePointer<Int32>?) -> Int32
        private let multiInfoRead: @convention(c) (Handle?, UnsafeMutablePointer<Int32>?) -> UnsafeMutableRawPointer?
        private let setopt: UnsafeMutableRawPointer

        /// One transfer's sink: bytes counted, or buffered and written to a file.
        final class Sink {
            var bytes = 0
            var buffer = Data()
            var file: FileHandle?

            func flush() {
                guard let file, !buffer.isEmpty else { return }
                try? file.write(contentsOf: buffer)
                buffer.removeAll(keepingCapacity: true)
            }
        }

        init() throws {
            guard let library = dlopen("libcurl.so.4", RTLD_NOW) else { throw BenchmarkFailure("libcurl not found") }
            func function<F>(_ name: String, _ type: F.Type) throws -> F {
                guard let symbol = dlsym(library, name) else { throw BenchmarkFailure("libcurl lacks \(name)") }
                return unsafeBitCast(symbol, to: type)
            }
            easyInit = try function("curl_easy_init", (@convention(c) () -> Handle?).self)
            easyCleanup = try function("curl_easy_cleanup", (@convention(c) (Handle?) -> Void).self)
            multiInit = try function("curl_multi_init", (@convention(c) () -> Handle?).self)
            multiCleanup = try function("curl_multi_cleanup", (@convention(c) (Handle?) -> Int32).self)
            multiAdd = try function("curl_multi_add_handle", (@convention(c) (Handle?, Handle?) -> Int32).self)
            multiRemove = try function("curl_multi_remove_handle", (@convention(c) (Handle?, Handle?) -> Int32).self)
            multiPerform = try function(
                "curl_multi_perform", (@convention(c) (Handle?, UnsafeMutablePointer<Int32>?) -> Int32).self)
            multiPoll = try function(
                "curl_multi_poll",
                (@convention(c) (Handle?, UnsafeMutableRawPointer?, UInt32, Int32, UnsafeMutablePointer<Int32>?) ->
                    Int32).self)
            multiInfoRead = try function(
                "curl_multi_info_read",
                (@convention(c) (Handle?, UnsafeMutablePointer<Int32>?) -> UnsafeMutableRawPointer?).self)
            guard let symbol = dlsym(library, "curl_easy_setopt") else { throw BenchmarkFailure("no curl_easy_setopt") }
            setopt = symbol
        }

        /// Fetches every URL, `window` at a time; bodies go to `directory` when given. Returns the failures.
        /// `trusted`: a PEM file of CA certificates to verify TLS peers with (CURLOPT_CAINFO).
        func run(urls: [URL], window: Int, directory: URL? = nil, trusted: URL? = nil) -> Int {
            guard let multi = multiInit() else { return urls.count }
            defer { _ = multiCleanup(multi) }
            var idle: [Handle] = []
            var sinks: [Handle: (Sink, Int)] = [:]
            var next = 0
            var failures = 0
            func start(_ easy: Handle) {
                let index = next
                next += 1
                let sink = Sink()
                if let directory {
                    let path = directory.appendingPathComponent("curl-\(index).bin").path
                    _ = FileManager.default.createFile(atPath: path, contents: nil)
                    sink.file = FileHandle(forWritingAtPath: path)
                }
                sinks[easy] = (sink, index)
                let pointer = UnsafeMutableRawPointer(easy)
                _ = urls[index].absoluteString.withCString { nq_setopt_pointer(setopt, pointer, 10_002, $0) }  // URL
                _ = nq_setopt_long(setopt, pointer, 99, 1)  // NOSIGNAL
                if let trusted {
                    _ = trusted.path.withCString { nq_setopt_pointer(setopt, pointer, 10_065, $0) }  // CAINFO
                    _ = nq_setopt_long(setopt, pointer, 237, 1)  // PIPEWAIT: multiplex on HTTP/2
                }
                _ = nq_setopt_pointer(setopt, pointer, 20_011, unsafeBitCast(rawCurlWrite, to: UnsafeRawPointer.self))
                _ = nq_setopt_pointer(setopt, pointer, 10_001, Unmanaged.passUnretained(sink).toOpaque())
                _ = multiAdd(multi, easy)
            }
            for _ in 0..<min(window, urls.count) {
                guard let easy = easyInit() else { return urls.count }
                start(easy)
            }
            var running: Int32 = 0
            var remaining: Int32 = 0
            while !sinks.isEmpty {
                _ = multiPerform(multi, &running)
                while let message = multiInfoRead(multi, &remaining) {
                    guard message.load(as: Int32.self) == 1 else { continue }
                    let easy = message.load(fromByteOffset: 8, as: OpaquePointer.self)
                    let code = message.load(fromByteOffset: 16, as: Int32.self)
                    _ = multiRemove(multi, easy)
                    if let (sink, _) = sinks.removeValue(forKey: easy) {
                        sink.flush()
                        try? sink.file?.close()
                        if code != 0 { failures += 1 }
                    }
                    if next < urls.count { start(easy) } else { idle.append(easy) }
                }
                if !sinks.isEmpty { _ = multiPoll(multi, nil, 0, 1000, nil) }
            }
            for easy in idle { easyCleanup(easy) }
            return failures
        }
    }

    private let rawCurlWrite: @convention(c) (UnsafeMutableRawPointer?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
        data, size, count, user in
        let sink = Unmanaged<RawCurl.Sink>.fromOpaque(user!).takeUnretainedValue()
        let length = size * count
        sink.bytes += length
        if sink.file != nil {
            sink.buffer.append(UnsafeRawBufferPointer(start: data, count: length).assumingMemoryBound(to: UInt8.self))
            if sink.buffer.count >= 1 << 20 { sink.flush() }
        }
        return length
    }
#endif
