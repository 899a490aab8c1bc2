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
    }

    /// The request's slot and the transfer's token: a notice of a transfer that is no longer current is dropped.
    let slot: Int
    let token: UInt64
    var kind: Kind
}

extension QueueStateMachine {
    /// Applies one notice, and ends the event.
    mutating func notice(_ notice: TransferNotice, now: Double) -> QueueActions {
        let (slot, token) = (notice.slot, notice.token)
        switch notice.kind {
        case .event(let event): return transferEvent(event, slot: slot, token: token, now: now)
        case .head(let event, let reading):
            return transferEvent(event, reading: reading, slot: slot, token: token, now: now)
        case .body(let count): return bodyReceived(count, slot: slot, token: token, now: now)
        case .file(let event): return fileEvent(event, slot: slot, token: token, now: now)
        case .checksumMismatch(let expected, let actual):
            return transferEnded(
                .checksumMismatch(expected: expected, actual: actual), slot: slot, token: token, now: now)
        case .reached(let id, let through, let segment):
            let event = RequestMachine.SplitEvent.reached(
                connection: id, through: through, segment: segment)
            splitNotice(event, slot: slot, token: token, now: now)
            return finishEvent(now)
        }
    }

    /// Applies the notices of one engine pass in order, as ``notice(_:now:)`` would one by one, but ends the event once:
    /// what may start starts, the timer is armed and the delivery announced after the last of them. Each notice is
    /// moved out of the list (its place left holding nothing), so that its payload is handed on without a copy.
    mutating func notices(_ notices: inout [TransferNotice], now: Double) -> QueueActions {
        var taken = QueueActions()
        notices.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            for index in 0..<buffer.count {
                let notice = (base + index).move()
                (base + index).initialize(to: TransferNotice(slot: 0, token: 0, kind: .body(0)))
                if let ended = noticeApplied(notice.kind, slot: notice.slot, token: notice.token, now: now) {
                    // Rare, and each ends its event its own way: the actions so far go with it.
                    taken.append(ended)
                }
            }
        }
        taken.append(finishEvent(now))
        return taken
    }

    /// Applies one notice of a transfer without ending the event: the one path by which a transfer's events reach the
    /// engine, a plain transfer's pipeline's and a split file's alike. A file's event and a checksum's end their event
    /// their own way: their actions are returned (nil for every other notice).
    mutating func noticeApplied(_ kind: TransferNotice.Kind, slot: Int, token: UInt64, now: Double) -> QueueActions? {
        switch kind {
        case .event(let event): applyTransferEvent(event, reading: nil, slot: slot, token: token, now: now)
        case .head(let event, let reading):
            applyTransferEvent(event, reading: reading, slot: slot, token: token, now: now)
        case .body(let count): applyBody(count, slot: slot, token: token, now: now)
        case .file(let event): return fileEvent(event, slot: slot, token: token, now: now)
        case .checksumMismatch(let expected, let actual):
            return transferEnded(
                .checksumMismatch(expected: expected, actual: actual), slot: slot, token: token, now: now)
        case .reached(let id, let through, let segment):
            let event = RequestMachine.SplitEvent.reached(connection: id, through: through, segment: segment)
            splitNotice(event, slot: slot, token: token, now: now)
        }
        return nil
    }
}
