#if os(Linux)
    import Foundation
    import FoundationNetworking
    import LoopbackServer
    @testable import NetworkQueue
    import TestSupport
    import Testing

    /// What only libcurl's transport promises: a cancelled connection is closed, pause and rate cap work,
    /// a CA can be added, and a storm of cancels leaves nothing behind.
    @Suite(.admitted, .timeLimit(.minutes(10))) struct CurlTransportTests {
        @Test func libcurlLoadsAndIsTheDefaultOnLinux() throws {
            #expect(CurlTransport.isAvailable)
            #expect(NetworkQueue.makeDefaultTransport() is CurlTransport)
            let transport = try CurlTransport()
            #expect(transport.libraryVersion.split(separator: ".").count == 3)
        }

        /// A HEAD a server answers with a body leaves those bytes on its connection (RFC 9110 §9.3.2: a HEAD's
        /// response has none): the next request there reads them as its response. Such a request is sent again, once,
        /// on a new connection, so that every HEAD and GET over two connections gets its own answer.
        @Test func aHEADAnsweredWithABodyNeverFailsTheNextRequestOnItsConnection() async throws {
            let server = try LoopbackServer()
            let queue = NetworkQueue.oneAttempt(transport: try CurlTransport())
            queue.maxConcurrentRequestCount = 2
            queue.cancelsAllOnFailure = false
            var requests: [NetworkRequest] = []
            for index in 0..<16 {
                var head = URLRequest(url: server.url("/bytes/\(100 + index)?headBody=1"))
                head.httpMethod = index % 2 == 0 ? "HEAD" : "GET"
                let request = NetworkRequest(head, tag: index)
                requests.append(request)
                try queue.add(request)
            }
            let progress = await queue.run()
            #expect(progress.finishedRequestCount == 16, "\(requests.map { String(describing: $0.failure) })")
            for (index, request) in requests.enumerated() where index % 2 == 1 {
                #expect(request.response?.body.count == 100 + index)
            }
        }

        @Test func aCancelledDownloadClosesItsConnectionAndStopsTheBytes() async throws {
            let server = try LoopbackServer()
            let queue = NetworkQueue.oneAttempt(transport: try CurlTransport())
            // Cancelled by the delegate at its headers (seed 1's first draw is 0), on the delivery queue.
            let canceller = Canceller(seed: 1, maximumUpdates: 0)
            queue.delegate = canceller
            // 60 MB at 10 MB/s: under the 64 MiB in-memory cap, long enough to be cancelled mid-body.
            let request = request(server.url("/bytes/60000000?rate=10000000"), tag: 1)
            try queue.add(request)
            queue.go()
            await queue.run()
            let writtenAtCancel = server.statistics.bytesWritten
            await eventually { server.statistics.openConnections == 0 }
            #expect(server.statistics.openConnections == 0)
            // Loopback socket buffers hold a few MB; a connection left open would carry on to 60 MB.
            #expect(server.statistics.bytesWritten - writtenAtCancel < 16_000_000)
            #expect(server.statistics.bytesWritten < 30_000_000)
            #expect(request.state == .cancelled)
            #expect(canceller.ends.current.map(\.tag) == [1])
            #expect(canceller.eventsAfterEnd.current == 0)
        }

        /// A program the app starts while a transfer runs inherits none of its connections: cancelled, the
        /// connection closes at once although the program still runs. libcurl before 8.17 opens its sockets without
        /// close-on-exec; the program then held the connection open and the server went on sending the 40 s body.
        @Test func aProgramStartedMidTransferHoldsNoConnectionOpen() async throws {
            let server = try LoopbackServer()
            let queue = NetworkQueue.oneAttempt(transport: try CurlTransport())
            let directory = try temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let child = Box<SpawnedProcess?>(nil)
            let request = NetworkRequest(
                URLRequest(url: server.url("/bytes/4000000?rate=100000")),
                handlers: .init(onDownloadProgress: { progress in
                    guard progress.completedBytes > 0, child.current == nil else { return }
                    // Started as an app would start it (every descriptor not close-on-exec passes), then cancelled.
                    child.with {
                        $0 = try? SpawnedProcess("/bin/sleep", ["600"], in: directory, inheritingDescriptors: true)
                    }
                    queue.cancelAll()
                }))
            try queue.add(request)
            await queue.run()
            let program = try #require(child.current, "the program did not start")
            defer {
                program.kill()
                program.waitForExit()
            }
            #expect(request.state == .cancelled)
            // Paced at 100 kB/s the body would take 40 s: the server ends it as soon as the connection closes.
            await eventually { server.statistics.inFlight == 0 }
            #expect(
                server.statistics.maxInFlightKept == 0, "the server sent the whole body: the connection stayed open")
            #expect(kill(program.pid, 0) == 0, "the program ended before the check: the test proves nothing")
        }

        @Test func aPausedTransferResumesAndDeliversTheExactBody() async throws {
            let server = try LoopbackServer()
            let transport = try CurlTransport()
            let received = Box(Data())
            let handle = Box<(any TransferHandle)?>(nil)
            let pausedOnce = Box(false)
            let done = Box<URLError??>(nil)
            let size = 3_000_000
            await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
                let started = transport.startTransfer(URLRequest(url: server.url("/bytes/\(size)"))) { event in
                    switch event {
                    case .data(let data):
                        received.with { $0.append(data) }
                        // Paused on the transport's thread at the first chunk, resumed from another one.
                        if !pausedOnce.current, let handle = handle.current {
                            pausedOnce.with { $0 = true }
                            let throttled = handle as? any ThrottlableTransfer
                            #expect(throttled != nil)
                            throttled?.setReceivingPaused(true)
                            DispatchQueue.global().async { throttled?.setReceivingPaused(false) }
                        }
                    case .completed(let error):
                        done.with { $0 = .some(error) }
                        // The box holds the handle, whose events closure holds the box: break the cycle.
                        handle.with { $0 = nil }
                        finished.resume()
                    case .head, .sent, .redirect, .metrics: break
                    }
                }
                handle.with { $0 = started }
            }
            #expect(done.current == .some(nil))
            #expect(pausedOnce.current)
            #expect(received.current == Data((0..<size).map { UInt8(truncatingIfNeeded: $0) }))
        }

        /// One transfer of `request` on `transport`: its final status, body and error; `thread` gets the name of
        /// the thread its head arrived on.
        func exchange(
            _ transport: CurlTransport, _ request: URLRequest, thread: Box<String?>? = nil
        ) async -> (status: Int?, body: String, error: URLError?) {
            let status = Box<Int?>(nil)
            let body = Box(Data())
            let error = await withCheckedContinuation { (finished: CheckedContinuation<URLError?, Never>) in
                _ = transport.startTransfer(request) { event in
                    switch event {
                    case .head(let head):
                        status.with { $0 = head.statusCode }
                        thread?.with { $0 = Thread.current.name }
                    case .data(let data): body.with { $0.append(data) }
                    case .completed(let error): finished.resume(returning: error)
                    case .sent, .redirect, .metrics: break
                    }
                }
            }
            return (status.current, String(decoding: body.current, as: UTF8.self), error)
        }

        /// Easy handles are kept configured between transfers: a HEAD's, a POST's or a PUT's settings must not
        /// reach the next transfer on the same handle (one at a time, so each reuses the one spare handle).
        @Test func aReusedHandleCarriesNothingOfItsPreviousTransfer() async throws {
            let server = try LoopbackServer()
            let transport = try CurlTransport()
            func request(_ path: String, _ method: String = "GET", body: String? = nil) -> URLRequest {
                var request = URLRequest(url: server.url(path))
                request.httpMethod = method
                request.httpBody = body.map { Data($0.utf8) }
                return request
            }
            let head = await exchange(transport, request("/bytes/100", "HEAD"))
            #expect(head.status == 200 && head.body.isEmpty && head.error == nil)
            let get = await exchange(transport, request("/bytes/5"))
            #expect(get.status == 200 && get.body.utf8.count == 5 && get.error == nil)
            let post = await exchange(transport, request("/upload", "POST", body: "hello"))
            #expect(post.status == 200 && post.body == "5" && post.error == nil)
            let afterPost = await exchange(transport, request("/upload"))
            #expect(afterPost.status == 200 && afterPost.body == "0" && afterPost.error == nil)
            let put = await exchange(transport, request("/upload", "PUT", body: "abc"))
            #expect(put.status == 200 && put.body == "3" && put.error == nil)
            // HEAD on a route that answers HEAD without a body (`/upload` would send one, desynchronising the
            // connection for the next request).
            let headAfterPut = await exchange(transport, request("/bytes/100", "HEAD"))
            #expect(headAfterPut.status == 200 && headAfterPut.body.isEmpty)
            let last = await exchange(transport, request("/upload"))
            #expect(last.status == 200 && last.body == "0" && last.error == nil)
            // Plain GETs in a row: from the second on, a run sets only its URL (its other options are the run's before
            // it). A GET with a header of its own between them leaves nothing of it on the handle.
            let plain = await exchange(transport, request("/bytes/7"))
            #expect(plain.status == 200 && plain.body.utf8.count == 7 && plain.error == nil)
            var marked = request("/bytes/3")
            marked.setValue("yes", forHTTPHeaderField: "X-Mark")
            let markedRun = await exchange(transport, marked)
            #expect(markedRun.status == 200 && markedRun.body.utf8.count == 3)
            let plainAgain = await exchange(transport, request("/bytes/4"))
            #expect(plainAgain.status == 200 && plainAgain.body.utf8.count == 4)
            let headAfterPlain = await exchange(transport, request("/bytes/100", "HEAD"))
            #expect(headAfterPlain.status == 200 && headAfterPlain.body.isEmpty)
            let plainAfterHead = await exchange(transport, request("/bytes/6"))
            #expect(plainAfterHead.status == 200 && plainAfterHead.body.utf8.count == 6)
            let statistics = server.statistics
            #expect(
                statistics.log.suffix(5) == [
                    "GET /bytes/7", "GET /bytes/3", "GET /bytes/4", "HEAD /bytes/100", "GET /bytes/6",
                ])
            let headers = statistics.headers.suffix(5).map { ($0["x-mark"], $0["accept-encoding"]) }
            #expect(headers.map(\.0) == [nil, "yes", nil, nil, nil])
            #expect(headers.map(\.1) == ["identity", "identity", "identity", "identity", "identity"])
            #expect(statistics.connections == 1)
        }

        /// Starts six transfers the server holds until all six have arrived; returns the names of the threads
        /// their heads arrived on, in the engines' order: how many on each.
        func spread(over transport: CurlTransport, _ server: LoopbackServer) async -> [Int] {
            let threads = Box<[String]>([])
            let failures = Box(0)
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                let remaining = Box(6)
                for _ in 0..<6 {
                    _ = transport.startTransfer(URLRequest(url: server.url("/barrier/1?n=6"))) { event in
                        switch event {
                        case .head: threads.with { $0.append(Thread.current.name ?? "?") }
                        case .completed(let error):
                            if error != nil { failures.with { $0 += 1 } }
                            if remaining.with({ remaining in
                                remaining -= 1
                                return remaining
                            }) == 0 {
                                done.resume()
                            }
                        case .data, .sent, .redirect, .metrics: break
                        }
                    }
                }
            }
            #expect(failures.current == 0)
            return transport.threadNames.map { name in threads.current.filter { $0 == name }.count }
        }

        @Test func transfersGoToTheEngineWithTheFewest() async throws {
            let server = try LoopbackServer()
            var options = CurlTransport.Options()
            options.engineThreads = 3
            let transport = try CurlTransport(options: options)
            #expect(transport.threadNames.count == 3)
            #expect(Set(transport.threadNames).count == 3)
            #expect(transport.threadName == transport.threadNames[0])
            // Spread, the fewest first.
            #expect(await spread(over: transport, server) == [2, 2, 2])
            // Small transfers (1 byte, the barrier's too) are spread as well: one engine thread was the bottleneck of
            // a batch of small files.
            for _ in 0..<8 { _ = await exchange(transport, URLRequest(url: server.url("/bytes/1"))) }
            #expect(await spread(over: transport, server) == [2, 2, 2])
        }

        /// A request made from a URL alone goes to libcurl as its text, with no `URL` parsed on the way: its cookies,
        /// its redirects and its response's URL are the same as a `URLRequest`'s would be.
        @Test func aRequestOfAURLsTextKeepsCookiesRedirectsAndItsURL() async throws {
            let server = try LoopbackServer()
            let queue = NetworkQueue.oneAttempt(transport: try CurlTransport())
            queue.maxConcurrentRequestCount = 1
            let setter = NetworkRequest(url: server.url("/cookie?value=text"))
            let redirected = NetworkRequest(url: server.url("/redirect/2?to=/bytes/20"))
            try queue.add(setter)
            try queue.add(redirected)
            let progress = await queue.run()
            #expect(progress.finishedRequestCount == 2)
            let response = try #require(try redirected.result?.get())
            #expect(response.body == pattern(0..<20))
            // The head's URL, parsed when first read, is the last one's.
            #expect(response.head.url == server.url("/bytes/20"))
            #expect(response.head.httpURLResponse.url == server.url("/bytes/20"))
            #expect(try setter.result?.get().head.url == server.url("/cookie?value=text"))
            // The cookie the first set went with the second, and with each of its redirects.
            let sent = server.statistics.headers.suffix(3).map { $0["cookie"] }
            #expect(sent == ["session=text", "session=text", "session=text"])
            #expect(server.statistics.log.filter { $0.hasPrefix("GET /redirect/") }.count == 2)
            // Its scheme is read from the text, in any case.
            for secure in ["https://a.test/", "HTTPS://a.test", "HtTpS:x"] { #expect(CurlTransfer.isSecure(secure)) }
            for plain in ["http://a.test/", "https", "httpsx://a", "", "ftp://a"] {
                #expect(!CurlTransfer.isSecure(plain))
            }
        }

        @Test func engineThreadsShareOneCookieJar() async throws {
            let server = try LoopbackServer()
            var options = CurlTransport.Options()
            options.engineThreads = 2
            let transport = try CurlTransport(options: options)
            let setter = Box<String?>(nil)
            let reader = Box<String?>(nil)
            // Each placement below is decided by the engines' counts (small transfers are spread too), so each waits
            // for the last transfer to leave its engine's count (a transfer that has just ended may still count for a
            // moment).
            // Equal counts: the first engine sets the cookie.
            let set = await exchange(transport, URLRequest(url: server.url("/cookie?value=shared")), thread: setter)
            #expect(set.status == 200 && set.error == nil)
            await eventually { transport.engineLoads == [0, 0] }
            // The first engine is kept busy by a held transfer (equal counts again), so the read goes to the second.
            let held = Box<URLError??>(nil)
            _ = transport.startTransfer(URLRequest(url: server.url("/barrier/1?n=2"))) { event in
                if case .completed(let error) = event { held.with { $0 = .some(error) } }
            }
            #expect(transport.engineLoads == [1, 0])
            let read = await exchange(transport, URLRequest(url: server.url("/bytes/1")), thread: reader)
            #expect(read.status == 200 && read.error == nil)
            #expect(server.statistics.headers.last?["cookie"] == "session=shared")
            #expect(setter.current == transport.threadNames[0] && reader.current == transport.threadNames[1])
            // The second arrival releases the held transfer.
            let release = await exchange(transport, URLRequest(url: server.url("/barrier/1?n=2")))
            #expect(release.error == nil)
            await eventually { held.current != nil }
            #expect(held.current == .some(nil))
        }

        @Test func aRateCapAndPauseAreRefusedByURLSessionOnly() throws {
            let url = URL(string: "http://127.0.0.1:9/")!
            let session = URLSessionTransport().startTransfer(URLRequest(url: url)) { _ in }
            #expect(!(session is any ThrottlableTransfer))
            session.cancel()
            let curl = try CurlTransport().startTransfer(URLRequest(url: url)) { _ in }
            let throttled = try #require(curl as? any ThrottlableTransfer)
            throttled.setMaximumBytesPerSecond(1_000)
            curl.cancel()
        }

        /// 1,000 transfers over 10 drains, each cancelled mid-body (at its headers or after 1-3 later
        /// progress updates, decided by the delegate on the delivery queue) or while pending: each ends
        /// cancelled exactly once with nothing after, and once the queue is gone its transport and its
        /// thread are gone and the server sees no connection left (every socket closed).
        @Test func aThousandCancelsMidBodyLeaveNothingBehind() async throws {
            let server = try LoopbackServer()
            weak var weakTransport: CurlTransport?
            let threadName: String
            do {
                let transport = try CurlTransport()
                weakTransport = transport
                threadName = transport.threadName
                // The thread names itself as it starts.
                await eventually { Self.threadNames().contains(threadName) }
                #expect(Self.threadNames().contains(threadName))
                let queue = NetworkQueue.oneAttempt(transport: transport)
                let canceller = Canceller(seed: 7)
                queue.delegate = canceller
                queue.maxConcurrentRequestCount = 8
                var random = SeededGenerator(seed: 11)
                // 200 s bodies, trickled: the delegate's cancel always comes first, however late a loaded run
                // delivers the head or the progress it counts (2 MB bodies sometimes finished first under TSan, and
                // 10 s ones in a clean-clone run of the whole suite at once). A trickle, not a stall: the queue's
                // progress must go on changing for the countdowns to reach their cancels.
                // Each request's own progress counts down too: the queue's progress may not change while a drain's last
                // request runs alone (its fraction counts requests when sizes are unknown), and that request would
                // then run its whole 200 s uncancelled.
                for drain in 0..<10 {
                    let requests = (0..<100).map { index in
                        let tag = drain * 100 + index
                        var asked = URLRequest(url: server.url("/bytes/40000000?rate=200000&d=\(drain)"))
                        asked.timeoutInterval = 30
                        return NetworkRequest(
                            asked,
                            handlers: .init(onDownloadProgress: { [weak queue] _ in
                                if let queue { canceller.progressed(tag, in: queue) }
                            }), tag: tag)
                    }
                    for request in requests { try queue.add(request) }
                    queue.go()
                    for request in requests where Int.random(in: 0..<10, using: &random) == 0 { queue.cancel(request) }
                    await queue.run()
                    let uncancelled = requests.filter { $0.state != .cancelled }
                    #expect(
                        uncancelled.map(\.tag) == [],
                        "\(uncancelled.map { "\($0.tag) \($0.state) \(String(describing: $0.failure))" })")
                }
                let ends = canceller.ends.current
                #expect(ends.count == 1_000)
                #expect(Set(ends.map { $0.cancelled ? $0.tag : -1 }) == Set(0..<1_000))
                #expect(canceller.eventsAfterEnd.current == 0)
            }
            await eventually {
                weakTransport == nil && server.statistics.openConnections == 0
                    && !Self.threadNames().contains(threadName)
            }
            #expect(weakTransport == nil)
            #expect(server.statistics.openConnections == 0)
            #expect(!Self.threadNames().contains(threadName))
        }

        /// The names of this process's threads, from /proc. Read with `read(2)`: a thread may end between the
        /// listing and the read, and Foundation's file reading leaks its buffer when the read then fails.
        static func threadNames() -> Set<String> {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
            return Set(
                tasks.compactMap { task in
                    let fd = open("/proc/self/task/\(task)/comm", O_RDONLY | O_CLOEXEC)
                    guard fd >= 0 else { return nil }
                    defer { close(fd) }
                    var bytes = [UInt8](repeating: 0, count: 64)
                    let count = read(fd, &bytes, bytes.count)
                    guard count > 0 else { return nil }
                    return String(decoding: bytes[..<count], as: UTF8.self).trimmingCharacters(in: .newlines)
                })
        }
    }

    /// Cancels each request at its headers or after 1-3 progress updates (seeded), and records every end
    /// and every event that comes after a request's end.
    final class Canceller: NetworkQueueDelegate, @unchecked Sendable {
        let ends = Box<[(tag: Int, cancelled: Bool)]>([])
        let eventsAfterEnd = Box(0)
        private let state: Box<(random: SeededGenerator, running: [(NetworkRequest, Int)], ended: Set<Int>)>

        private let maximumUpdates: Int

        init(seed: UInt64, maximumUpdates: Int = 3) {
            state = Box((SeededGenerator(seed: seed), [], []))
            self.maximumUpdates = maximumUpdates
        }

        private func noteEvent(_ request: NetworkRequest) {
            if state.with({ $0.ended.contains(request.tag) }) { eventsAfterEnd.with { $0 += 1 } }
        }

        func networkQueue(_ queue: NetworkQueue, didReceiveHeaders request: NetworkRequest, head: ResponseHead) {
            noteEvent(request)
            let updates = state.with { Int.random(in: 0...maximumUpdates, using: &$0.random) }
            if updates == 0 { queue.cancel(request) } else { state.with { $0.running.append((request, updates)) } }
        }

        func networkQueue(_ queue: NetworkQueue, didUpdateProgress progress: QueueProgress) {
            let due = state.with { state -> [NetworkRequest] in
                for index in state.running.indices { state.running[index].1 -= 1 }
                defer { state.running.removeAll { $0.1 <= 0 } }
                return state.running.filter { $0.1 <= 0 }.map(\.0)
            }
            for request in due { queue.cancel(request) }
        }

        /// The request tagged `tag` made progress: its countdown, if it runs one, goes down, and it is cancelled when
        /// due.
        func progressed(_ tag: Int, in queue: NetworkQueue) {
            let due = state.with { state -> NetworkRequest? in
                guard let index = state.running.firstIndex(where: { $0.0.tag == tag }) else { return nil }
                state.running[index].1 -= 1
                guard state.running[index].1 <= 0 else { return nil }
                return state.running.remove(at: index).0
            }
            if let due { queue.cancel(due) }
        }

        func networkQueue(_ queue: NetworkQueue, didFinish request: NetworkRequest, response: NetworkResponse) {
            end(request, cancelled: false)
        }

        func networkQueue(_ queue: NetworkQueue, didFail request: NetworkRequest, error: NetworkQueueError) {
            end(request, cancelled: error == .cancelled)
        }

        private func end(_ request: NetworkRequest, cancelled: Bool) {
            noteEvent(request)
            state.with { _ = $0.ended.insert(request.tag) }
            ends.with { $0.append((request.tag, cancelled)) }
        }
    }

    /// TLS against `openssl s_server` with a CA and a certificate made for 127.0.0.1 at test time.
    @Suite(.admitted, .timeLimit(.minutes(10))) struct TLSTests {
        @Test(arguments: TransportKind.allCases)
        func anUntrustedCertificateFailsWithATLSError(_ transport: TransportKind) async throws {
            try await TLSServer.with { server in
                let queue = NetworkQueue.oneAttempt(transport: transport.make())
                let request = request(server.url, tag: 1)
                try queue.add(request)
                await queue.run()
                #expect(request.state == .failed)
                // FoundationNetworking on Linux reports a TLS failure as -1 (unknown): its words are mapped.
                #expect(request.transportErrorCode == .serverCertificateUntrusted)
            }
        }

        /// Runs `count` requests to `server`, one at a time, over a transport that trusts the test CA through the
        /// option; returns the transport and the requests, ended.
        func fetch(_ count: Int, from server: TLSServer) async throws -> (CurlTransport, [NetworkRequest]) {
            var options = CurlTransport.Options()
            options.additionalTrustedCertificates = server.caFile
            let transport = try CurlTransport(options: options)
            let queue = NetworkQueue.oneAttempt(transport: transport)
            queue.maxConcurrentRequestCount = 1
            let requests = (1...count).map { request(server.url, tag: $0) }
            for request in requests { try queue.add(request) }
            await queue.run()
            return (transport, requests)
        }

        @Test func trustingTheTestCAThroughTheOptionSucceeds() async throws {
            try await TLSServer.with { server in
                let request = try await fetch(1, from: server).1[0]
                #expect(request.state == .finished, "\(String(describing: request.failure))")
                #expect(request.response?.statusCode == 200)
            }
        }

        /// The bundle of the system's CAs and the test CA is trusted alone (no CA folder beside it, so libcurl keeps
        /// the store it parsed): each of several connections (the server closes each after its response) is verified
        /// against it, and a server whose certificate names another host is still refused.
        @Test func theBundleIsTrustedAloneOnEveryConnection() async throws {
            try await TLSServer.with { server in
                let (transport, requests) = try await fetch(4, from: server)
                #expect(transport.caFolderIsLeftOut)
                for request in requests {
                    #expect(request.state == .finished, "\(String(describing: request.failure))")
                    #expect(request.response?.statusCode == 200)
                }
            }
            try await TLSServer.with(.otherHost) { server in
                let request = try await fetch(1, from: server).1[0]
                #expect(request.state == .failed)
            }
            // Without extra CAs: the system's bundle alone, when libcurl's built-in one can be read.
            let library = try CurlLibrary.shared.get()
            let easy = try #require(library.easyInit())
            let bundle = library.defaultCABundle(easy)
            library.easyCleanup(easy)
            let readable = bundle.map { FileManager.default.isReadableFile(atPath: $0) } ?? false
            #expect(try CurlTransport().caFolderIsLeftOut == readable)
        }

        @Test func anUnreadableCAFileIsAClearError() {
            var options = CurlTransport.Options()
            options.additionalTrustedCertificates = URL(fileURLWithPath: "/nonexistent/ca.pem")
            #expect(throws: CurlTransport.LoadError.self) { try CurlTransport(options: options) }
        }
    }

    /// `openssl s_server -www` on a free loopback port, with a fresh CA and a server certificate for
    /// 127.0.0.1 signed by it. Fails with a clear message when the `openssl` command is missing.
    final class TLSServer: LocalServer, @unchecked Sendable {
        /// The server's certificate, signed by the test CA.
        enum Certificate {
            /// For 127.0.0.1, valid for two days.
            case valid
            /// For 127.0.0.1, expired a day before it began (OpenSSL's `-days -1`).
            case expired
            /// Valid, for another host's name only.
            case otherHost
        }

        let directory: URL
        let port: UInt16
        private let process: SpawnedProcess

        var url: URL { URL(string: "https://127.0.0.1:\(port)/")! }
        var caFile: URL { directory.appendingPathComponent("ca.pem") }

        private init(directory: URL, port: UInt16, process: SpawnedProcess) {
            self.directory = directory
            self.port = port
            self.process = process
        }

        private static func make(_ certificate: Certificate) throws -> TLSServer {
            let directory = try temporaryDirectory()
            let openssl = try TestCertificates.make(
                in: directory, names: certificate == .otherHost ? "DNS:other.example" : "IP:127.0.0.1",
                days: certificate == .expired ? -1 : 2)
            return try SpawnedProcess.listening("openssl s_server") {
                let port = try LoopbackPorts.free()
                let process = try SpawnedProcess(
                    openssl,
                    [
                        "s_server", "-accept", "127.0.0.1:\(port)", "-cert", "server.pem", "-key", "server.key", "-www",
                        "-quiet",
                    ],
                    in: directory)
                return (process, [port], TLSServer(directory: directory, port: port, process: process))
            }
        }

        /// Runs `body` with a started server, and stops the server however `body` ends.
        static func with(_ certificate: Certificate = .valid, _ body: (TLSServer) async throws -> Void) async throws {
            try await with({ try make(certificate) }, body)
        }

        /// Kills the server, reaps it and removes its folder.
        func stop() async {
            await process.stop()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    struct TestFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
#endif
