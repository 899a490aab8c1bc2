#if os(Linux)
    import Foundation
    import FoundationNetworking
    import LoopbackServer
    @testable import NetworkQueue
    import TestSupport
    import Testing

    /// The lifetime of what a ``CurlTransport`` hands out. Releasing the transport is one more way for a
    /// transfer to end: whatever the engine thread was doing at that moment — the transfer posted and not begun
    /// yet, running, or being throttled from another thread — the transfer ends exactly once and nothing of it
    /// stays in memory. A lent body piece lives only as long as its event.
    @Suite(.admitted, .timeLimit(.minutes(10))) struct TransportReleaseTests {
        @Test func aTransportReleasedWhileWorkIsPostedEndsEachTransferOnceAndKeepsNothing() async throws {
            let server = try LoopbackServer()
            var options = CurlTransport.Options()
            options.engineThreads = 1
            var unreleased = 0
            var endCounts: [Int: Int] = [:]
            for round in 0..<200 {
                let completions = Box(0)
                weak var weakHandle: AnyObject?
                do {
                    var transport: CurlTransport? = try CurlTransport(options: options)
                    // A slow body: the transfer is still running when the transport goes, unless it was never begun.
                    let handle = transport!.startTransfer(
                        URLRequest(url: server.url("/bytes/100000?rate=10000&r=\(round)"))
                    ) {
                        event in
                        if case .completed = event { completions.with { $0 += 1 } }
                    }
                    weakHandle = handle as AnyObject
                    let throttled = try #require(handle as? any ThrottlableTransfer)
                    // Work posted from another thread while the transport is released on this one.
                    let poster = Thread {
                        for rate in 1...50 { throttled.setMaximumBytesPerSecond(rate * 1_000) }
                    }
                    poster.start()
                    if round.isMultiple(of: 2) { throttled.setMaximumBytesPerSecond(500) }
                    transport = nil
                    await eventually(within: 10) { completions.current == 1 }
                    handle.cancel()
                }
                await eventually(within: 10) { weakHandle == nil }
                if weakHandle != nil { unreleased += 1 }
                endCounts[completions.current, default: 0] += 1
            }
            #expect(unreleased == 0)
            #expect(endCounts == [1: 200])
        }

        /// A lent body piece is libcurl's own buffer for the length of its event: a handler that copies each
        /// piece gets the body byte-exact, and pieces that are not lent stay valid after their event.
        @Test func lentAndOwnedBodyPiecesBothGiveTheExactBody() async throws {
            let server = try LoopbackServer()
            let transport = try CurlTransport()
            let expected = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0) })
            for lends in [true, false] {
                let copied = Box(Data())
                let kept = Box([Data]())
                let error = await withCheckedContinuation { (finished: CheckedContinuation<URLError?, Never>) in
                    let events: @Sendable (TransferEvent) -> Void = { event in
                        switch event {
                        case .data(let piece):
                            copied.with { $0.append(piece) }
                            kept.with { $0.append(piece) }
                        case .completed(let error): finished.resume(returning: error)
                        default: break
                        }
                    }
                    let request = URLRequest(url: server.url("/bytes/3000000"))
                    if lends {
                        _ = transport.startTransfer(
                            .request(request), options: TransferOptions(),
                            lendingBodyTo: { piece in
                                piece.withUnsafeBytes { bytes in copied.with { $0.append(contentsOf: bytes) } }
                                return true
                            }, events: events)
                    } else {
                        _ = transport.startTransfer(request, options: TransferOptions(), events: events)
                    }
                }
                #expect(error == nil)
                #expect(copied.current == expected)
                // Owned pieces are still the body's bytes once every event is over.
                #expect(kept.current.reduce(into: Data()) { $0.append($1) } == (lends ? Data() : expected))
            }
        }

        /// A receiver that refuses a lent piece (its file failed) stops the transfer there, on the engine's thread:
        /// no other piece, no event after it, and the connection closes far before a fast server's big body ends
        /// (plain, and gzip-coded: the decoder's pieces). A cancel from another thread used to land only after
        /// libcurl's read loop, which kept up with the loopback server to the body's end.
        @Test func aReceiverThatRefusesAPieceStopsTheTransferThere() async throws {
            let size = 64 << 20
            for path in ["/bytes/\(size)", "/gzip/\(size)?force=1"] {
                let server = try LoopbackServer()
                let transport = try CurlTransport()
                let pieces = Box(0)
                let events = Box(0)
                _ = transport.startTransfer(
                    .request(URLRequest(url: server.url(path))), options: TransferOptions(),
                    lendingBodyTo: { _ in
                        pieces.with { $0 += 1 }
                        return false
                    }, events: { event in if case .head = event {} else { events.with { $0 += 1 } } })
                // The default minute: under the thread sanitizer the server alone takes over 10 s to gzip 64 MiB
                // before its first byte (a CI run on 2 cores). How far the body got is the verdict, not the time.
                await eventually { pieces.current > 0 && server.statistics.openConnections == 0 }
                #expect(server.statistics.openConnections == 0, "\(path)")
                #expect(pieces.current == 1, "\(path)")
                #expect(events.current == 0, "\(path)")
                // A gzip-coded body of repeated bytes is small on the wire: sent whole at once.
                if !path.hasPrefix("/gzip") { #expect(server.statistics.bytesWritten < size / 4) }
            }
        }
    }
#endif
