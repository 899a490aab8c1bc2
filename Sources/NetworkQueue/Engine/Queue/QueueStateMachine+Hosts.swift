import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What the queue keeps per server (scheme, host and port): the numbers the scheduler counts, paces and holds
/// requests by, the pacing asked for, and the holds servers asked for (see ``HostPacing`` and ``HostBackoff``).
///
/// Requests are numbered by server only while something needs it: a per-host limit, pacing, or a server held
/// (otherwise nothing is hashed: almost every queue has none of them). The first of them numbers every request in
/// the queue at once.
extension QueueStateMachine {
    /// What the queue heard that concerns a server, heard through ``hear(_:now:)``: the facet's one door for news.
    enum ServerNews {
        /// A setting that needs the requests numbered by server, or that bounds the queue's level, changed (or `go()`
        /// plans HEADs per server): the numbering and the queue's level follow.
        case settingsChanged
        /// The request in `slot` got `head` from its server, or (a file with mirrors) from one of its locations.
        case answered(ResponseHead, slot: Int)
        /// A final response of `request` arrived: a server that asks to wait is held (``HostBackoff``), and an
        /// overloaded one lowers its level when concurrency adapts.
        case head(ResponseHead, of: NetworkRequest)
        /// The connect of the request in `slot` failed. ``ServerReply/tookRequest`` says whether the request was held
        /// or ended here.
        case connectFailed(slot: Int)
        /// The connect of the request in `slot`, its try begun at `startedAt`, failed while its machine decides the
        /// event: ``ServerReply/verdict`` says what the server's book made of it.
        case connectFailedDeciding(slot: Int, startedAt: Double)
        /// A split file's connection to the server of one of its locations, begun at `startedAt`, failed to connect.
        case locationUnreachable(URL, startedAt: Double, of: NetworkRequest)
        /// The attempt of the request in `slot` ended with a refused or reset connection before its head.
        /// ``ServerReply/tookRequest`` says whether it is sent again at once.
        case reset(URLError, slot: Int)
        /// The request in `slot` is given its slot: ``ServerReply/turn`` says whether it goes.
        case starting(slot: Int)
        /// The request in `slot` of `host` left its transfers without a verdict on its server.
        case probeStopped(slot: Int, host: Int)
        /// A HEAD of the request in `slot` started (`started`) or left its slot.
        case preflight(slot: Int, started: Bool)
        /// The final head of a HEAD of the request in `slot` said `size` (nil: none).
        case preflightAnswered(slot: Int, size: Int64?)
        /// A main transfer of the request in `slot` ended as `outcome`: the adaptive concurrency's sample.
        case transferEnded(AdaptiveConcurrency.Outcome, slot: Int, of: NetworkRequest)
        /// The drain ended with no request in the table.
        case drained
    }

    /// What the facet answers to a piece of news: a field per question, each at its default unless the news asked it.
    struct ServerReply {
        /// ``ServerNews/connectFailed(slot:)`` and ``ServerNews/reset(_:slot:)``: true when the request was taken from
        /// its machine here (held, sent again or ended).
        var tookRequest = false
        /// ``ServerNews/connectFailedDeciding(slot:startedAt:)``: the server's book's verdict.
        var verdict = ConnectVerdict.counted
        /// ``ServerNews/starting(slot:)``: the request's turn on its server.
        var turn = ServerTurn.go
    }

    /// Hears `news` at `now` (see ``ServerNews``).
    @discardableResult
    mutating func hear(_ news: ServerNews, now: Double) -> ServerReply {
        var reply = ServerReply()
        switch news {
        case .settingsChanged:
            applyQueueLevel()
            numberHostsIfNeeded()
        case .answered(let head, let slot):
            guard !hostHealth.isEmpty else { break }
            // A file with mirrors may have its answer from one of them: the server that answered is the one up.
            let request = table[slot].request
            if request.fileOptions.mirrors.isEmpty {
                serverAnswered(slot, now: now)
            } else {
                locationAnswered(head, of: request, now: now)
            }
        case .head(let head, let request): heedServer(head, of: request, now: now)
        case .connectFailed(let slot): reply.tookRequest = connectFailed(slot, now: now)
        case .connectFailedDeciding(let slot, let startedAt):
            if deadHosts.isEnabled { reply.verdict = connectVerdict(slot, startedAt: startedAt, now: now) }
        case .locationUnreachable(let url, let startedAt, let request):
            locationUnreachable(url, startedAt: startedAt, of: request, now: now)
        case .reset(let error, let slot): reply.tookRequest = acceptReset(error, slot: slot, now: now)
        case .starting(let slot): reply.turn = startingOnItsServer(slot, now: now)
        case .probeStopped(let slot, let host): probeStopped(slot, host: host)
        case .preflight(let slot, let started): countPreflight(slot, started: started)
        case .preflightAnswered(let slot, let size): samplePreflight(slot, size: size, now: now)
        case .transferEnded(let outcome, let slot, let request):
            if let host = scheduler.host(of: slot) { adapt(outcome, host: host, of: request, now: now) }
            adaptQueue(outcome, inFlight: scheduler.activeCount, of: request, now: now)
        case .drained: forgetHostsIfIdle(now: now)
        }
        return reply
    }

