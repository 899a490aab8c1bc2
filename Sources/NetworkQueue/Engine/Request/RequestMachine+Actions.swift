import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a request's machine hears and says: its events as one value (``Event``), the action of each for the
/// coordinator, and the values they carry and return (a transfer's outcome, a file's event, what a head means, a
/// lowest-speed check). The events are decided in `RequestMachine.swift` (``RequestMachine/handle(_:of:_:now:)``); a
/// split file's in `RequestMachine+Download.swift`.
extension RequestMachine {
    /// What happens to a request, as the coordinator hands it to the request's machine
    /// (``RequestMachine/handle(_:of:_:now:)``). Each returns one ``Action``. A head, which returns what the head means
    /// (``HeadAction``), a transfer's signs of life (``RequestMachine/touched(at:sent:)``), which return nothing, and a
    /// split file's events (``RequestMachine/split(_:of:context:books:_:now:)``), which return a ``DownloadOutput``,
    /// are calls of their own.
    enum Event {
        /// The scheduler gave the request a slot in `lane`: its adapt hooks run first (`hooks`), else its HEAD or its
        /// transfer starts, sending `sending` (its own request). Its deadline clock starts (`deadline` seconds long,
        /// nil: none) unless it runs already.
        case granted(
            Scheduler.Lane, hooks: Bool, sending: OutgoingRequest, expectedBefore: Int64?, deadline: Double?)
        /// The adapt hooks answered with the request to send (already validated) or a failure.
        case adapted(Result<URLRequest, NetworkQueueError>, expectedBefore: Int64?)
        /// The transport reported the end of the current transfer, as the outcome says (`received`: the body bytes in
        /// all; `file`: the claimed destination; `checksExistingFile`: a HEAD checking a file on disk).
        case transferEnded(
            TransferOutcome, received: Int64, file: URL?, checksExistingFile: Bool, metrics: RequestMetrics?,
            expectedBefore: Int64?)
        /// Body bytes of the running attempt arrived, `received` in all: `keeping` is kept for a memory body (nil:
        /// written to its file already).
        case bodyPiece(keeping: Data?, received: Int64)
        /// The server of the request is held (down), and its HEAD or attempt failed to connect.
        case heldByServer
        /// The current attempt failed (an invalid request, a response's problem, a file that failed).
        case attemptEnded(NetworkQueueError)
        /// The retry policy's closure answered about the failed attempt.
        case retryDecided(RetryPolicy.Decision)
        /// The request's retry time came (or its server recovered).
        case retryTimeCame
        /// A HEAD is planned first (go() with accurate progress, or an existing file to check).
        case planPreflight
        /// Its planned HEAD will not be sent (its server's sizes are not worth one).
        case skipPreflight
        /// The user paused it.
        case pause
        /// The user resumed it.
        case resume
        /// It follows the request in slot `leader` (added as its duplicate, or handed to a new leader), or (nil) takes
        /// over its cancelled leader's work.
        case follow(leader: Int?)
        /// The queue's timer came for what it waits for (idle for `idle` seconds, nil: no idle timeout; `speed`: a
        /// lowest-speed window to judge, nil: none).
        case timedCheck(idle: Double?, speed: SpeedCheck?)
        /// The deadline timer came (the deadline `seconds` long; `url` for the error).
        case deadlinePassed(seconds: Double, url: URL?)
        /// The user cancelled it.
        case cancel
        /// An event of the current attempt's file (`file`: its destination; `metrics`: the request's, for its end).
        case file(FileEvent, file: URL?, metrics: RequestMetrics?)
    }

    /// What the coordinator must do after an event.
    enum Action {
        /// True for ``none``.
        var isNone: Bool { if case .none = self { true } else { false } }

