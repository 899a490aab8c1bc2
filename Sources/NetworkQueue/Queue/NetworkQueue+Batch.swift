import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Settings and operations for batches of downloads: per-host limits and groups of requests.
extension NetworkQueue {
    /// The most transfers in flight at once to one server (scheme, host and port; HEAD preflights count);
    /// 0 means no per-host limit, only ``maxConcurrentRequestCount``. Default 0.
    ///
    /// A request held back by its server's limit does not hold back requests to other servers behind it:
    /// the next request in ``order`` whose server has room starts. Takes effect at once; negative values
    /// are clamped to 0.
    public var maxConcurrentRequestsPerHost: Int {
        get { locked.withLock { $0.machine.perHostLimit } }
        set { send(.setPerHostLimit(newValue)) }
    }

    /// How many transfers run at once to each server when the queue finds the level itself; nil (the default): a
    /// fixed ``maxConcurrentRequestsPerHost`` and ``maxConcurrentRequestCount`` alone.
    ///
    /// Each server (scheme, host and port) starts at ``AdaptiveConcurrency/initial`` (4) transfers at once and
    /// doubles while that pays, then tries one more now and then, keeping it only when throughput grows; a 429, a 503,
    /// a reset connection or a timeout lowers it at once, and the server is not tried at that level again for a while
    /// (see ``AdaptiveConcurrency``). It never goes above ``AdaptiveConcurrency/maximum`` or
    /// ``maxConcurrentRequestsPerHost`` (when set). The queue has a level of its own for all servers together, found
    /// the same way from their total throughput (an overload is its server's alone), from 4 up to
    /// ``maxConcurrentRequestCount``. Each change is logged
    /// (``NetworkQueueLogRecord/Event/concurrencyChanged``), and ``QueueProgress/concurrencyLevel`` says the level of
    /// the servers being fetched from. Takes effect at once; setting it again starts every server over.
    public var adaptiveConcurrency: AdaptiveConcurrency? {
        get { locked.withLock { $0.machine.adaptive?.rules } }
        set { send(.setAdaptiveConcurrency(newValue)) }
    }

    /// How often requests start to one server (scheme, host and port), for servers without pacing of their own
    /// (``setHostPacing(_:for:)``); default ``HostPacing/unpaced``. Takes effect at once, from each server's next start;
    /// HEAD preflights and a split file's extra connections count as starts. A paced request waits in its place
    /// without holding a slot, and requests to other servers start meanwhile.
    public var hostPacing: HostPacing {
        get { locked.withLock { $0.machine.hostPacing } }
        set { send(.setHostPacing(newValue, server: nil)) }
    }

    /// Paces the server of `server` (its scheme, host and port; the path is ignored) as `pacing` says, instead of
    /// ``hostPacing``; nil gives it ``hostPacing`` again, and ``HostPacing/unpaced`` leaves it unpaced. A URL without a
    /// host changes nothing and returns false.
    @discardableResult
    public func setHostPacing(_ pacing: HostPacing?, for server: URL) -> Bool {
        guard let key = RequestRules.hostKey(server) else { return false }
        send(.setHostPacing(pacing, server: key))
        return true
    }

    /// Whether a server that answers 429 or 503 with `Retry-After`, or says its request budget is spent
    /// (`RateLimit`, `X-RateLimit-Remaining: 0`), holds every new request to it until the time it gave (see
    /// ``HostBackoff``); default ``HostBackoff/init(isEnabled:maximumHold:)`` with its defaults: on, at most 60 s a
    /// hold. ``HostBackoff/off`` turns it off; a hold under way runs out as it was.
    public var hostBackoff: HostBackoff {
        get { locked.withLock { $0.machine.hostBackoff } }
        set { locked.withLock { $0.machine.hostBackoff = newValue } }
    }