    /// True when something needs the requests numbered by server.
    private var needsHostNumbers: Bool {
        scheduler.perHostLimit > 0 || hostPacing.isPaced || !pacingByServer.isEmpty || hasHeldHost
            || samplesPreflights || hasFailedConnect || adaptive != nil
    }

    /// True while HEADs are planned per server (accurate progress on, and a policy that samples).
    var samplesPreflights: Bool {
        showsAccurateProgress && preflights.policy != .everyRequest && !asksEveryPreflight
    }

    /// Numbers every request by server if something needs it now and they are not numbered yet.
    private mutating func numberHostsIfNeeded() {
        guard !numbersHosts, needsHostNumbers else { return }
        numbersHosts = true
        let hosts = table.records.map { (id: $0.slot, host: hostNumber(of: $0.record.request.url)) }
        scheduler.reassignHosts(hosts)
    }

    /// The number of `url`'s server while requests are numbered (nil otherwise, and for a URL without a host). A
    /// server met for the first time takes the pacing set for it. The URL is not read otherwise: a compact request's
    /// is parsed from its text when read.
    mutating func hostNumber(of url: @autoclosure () -> URL?) -> Int? {
        guard numbersHosts else { return nil }
        var met: (number: Int, key: String)?
        let number = servers.number(of: url()) { met = ($0, $1) }
        if let met, let own = pacingByServer[met.key] {
            scheduler.setPacing(own.interval, randomized: own.isRandomized, ofHost: met.number)
        }
        if let met, adaptive != nil {
            scheduler.setLimit(adaptive?.level(ofHost: met.number) ?? 0, ofHost: met.number)
        }
        return number
    }

    /// A response of `request` arrived at `now`: when it asks its server to wait (see ``HostBackoff``), no new
    /// request to that server starts before the time it gave (capped), and the log says so.
    private mutating func heedServer(_ head: ResponseHead, of request: NetworkRequest, now: Double) {
        if adaptive != nil, head.statusCode == 429 || head.statusCode == 503, let host = hostNumber(of: head.url) {
            adapt(.overloaded, host: host, of: request, now: now)
        }
        guard hostBackoff.isEnabled, let hold = HostBackoffRules.hold(for: head, wallClock: outbox.wallClock(at: now))
        else { return }
        hasHeldHost = true
        numberHostsIfNeeded()
        // The server that answered (after redirects): the requests whose own URL names it wait.
        guard let host = hostNumber(of: head.url) else { return }
        let seconds = min(hold.seconds, hostBackoff.maximumHold)
        guard seconds > 0, scheduler.hold(host: host, until: now + seconds) else { return }
        guard outbox.isLogging else { return }
        // The server's key is found by a scan of the numbers: only for the log.
        let (server, until) = (servers.key(of: host) ?? "the server", outbox.wallClock(at: now + seconds))
        outbox.log(.notice, .hostHeld, request, now: now) {
            let capped = seconds < hold.seconds ? " (asked \(LogText.seconds(hold.seconds)) s, capped)" : ""
            let until = ISO8601DateFormatter().string(from: until)
            return "\(server) held for \(LogText.seconds(seconds)) s\(capped), until \(until): \(hold.reason)"
        }
    }

    /// The scheduler runs at most the queue's level (within the limit set), when concurrency adapts; else the limit.
    private mutating func applyQueueLevel() {
        let set = Scheduler.effectiveLimit(limit, ceiling: ceiling)
        scheduler.limit = adaptive.map { min(set, $0.queueLevel) } ?? set
    }