        /// Nothing beyond what the phase's holdings say.
        case none
        /// Run the adapt hooks; their answer comes back under `token`.
        case adapt(token: UInt64)
        /// Start the HEAD preflight (of the request the preflight carries, to the location it names).
        case startPreflight(RequestState.Preflight)
        /// Start a main transfer of this new attempt; `first`: the request's first (didStart is due).
        /// `replacing`: the attempt sent again without a range, whose file is to be discarded.
        case startTransfer(Attempt, first: Bool, replacing: Attempt?)
        /// Ask the retry policy's closure about `left`'s failure.
        case askRetry(RequestState.Decision, left: Attempt?)
        /// Wait `delay` seconds, then rejoin the pending requests.
        case waitToRetry(RequestState.RetryWait, delay: Double, error: NetworkQueueError, left: Attempt?)
        /// Move the finished attempt's file into place.
        case commit(Attempt, FileSink)
        /// The request ends with this result.
        case end(Result<NetworkResponse, NetworkQueueError>)
        /// The request waits for a slot again (its retry time came).
        case rejoin
        /// Check again at this time (the request was active since its deadline was set).
        case waitUntil(Double, token: UInt64)
        /// Its HEAD ended without ending the request: it waits for a slot for its transfer (`failed`: the HEAD failed
        /// and is not retried, so its size is unknown).
        case preflightDone(failed: NetworkQueueError?)
        /// Its server is held: the request waits with its others (its HEAD's or attempt's failed connect not counted;
        /// `left`: the attempt it left), rejoining the pending requests at once.
        case held(RequestState.RetryWait, left: Attempt?)
        /// Paused (`stopped`: the attempt it stopped, whose part is kept when the request continues parts).
        case paused(stopped: Attempt?)
        /// Resumed: it waits for a slot again (for its HEAD first when `withPreflight`).
        case resumed(withPreflight: Bool)
    }

    /// How a transfer ended, as its transport and pipeline report it.
    enum TransferOutcome {
        /// Its transport reported success (and its body verified, when checked).
        case succeeded
        /// Its transport failed.
        case failed(URLError)
        /// Its body did not hash as `expected`.
        case checksumMismatch(expected: Checksum, actual: Checksum)
    }

    /// An event of an attempt's file.
    enum FileEvent {
        /// The shell opened it, before the transfer starts.
        case opened(FileSink)
        /// It could not be opened or written.
        case failed(NetworkQueueError)
        /// It was moved into place (`error` nil), or could not be; `placedAt`: where it went when that may differ from
        /// its destination (a name its response gave it, or a free name beside another origin's file), said by the
        /// shell so that the engine reads no file under the queue's lock.
        case committed(NetworkQueueError?, placedAt: String? = nil)
    }

    /// What a final head means to the coordinator: the bytes counted so far, the size, the response's problem.
    enum HeadAction {
        /// An interim head (100 Continue, 103 Early Hints): never the final response.
        case interim
        /// The server refused to continue the part from byte `offset`: `restart` sends it again without a range
        /// (``Action/none`` as ``Attempt`` reads it).
        case refusedRange(offset: Int64, restart: Action)
        /// The head was read. `continuation` says what becomes of the bytes counted so far; `length` is the
        /// body's decoded size when known; `problem` fails the attempt.
        case read(Continuation, length: Int64?, encoded: Bool, problem: NetworkQueueError?)
    }

    /// What a final head did to the part or the bytes before it.
    enum Continuation: Equatable {
        /// A first head of a fresh transfer.
        case fresh
        /// A 206 continued the part after `offset` bytes.
        case appended(offset: Int64)
        /// A 200 sent the whole body instead of continuing from `offset`.
        case startedOver(offset: Int64)
        /// A part that did not describe this response: its bytes no longer count.
        case unrelated
        /// A second head (the transfer restarted) or an attempt that kept its part and did not continue it.
        case restarted
    }

    /// What a lowest-speed check reads: the limit, the running attempt's bytes moved (received and sent) and the
    /// queue's bytes received now, the queue's cap, the request's URL (for the error).
    struct SpeedCheck {
        let limit: LowestSpeed
        let moved: Int64
        let queueReceived: Int64
        let rateCap: Int?
        let url: URL?
    }
}