    /// When a server is down (DESIGN semantics 24): after ``DeadHosts/failuresInARow`` failed connects or name lookups
    /// in a row with no response between, its requests are held while one at a time probes it on the retry policy's
    /// schedule; when every probe failed they end with ``NetworkQueueError/hostDown(host:failures:)`` at their turn,
    /// taking no slot and sending nothing, as does a request whose turn comes while a probe failed lately (within a
    /// second, or the policy's first backoff); a later request probes the server alone, half-open, the probes' spacing
    /// doubling up to ``DeadHosts/coolDown``; the other servers go on (see ``DeadHosts``). Default
    /// ``DeadHosts/init(isEnabled:failuresInARow:coolDown:)`` with its
    /// defaults: on, 3 failures, 60 s. ``DeadHosts/off`` turns it off (each request fails, or is retried, alone). A
    /// connect that nobody answers fails at ``TimeLimits/connect`` over ``CurlTransport``; over `URLSession` it ends at
    /// the idle timeout as `.timedOut`, which is not counted (a timeout there cannot tell a silent server from an
    /// unanswered connect).
    public var deadHosts: DeadHosts {
        get { locked.withLock { $0.machine.deadHosts } }
        set { locked.withLock { $0.machine.deadHosts = newValue } }
    }

    /// What ``add(_:)-(NetworkRequest)`` does with a request whose method, URL and destination match a request still in the
    /// queue (pending, running or waiting to retry); default ``DuplicatePolicy/allow``. Applies to requests
    /// added after it is set.
    public var duplicatePolicy: DuplicatePolicy {
        get { locked.withLock { $0.machine.duplicatePolicy } }
        set {
            locked.withLock { core in
                core.machine.duplicatePolicy = newValue
                if newValue == .allow { core.machine.leaders.removeAll() }
            }
        }
    }

    /// A cap on the queue's total receive rate, in bytes per second; nil (the default) for none.
    ///
    /// The running transfers draw from one token bucket (``RateCap``) from their first byte: a
    /// transfer with no tokens stops reading until they return, so its server is slowed by TCP flow control,
    /// and an idle or slow transfer leaves its share to the others. The bucket holds a twentieth of a
    /// second's worth, so over any stretch of a batch the queue receives at most the cap × the time, plus
    /// that burst and one read (at most 64 KiB) per transfer. A change takes effect at once, also for
    /// running transfers. While a cap is set, ``CurlTransport`` also opens connections with a small kernel
    /// receive buffer (a sixty-fourth of the cap, 4–256 KiB), so that the wire follows the cap and not just
    /// the delivery. A transport that cannot hold a transfer back (``URLSessionTransport``: Foundation has
    /// no such control) leaves its transfers uncapped. Zero or negative values mean no cap.
    public var maximumBytesPerSecond: Int? {
        get { rateCap.maximumBytesPerSecond }
        set {
            locked.withLock { core in
                rateCap.maximumBytesPerSecond = newValue
                // The engine judges lowest speeds knowing the cap (see ``TimeLimits/lowestSpeed``).
                core.machine.rateCap = rateCap.maximumBytesPerSecond
            }
        }
    }

    /// How long a request may take, how slowly it may move and how long it may wait for a connection, for requests
    /// without ``NetworkRequest/timeLimits`` of their own (see ``TimeLimits``). Default
    /// ``TimeLimits/init(deadline:lowestSpeed:connect:)`` with its defaults: a deadline of 7 days, no lowest speed, a
    /// 20 s connect. The deadline is read when a request's clock starts (its first slot), the lowest speed at each
    /// check and the connect limit at each attempt's start, so a change of it applies to running attempts from their
    /// next check. Out-of-range limits fail each request that uses them at its start
    /// (``NetworkQueueError/InvalidRequestReason/invalidTimeLimits(_:)``).
    public var timeLimits: TimeLimits {
        get { locked.withLock { $0.machine.timeLimits } }
        set { locked.withLock { $0.machine.timeLimits = newValue } }
    }