    /// A main transfer ended at `now` (`outcome`), `inFlight` running in all: the queue's level changes when a round
    /// says so, and the log tells.
    private mutating func adaptQueue(
        _ outcome: AdaptiveConcurrency.Outcome, inFlight: Int, of request: NetworkRequest, now: Double
    ) {
        guard let before = adaptive?.queueLevel,
            let change = adaptive?.recordForQueue(outcome, inFlight: inFlight, now: now)
        else { return }
        applyQueueLevel()
        logLevel("the queue", from: before, change, in: " in all", of: request, now: now)
    }

    /// A transfer of `request` to `host` ended at `now` (`outcome`): the server's level changes when a round says so,
    /// and the log tells.
    private mutating func adapt(
        _ outcome: AdaptiveConcurrency.Outcome, host: Int, of request: NetworkRequest, now: Double
    ) {
        let inFlight = scheduler.hosts.activeCount(ofHost: host)
        guard let before = adaptive?.level(ofHost: host),
            let change = adaptive?.record(outcome, host: host, inFlight: inFlight, now: now)
        else { return }
        scheduler.setLimit(change.level, ofHost: host)
        guard outbox.isLogging else { return }
        logLevel(servers.key(of: host) ?? "the server", from: before, change, of: request, now: now)
    }

    /// Logs a level's change: `subject: 4 → 8 at a time<scope> (why)`.
    private mutating func logLevel(
        _ subject: String, from before: Int, _ change: (level: Int, reason: AdaptiveConcurrency.Reason),
        in scope: String = "", of request: NetworkRequest, now: Double
    ) {
        outbox.log(.notice, .concurrencyChanged, request, now: now) {
            let why: String
            switch change.reason {
            case .doubled(let gain?): why = "doubled: the last round gained \(LogText.percent(gain))"
            case .doubled(nil): why = "doubled after its first round"
            case .tried: why = "trying one more"
            case .kept(let gain): why = "kept: the try gained \(LogText.percent(gain))"
            case .wentBack(let gain): why = "back: the last round gained \(LogText.percent(gain))"
            case .overloaded(let inFlight): why = "overloaded with \(inFlight) in flight, not tried again for a while"
            case .ceilingLifted: why = "no overload for a while: higher levels may be tried again"
            }
            return "\(subject): \(before) → \(change.level) at a time\(scope) (\(why))"
        }
    }

    /// The drain ended with no request in the table: the numbering starts over unless a server's pacing or hold
    /// still runs (its number must keep its times).
    private mutating func forgetHostsIfIdle(now: Double) {
        guard !scheduler.hosts.hasTimesPast(now), !hostHealth.hasDownServers(at: now, coolDown: deadHosts.coolDown)
        else { return }
        servers.removeAll()
        hostHealth.removeAll()
        if let rules = adaptive?.rules {
            adaptive = AdaptiveLevels(rules, queueMaximum: Scheduler.effectiveLimit(limit, ceiling: ceiling), now: now)
            applyQueueLevel()
        }
        hasFailedConnect = false
        scheduler.hosts.forgetTimes()
        preflights.forget()
        hasHeldHost = false
        numbersHosts = false
        numberHostsIfNeeded()
    }

    /// True when the request in `slot` is to get a HEAD before its GET under the preflight policy: not where its
    /// server's sizes were found too small to be worth one.
    func preflightPays(_ slot: Int) -> Bool {
        guard samplesPreflights, let host = scheduler.host(of: slot) else { return true }
        return preflights.verdict(of: host) != .estimates
    }

    /// A HEAD of the request in `slot` started (`started`) or left its slot: its server's samples in flight, and
    /// whether its other HEADs wait for them.
    private mutating func countPreflight(_ slot: Int, started: Bool) {
        // An end is counted whatever the policy is now: a HEAD counted at its start never stays counted.
        guard started ? samplesPreflights : true, let host = scheduler.host(of: slot) else { return }
        if started { preflights.started(host, paced: isPaced(host)) } else { preflights.ended(host) }
        scheduler.setPreflightsWait(samplesPreflights && preflights.waits(host), ofHost: host)
    }

    /// True when `host` is paced, by its own interval or the queue's.
    private func isPaced(_ host: Int) -> Bool {
        scheduler.hosts.ownPacing(of: host).map { $0.interval > 0 } ?? (scheduler.pacingInterval > 0)
    }

