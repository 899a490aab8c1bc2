import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Body bytes lent from a transport's own buffer for the length of one call.
///
/// Noncopyable and handed over `borrowing`: whoever receives one can read it, but the compiler lets it
/// neither copy nor keep it, so the bytes cannot outlive the buffer they live in. This is how a file-bound
/// body goes from libcurl's buffer to the file (and the hashes) without a copy in between; a transfer that
/// lends its body reports no ``TransferEvent/data(_:)`` for it.
struct LentBytes: ~Copyable {
    private let bytes: UnsafeRawBufferPointer

    /// Lends `bytes`, which must stay valid until the call receiving this value returns.
    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// The number of bytes.
    var count: Int { bytes.count }

    /// Calls `body` with the bytes; the pointer is valid only inside `body`.
    func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(bytes)
    }
}

/// Receives a lent body: each piece in order, on the transfer's thread, between its head and its
/// `.completed` event (never at once with another event of the transfer). It returns false when it failed the
/// transfer on that piece (its file refused it): the transport then stops the transfer at once, as a cancel, before
/// reading more, and reports nothing more of it.
typealias LentBodyReceiver = @Sendable (borrowing LentBytes) -> Bool

/// A transport that can lend a transfer's body (``CurlTransport`` on Linux): a private arrangement with the
/// queue, which writes and hashes each piece before it returns.
protocol LendingTransport: Transport {
    /// Starts `request` as ``Transport/startTransfer(_:options:events:)`` does, taking a URL's text as it is (no
    /// `URLRequest` built for it), and, when `body` is given, hands each body piece to it instead of reporting it as
    /// ``TransferEvent/data(_:)``.
    func startTransfer(
        _ request: OutgoingRequest, options: TransferOptions, lendingBodyTo body: LentBodyReceiver?,
        events: @escaping @Sendable (TransferEvent) -> Void
    ) -> any TransferHandle
}