    /// Pauses one request: it holds no slot until ``resume(_:)``, and the drain (``run()``,
    /// `queueDidFinish`) waits for it. Its state becomes ``NetworkRequest/State/paused`` and the delegate
    /// hears didPause. Returns false (and changes nothing) when the request is not in this queue, is paused
    /// already, is having its file moved into place, or follows a duplicate (pause its leader instead).
    ///
    /// - A running transfer stops. A file destination keeps its `.part` and validator, and the resumed
    ///   transfer continues them with a `Range` request (when the server allows; else it starts over); a
    ///   memory body is dropped and the resumed transfer starts over. Its bytes stay in the progress
    ///   meanwhile: the fraction never goes backwards.
    /// - A HEAD preflight or adapt hooks under way are dropped and run again on resume.
    /// - A request waiting to retry stops waiting; resumed, its next attempt waits only for a slot.
    /// - ``cancel(_:)``, ``cancelAll()`` and a sibling's failure end a paused request as any other (a file
    ///   destination's kept part is deleted then).
    @discardableResult
    public func pause(_ request: NetworkRequest) -> Bool { !pause([request]).isEmpty }

    /// Resumes a paused request: it waits for a slot again, behind the pending requests of its
    /// ``NetworkRequest/priority`` (as if just added). The delegate hears didResume; didStart is not
    /// repeated. Returns false when the request is not paused in this queue.
    @discardableResult
    public func resume(_ request: NetworkRequest) -> Bool { !resume([request]).isEmpty }

    /// Pauses every request in the queue for which `predicate` is true and that can be paused (see
    /// ``pause(_:)``), in one step; returns those paused, in the order they were added. The predicate runs
    /// outside the queue's lock.
    @discardableResult
    public func pause(where predicate: (NetworkRequest) throws -> Bool) rethrows -> [NetworkRequest] {
        pause(try requests.filter(predicate))
    }

    /// Resumes every paused request for which `predicate` is true, in one step; returns those resumed, in
    /// the order they were added. The predicate runs outside the queue's lock.
    @discardableResult
    public func resume(where predicate: (NetworkRequest) throws -> Bool) rethrows -> [NetworkRequest] {
        resume(try requests.filter { $0.state == .paused }.filter(predicate))
    }

    private func pause(_ chosen: [NetworkRequest]) -> [NetworkRequest] {
        apply(chosen) { targets in .pause(targets) }
    }

    private func resume(_ chosen: [NetworkRequest]) -> [NetworkRequest] {
        apply(chosen) { targets in .resume(targets) }
    }

    /// The requests of `chosen` that were added to this queue, with their slots.
    private func targets(_ chosen: [NetworkRequest]) -> [(request: NetworkRequest, slot: Int)] {
        chosen.compactMap { request in slot(of: request).map { (request: request, slot: $0) } }
    }

    /// Sends the command `command` makes of the requests of `chosen` in this queue, in one step; returns those it
    /// changed.
    private func apply(
        _ chosen: [NetworkRequest],
        _ command: ([(request: NetworkRequest, slot: Int)]) -> QueueStateMachine.Command
    ) -> [NetworkRequest] {
        let targets = targets(chosen)
        guard !targets.isEmpty else { return [] }
        return send(command(targets)).requests
    }

    /// Cancels every request in the queue for which `predicate` is true (each ends with `.cancelled`, as
    /// with ``cancel(_:)``), in one step: none of them starts after this returns. Returns the requests the
    /// predicate chose, in the order they were added. The predicate runs outside the queue's lock; a
    /// chosen request that ended meanwhile (or whose file is being moved into place) keeps its own end.
    ///
    /// ```swift
    /// queue.cancel { $0.tag == album7 }
    /// ```
    @discardableResult
    public func cancel(where predicate: (NetworkRequest) throws -> Bool) rethrows -> [NetworkRequest] {
        let chosen = try requests.filter(predicate)
        let targets = targets(chosen)
        if !targets.isEmpty { send(.cancel(targets)) }
        return chosen
    }
}