    /// The final head of a HEAD of the request in `slot` said `size` (nil: none): once its server's samples decide
    /// that HEADs do not pay there, its waiting requests go without one (their sizes stay estimates until their own
    /// heads).
    private mutating func samplePreflight(_ slot: Int, size: Int64?, now: Double) {
        guard samplesPreflights, let host = scheduler.host(of: slot) else { return }
        let verdict = preflights.answered(host, size: size, paced: isPaced(host))
        scheduler.setPreflightsWait(preflights.waits(host), ofHost: host)
        guard verdict == .estimates else { return }
        let skipped = table.records.filter {
            guard case .awaitingPreflight = $0.record.machine.phase, $0.record.existingFile == nil else { return false }
            return scheduler.host(of: $0.slot) == host
        }
        for (slot, _) in skipped { apply(slot, .skipPreflight, now: now) }
        outbox.log(.info, .preflightsStopped, table[slot].request, now: now) {
            let server = servers.key(of: host) ?? "the server"
            return "\(server): HEADs stop (their sizes cost less to fetch than to ask); \(skipped.count) waiting "
                + "requests go without one, their sizes estimated until their heads arrive"
        }
    }

    // MARK: Dead servers

    /// The connect of the request in `slot` failed (its name did not resolve, or nobody answered in time): counted
    /// against its server (``HostHealth``). Returns true when the request was taken from its machine here: held with
    /// its server's others (the failed try not spent), or ended because the server stayed down for its whole window;
    /// false when it goes on to its own machine (to fail, be retried, or try its mirrors). Held requests wait in the
    /// scheduler, and once the window is spent they end at their turn (``ServerNews/starting(slot:)``), each without a
    /// slot, so that a server going down costs nothing per request in the table (a list of millions may hold thousands
    /// of dead servers).
    private mutating func connectFailed(_ slot: Int, now: Double) -> Bool {
        let record = table[slot]
        let request = record.request
        let startedAt: Double
        switch record.machine.phase {
        case .running(let attempt): startedAt = attempt.startedAt
        case .preflighting(let preflight):
            guard preflight.location == 0 else {
                // A mirror's HEAD: its own server's book hears it, and the request asks its next location.
                numberHostsOnFirstFailedConnect()
                let mirror = request.fileOptions.mirrors[preflight.location - 1]
                locationUnreachable(mirror, startedAt: preflight.startedAt, of: request, now: now)
                return false
            }
            startedAt = preflight.startedAt
        case .pending, .awaitingPreflight, .awaitingMain, .adaptingPreflight, .adaptingMain, .deciding,
            .waitingToRetry, .committing, .following, .paused:
            return false
        }
        switch connectVerdict(slot, startedAt: startedAt, now: now) {
        case .counted:
            return false
        case .held:
            apply(slot, .heldByServer, transferEnded: true, now: now)
            return true
        case .down(let error):
            end(slot, .failure(error), transferEnded: true, failsSiblings: true, now: now)
            return true
        }
    }

    /// Counts a failed connect of the request in `slot` to its own server (its try begun at `startedAt`) in the
    /// server's book, and returns the book's verdict for the request: held or down only for a request without
    /// mirrors, whose machine has no other location to ask (semantics 19). Reads nothing of the request's machine, which
    /// may be deciding the event that asks (``DownloadBooks``).
    private mutating func connectVerdict(_ slot: Int, startedAt: Double, now: Double) -> ConnectVerdict {
        numberHostsOnFirstFailedConnect()
        guard let host = scheduler.host(of: slot) else { return .counted }
        let request = table[slot].request
        let verdict = bookConnectFailure(
            host, key: servers.key(of: host) ?? RequestRules.hostKey(request.url), slot: slot, startedAt: startedAt,
            of: request, now: now)
        guard request.fileOptions.mirrors.isEmpty else { return .counted }
        switch verdict {
        case .counted: return .counted
        case .held: return .held
        case .down(let failures, _, _, _):
            return .down(.hostDown(host: hostHealth.key(of: host) ?? "the server", failures: failures))
        }
    }

    /// A connection of a split file's `request` to the server of `url` (one of its locations), started at `startedAt`,
    /// failed to connect: counted by that server's book as any request's failed connect is (a mirror going down holds
    /// the requests whose own URL it is), never ending `request`, whose machine asks its other locations.
    private mutating func locationUnreachable(_ url: URL, startedAt: Double, of request: NetworkRequest, now: Double) {
        guard deadHosts.isEnabled else { return }
        numberHostsOnFirstFailedConnect()
        guard let host = hostNumber(of: url) else { return }
        // No slot is this connection's: it is never the server's probe.
        _ = bookConnectFailure(
            host, key: servers.key(of: host) ?? RequestRules.hostKey(url), slot: -1, startedAt: startedAt,
            of: request, now: now)
    }

