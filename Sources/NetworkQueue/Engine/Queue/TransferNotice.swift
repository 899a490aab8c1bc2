import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a transfer's pipeline tells the engine about one of its events, once the file and the hashes have had it:
/// the machine's input from a transfer, as a value, so that the notices of one engine pass can be kept until the pass
/// ends and applied under one acquisition of the queue's lock (``QueueStateMachine/notices(_:now:)``).
struct TransferNotice {
    /// What happened.
    enum Kind {
        /// A transport event, as it is.
        case event(TransferEvent)
        /// A final head, with its pipeline's reading.
        case head(TransferEvent, HeadReading)
        /// This many body bytes were written to the request's file (a lent piece, or several in a row).
        case body(Int)
        /// The file could not be opened, written, or moved into place (``RequestMachine/FileEvent``).
        case file(RequestMachine.FileEvent)
        /// The body did not hash as expected.
        case checksumMismatch(expected: Checksum, actual: Checksum)
        /// A split file's connection wrote its bytes through its cursor for `segment` up to `through`; several in a row
        /// of one connection are kept as one.
        case reached(connection: Int, through: Int64, segment: Int)
        /// An event of a split file's shell (its beginning, its first head, a piece to place, its writes, its end):
        /// boxed, as these are rare beside the others and larger.
        indirect case split(RequestMachine.SplitEvent)
    }

    /// The request's slot and the transfer's token: a notice of a transfer that is no longer current is dropped.
    let slot: Int
    let token: UInt64
    var kind: Kind
}
