import Foundation
import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The scheduling benchmark's transport: answers every request at once with one prebuilt empty 200,
/// like an event loop: starts are queued and completed in batches on one serial queue (never inside
/// `startTransfer`, as the `Transport` contract requires). Built on the public protocol only.
final class InstantTransport: Transport {
    private struct Pending {
        var events: [@Sendable (TransferEvent) -> Void] = []
        var isDraining = false
    }

    private struct Handle: TransferHandle {
        func cancel() {}
    }

    private let queue = DispatchQueue(label: "InstantTransport")
    private let pending = Protected(Pending())
    private let head = ResponseHead(
        url: URL(string: "http://bench.invalid/r")!, statusCode: 200, httpVersion: "HTTP/1.1",
        fields: [.init(name: "Content-Length", value: "0")])

    func startTransfer(
        _ request: URLRequest, options: TransferOptions, events: @escaping @Sendable (TransferEvent) -> Void
    ) -> any TransferHandle {
        let mustSchedule = pending.with { pending in
            pending.events.append(events)
            defer { pending.isDraining = true }
            return !pending.isDraining
        }
        if mustSchedule { queue.async { self.drain() } }
        return Handle()
    }

    private func drain() {
        while true {
            let batch = pending.with { pending in
                defer { pending.events.removeAll(keepingCapacity: true) }
                if pending.events.isEmpty { pending.isDraining = false }
                return pending.events
            }
            if batch.isEmpty { return }
            // As an event loop reports a pass: each queue hears the batch's events in one lock round trip.
            TransportPass.run {
                for events in batch {
                    events(.head(head))
                    events(.completed(nil))
                }
            }
        }
    }
}