    /// The attempt of the request in `slot` ended at `now` with `error`, a refused or reset connection
    /// (`.cannotConnectToHost`, `.networkConnectionLost`) before any response head. When its server answered another
    /// request since the attempt began, the server is up and shedding connections as it accepts them (a reset before
    /// the request was read, a full accept queue): the attempt is sent again at once, not spent. Returns true then.
    /// Only for an idempotent request of one location whose retry policy retries the error at all, at most three times
    /// its policy's retries (a server that answers one connection in two loses a file of six attempts once in 64;
    /// this way once in 2^21); a server that resets every connection answers none, and spends the budget as before.
    /// The server's answers are timed from its first such reset on (``HostHealth/watch(_:)``).
    private mutating func acceptReset(_ error: URLError, slot: Int, now: Double) -> Bool {
        guard deadHosts.isEnabled, error.code == .cannotConnectToHost || error.code == .networkConnectionLost else {
            return false
        }
        let record = table[slot]
        let request = record.request
        guard case .running(let attempt) = record.machine.phase, attempt.head == nil, attempt.split == nil,
            request.fileOptions.mirrors.isEmpty, RetryRules.isIdempotent(request.method)
        else { return false }
        let policy = request.retryPolicy ?? retryPolicy
        guard policy.maximumAttempts > 1, policy.retryableErrors.contains(error.code) else { return false }
        numberHostsOnFirstFailedConnect()
        guard let host = scheduler.host(of: slot) else { return false }
        hostHealth.watch(host)
        let most = min(255, 3 * (policy.maximumAttempts - 1))
        guard !hostHealth.isDown(host), hostHealth.answered(host, since: attempt.startedAt),
            record.acceptResets < most
        else { return false }
        record.acceptResets += 1
        outbox.log(.info, .retryScheduled, request, now: now) {
            "its connection was reset before a response while \(servers.key(of: host) ?? "the server") answers "
                + "others: sent again at once, no attempt spent (\(record.acceptResets) of \(most))"
        }
        apply(slot, .heldByServer, transferEnded: true, now: now)
        return true
    }

    /// The first failed connect numbers the requests by server: the dead-server book counts by those numbers.
    private mutating func numberHostsOnFirstFailedConnect() {
        guard !hasFailedConnect else { return }
        hasFailedConnect = true
        numberHostsIfNeeded()
    }

    /// Counts a failed connect of `host` (named `key`) by the request in `slot` (its try begun at `startedAt`) in the
    /// server's book (``HostHealth``): holds the server's waiting requests in the scheduler, or releases them to end
    /// once its window is spent, and says so (delegate and log). Returns the book's verdict for the request.
    private mutating func bookConnectFailure(
        _ host: Int, key: String?, slot: Int, startedAt: Double, of request: NetworkRequest, now: Double
    ) -> HostHealth.Failure {
        let verdict = hostHealth.connectFailed(
            host, key: key ?? "the server", slot: slot, startedAt: startedAt, policy: deadHosts,
            retry: request.retryPolicy ?? retryPolicy, now: now)
        let server = hostHealth.key(of: host) ?? "the server"
        switch verdict {
        case .counted:
            break
        case .held(let wentDown, let probeFailed, let failures, let until):
            if until.isFinite { scheduler.setHold(host: host, until: until) }
            if wentDown {
                outbox.post(
                    .serverHoldChanged(
                        ServerHold(
                            server: server, change: .held, heldFor: 0, failures: failures, firstProbeIn: until - now)))
                outbox.log(.warning, .hostHeld, request, now: now) {
                    "\(server) is down (\(failures) connects failed in a row): its requests are held, and one probes "
                        + "it in \(LogText.seconds(until - now)) s"
                }
            } else if probeFailed {
                outbox.log(.notice, .hostHeld, request, now: now) {
                    "\(server) still down (its probe failed): the next probe in \(LogText.seconds(until - now)) s"
                }
            }
        case .down(let failures, let heldFor, let round, let nextProbe):
            if let heldFor {
                // The window is spent, or a down server's probe failed: the requests that waited end at their turn,
                // now.
                scheduler.setHold(host: host, until: -.infinity)
                if round == 0 {
                    outbox.post(
                        .serverHoldChanged(
                            ServerHold(server: server, change: .down, heldFor: heldFor, failures: failures)))
                    outbox.log(.warning, .hostDown, request, now: now) {
                        "\(server) stayed down for \(LogText.seconds(heldFor)) s (\(failures) connects failed, every "
                            + "probe its retry policy allows): its held requests end, and the first request after "
                            + "\(LogText.seconds(nextProbe - now)) s probes it"
                    }
                } else {
                    outbox.log(.notice, .hostDown, request, now: now) {
                        "\(server) still down after \(LogText.seconds(heldFor)) s (its probe failed): the requests "
                            + "that waited for it end, and the first after \(LogText.seconds(nextProbe - now)) s "
                            + "probes it again"
                    }
                }
            }
        }
        return verdict
    }

    /// A response of the request in `slot` arrived at `now`: its server answers. A server that was held, probed or
    /// down is up again, and its requests go on.
    private mutating func serverAnswered(_ slot: Int, now: Double) {
        guard let host = scheduler.host(of: slot) else { return }
        serverAnswered(host, of: table[slot].request, now: now)
    }

    /// A split file's connection to one of its locations got `head` (its server answers, as
    /// `serverAnswered(_:now:)` says).
    private mutating func locationAnswered(_ head: ResponseHead, of request: NetworkRequest, now: Double) {
        guard !hostHealth.isEmpty, let host = hostNumber(of: head.url) else { return }
        serverAnswered(host, of: request, now: now)
    }

    /// `host` answered a response of `request` at `now`: held, probed or down, it is up again.
    private mutating func serverAnswered(_ host: Int, of request: NetworkRequest, now: Double) {
        guard let heldAt = hostHealth.answered(host, at: now) else { return }
        scheduler.setHold(host: host, until: -.infinity)
        let server = hostHealth.key(of: host) ?? "the server"
        outbox.post(.serverHoldChanged(ServerHold(server: server, change: .back, heldFor: now - heldAt, failures: 0)))
        outbox.log(.notice, .hostBack, request, now: now) {
            "\(server) answers again: its requests go on, after \(LogText.seconds(now - heldAt)) s held"
        }
    }

    /// What the request given a slot at `now` does about its server (``HostHealth/Start``): go, go alone as the
    /// server's probe (the server's other requests held until its verdict), wait for a down server's next probe, or
    /// end at once (a down server whose probe failed lately). A request with mirrors never waits or ends so: its
    /// machine tries them.
    enum ServerTurn {
        case go
        case wait(until: Double)
        case end(NetworkQueueError)
    }

    /// The turn of the request in `slot` at `now` on its server (see ``ServerTurn``).
    private mutating func startingOnItsServer(_ slot: Int, now: Double) -> ServerTurn {
        guard let host = scheduler.host(of: slot), hostHealth.isDown(host) else { return .go }
        let mirrored = !table[slot].request.fileOptions.mirrors.isEmpty
        switch hostHealth.starting(host, slot: slot, now: now) {
        case .go:
            return .go
        case .probe:
            scheduler.setHold(host: host, until: .infinity)
            return .go
        case .wait(let until):
            guard !mirrored else { return .go }
            scheduler.setHold(host: host, until: until)
            return .wait(until: until)
        case .fail(let failures):
            guard !mirrored else { return .go }
            return .end(.hostDown(host: hostHealth.key(of: host) ?? "the server", failures: failures))
        }
    }

    /// The request in `slot` of `host` left its transfers without a verdict on its server: when it was the server's
    /// probe, the next request to start probes it.
    private mutating func probeStopped(_ slot: Int, host: Int) {
        guard hostHealth.probeStopped(host, slot: slot) else { return }
        scheduler.setHold(host: host, until: -.infinity)
    }

    /// The queue's progress at `now`, with the requests that wait for a held server.
    func progress(at now: Double) -> QueueProgress {
        var progress = ledger.snapshot(at: now)
        progress.heldRequestCount = scheduler.hosts.pendingOfHeldHosts(now: now)
        if !hostHealth.isEmpty { progress.heldServerCount = hostHealth.heldCount }
        if adaptive != nil {
            let sum = scheduler.hosts.busyOwnLimits
            progress.concurrencyLevel = scheduler.limit == 0 ? sum : min(scheduler.limit, sum)
        }
        return progress
    }
}
