import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// When a response lets a file be split, what each segment's answer must be, when sharing is worth it, and which
/// source each connection goes to (issue 36): pure rules, exact outcomes.
@Suite(.admitted, .timeLimit(.minutes(10))) struct SplitRulesTests {
    static let url = URL(string: "http://h/f")!

    static func head(_ status: Int, _ fields: [String: String]) -> ResponseHead {
        ResponseHead(
            url: url, statusCode: status, httpVersion: "HTTP/1.1",
            fields: fields.sorted { $0.key < $1.key }.map { .init(name: $0.key, value: $0.value) })
    }

    static let whole = ["Content-Length": "4000000", "Accept-Ranges": "bytes", "ETag": "\"v1\""]

    @Test func aFileIsSplitOnlyWithALengthRangesAndAValidator() throws {
        let shape = SplitRules.Shape(length: 4_000_000, validator: .entityTag("\"v1\""))
        #expect(try SplitRules.shape(of: Self.head(200, Self.whole), minimumSize: 1 << 20).get() == shape)
        var lastModified = Self.whole
        lastModified["ETag"] = "W/\"weak\""
        lastModified["Last-Modified"] = "Tue, 24 Nov 2026 10:00:00 GMT"
        #expect(
            try SplitRules.shape(of: Self.head(200, lastModified), minimumSize: 1 << 20).get().validator
                == .lastModified("Tue, 24 Nov 2026 10:00:00 GMT"))
        let refusals: [([String: String], Int, SplitRules.Refusal)] = [
            (Self.whole, 206, .status(206)),
            (Self.whole.merging(["Content-Encoding": "gzip"]) { $1 }, 200, .encoded),
            (Self.whole.filter { $0.key != "Content-Length" }, 200, .unknownLength),
            (Self.whole.filter { $0.key != "Accept-Ranges" }, 200, .noByteRanges),
            (Self.whole.merging(["Accept-Ranges": "none"]) { $1 }, 200, .noByteRanges),
            (Self.whole.filter { $0.key != "ETag" }, 200, .noValidator),
            (Self.whole.merging(["Content-Length": "1000000"]) { $1 }, 200, .tooSmall(length: 1_000_000)),
        ]
        for (fields, status, refusal) in refusals {
            let result = SplitRules.shape(of: Self.head(status, fields), minimumSize: 1 << 20)
            #expect(result == .failure(refusal), "\(fields)")
        }
        #expect(SplitRules.acceptsByteRanges(Self.head(200, ["Accept-Ranges": "none, Bytes"])))
    }

    @Test func aSegmentMustBeTheFilesBytesFromItsStart() {
        let shape = SplitRules.Shape(length: 4_000_000, validator: .entityTag("\"v1\""))
        let good = ["Content-Range": "bytes 1000-1999/4000000", "ETag": "\"v1\""]
        #expect(SplitRules.problem(with: Self.head(206, good), start: 1000, shape: shape) == nil)
        // No validator in the answer: nothing to compare, the length and start say it.
        #expect(
            SplitRules.problem(
                with: Self.head(206, ["Content-Range": "bytes 1000-1999/4000000"]), start: 1000, shape: shape) == nil)
        let bad: [(Int, [String: String], String)] = [
            (200, good, "it sent the whole file (200) for a range"),
            (404, [:], "it answered 404"),
            (206, good.merging(["Content-Encoding": "gzip"]) { $1 }, "the range has a content coding"),
            (
                206, good.merging(["Content-Range": "bytes 0-999/4000000"]) { $1 },
                "its Content-Range does not start at byte 1000"
            ),
            (
                206, good.merging(["Content-Range": "bytes 1000-1999/5000000"]) { $1 },
                "its length is 5000000, not 4000000"
            ),
            (206, good.merging(["Content-Range": "bytes 1000-1999/*"]) { $1 }, "its length is unknown, not 4000000"),
            (206, good.merging(["ETag": "\"v2\""]) { $1 }, "its validator \"v2\" is not \"v1\""),
        ]
        for (status, fields, reason) in bad {
            #expect(SplitRules.problem(with: Self.head(status, fields), start: 1000, shape: shape) == reason)
        }
        #expect(
            SplitRules.headers(for: 10..<20, open: false, validator: .entityTag("\"v1\""))
                == ["Range": "bytes=10-19", "If-Range": "\"v1\""])
        #expect(SplitRules.headers(for: 10..<20, open: true, validator: .lastModified("d"))["Range"] == "bytes=10-")
    }

    @Test func sharingIsWorthItOnlyWhenOneConnectionWouldTakeLong() {
        // 1 MB in 30 ms: 33 MB/s, 100 MB would take 3 s.
        #expect(SplitRules.isWorthSharing(remaining: 100_000_000, received: 1_000_000, elapsed: 0.03))
        // 40 MB in 30 ms: 1.3 GB/s, 100 MB in 0.075 s.
        #expect(!SplitRules.isWorthSharing(remaining: 100_000_000, received: 40_000_000, elapsed: 0.03))
        // Exactly 0.5 s is not longer than 0.5 s.
        #expect(!SplitRules.isWorthSharing(remaining: 500, received: 1000, elapsed: 1))
        // Nothing yet: a connection that sends nothing is worth helping.
        #expect(SplitRules.isWorthSharing(remaining: 1, received: 0, elapsed: 0.03))
        #expect(!SplitRules.isWorthSharing(remaining: 0, received: 0, elapsed: 0.03))
    }

    @Test func theRecordIsSavedByTheMiBAtMostTenTimesASecond() {
        #expect(SplitRules.recordThreshold(secondsSinceRecord: 0.1) == 1 << 20)
        #expect(SplitRules.recordThreshold(secondsSinceRecord: .infinity) == 1 << 20)
        #expect(SplitRules.recordThreshold(secondsSinceRecord: 0.099) == 64 << 20)
        #expect(SplitRules.recordThreshold(secondsSinceRecord: 0) == 64 << 20)
    }

    @Test func theContinuingHeadCountsTheBytesOnDisk() {
        let head = Self.head(206, ["Content-Range": "bytes 1000-1999/4000", "Content-Length": "1000", "ETag": "\"v\""])
        let continuing = SplitRules.continuingHead(head, onDisk: 2500, length: 4000)
        #expect(continuing.statusCode == 206)
        #expect(continuing.value(forHTTPHeaderField: "Content-Range") == "bytes 2500-3999/4000")
        #expect(continuing.value(forHTTPHeaderField: "Content-Length") == "1500")
        #expect(continuing.value(forHTTPHeaderField: "ETag") == "\"v\"")
        #expect(RangeRules.outcome(of: continuing, offset: 2500) == .append(total: 4000))
    }

    @Test func credentialsGoOnlyToASourceOfTheSameOrigin() {
        var request = URLRequest(url: URL(string: "https://a.example/f")!)
        request.setValue("Bearer t", forHTTPHeaderField: "Authorization")
        request.setValue("s=1", forHTTPHeaderField: "Cookie")
        request.setValue("x", forHTTPHeaderField: "X-Other")
        let same = SplitRules.request(request, to: URL(string: "https://a.example:443/g")!, origin: request.url)
        #expect(same.value(forHTTPHeaderField: "Authorization") == "Bearer t")
        for other in ["https://b.example/f", "http://a.example/f", "https://a.example:8443/f"] {
            let sent = SplitRules.request(request, to: URL(string: other)!, origin: request.url)
            #expect(sent.url?.absoluteString == other)
            #expect(sent.value(forHTTPHeaderField: "Authorization") == nil, "\(other)")
            #expect(sent.value(forHTTPHeaderField: "Cookie") == nil, "\(other)")
            #expect(sent.value(forHTTPHeaderField: "X-Other") == "x")
        }
    }

    /// A header the transport's redirect policy strips (one the user added to it) stays behind too.
    @Test func theTransportsOwnStrippedHeadersStayBehind() {
        var request = URLRequest(url: URL(string: "https://a.example/f")!)
        request.setValue("k", forHTTPHeaderField: "X-Api-Key")
        request.setValue("x", forHTTPHeaderField: "X-Other")
        let policy = RedirectPolicy(
            crossOriginStrippedHeaders: RedirectPolicy.defaultStrippedHeaders.union(["x-api-key"]))
        let other = SplitRules.request(
            request, to: URL(string: "https://b.example/f")!, origin: request.url, policy: policy)
        #expect(other.value(forHTTPHeaderField: "X-Api-Key") == nil)
        #expect(other.value(forHTTPHeaderField: "X-Other") == "x")
        let same = SplitRules.request(
            request, to: URL(string: "https://a.example/g")!, origin: request.url, policy: policy)
        #expect(same.value(forHTTPHeaderField: "X-Api-Key") == "k")
        // The default policy keeps a header it does not know as a credential.
        let byDefault = SplitRules.request(request, to: URL(string: "https://b.example/f")!, origin: request.url)
        #expect(byDefault.value(forHTTPHeaderField: "X-Api-Key") == "k")
    }

    @Test func validatorsReadBackFromTheRecord() {
        for validator in [RangeRules.Validator.entityTag("\"a-b\""), .lastModified("Tue, 24 Nov 2026 10:00:00 GMT")] {
            #expect(RangeRules.Validator(recordText: validator.recordText) == validator)
        }
        #expect(RangeRules.Validator(recordText: "unquoted") == nil)
        #expect(RangeRules.Validator(recordText: "W/\"weak\"") == nil)
    }

    /// Every stage retries the same faults (issue 71): a location is asked again after a break, and dropped only when
    /// its breaks in a row reach the limit (the request's attempts); a kept byte starts its count over.
    @Test func aLocationIsDroppedOnlyAfterItsBreaksInARow() {
        var sources = LocationList(count: 2, breakLimit: 3)
        #expect(sources.broke(0) == .kept)
        #expect(sources.broke(0) == .kept)
        sources.served(1, by: 0)
        #expect(sources.locations[0].breaks == 0)
        #expect(sources.broke(0) == .kept)
        #expect(sources.broke(0) == .kept)
        #expect(sources.broke(0) == .dropped)
        #expect(sources.locations.map(\.isLive) == [false, true])
        // The last live location is never dropped: the attempt fails, its breaks not counted.
        #expect(sources.broke(1) == .last)
        #expect(sources.locations[1].breaks == 0)
        // A first connection avoids the location that just broke while another is live, else takes it.
        var pair = LocationList(count: 2, breakLimit: 3)
        #expect(pair.pick(forRange: false, avoiding: 0) == 1)
        #expect(pair.pick(forRange: false, avoiding: 0) == 1)
        pair.drop(1)
        #expect(pair.pick(forRange: false, avoiding: 0) == 0)
    }

    @Test func connectionsGoToTheLeastBusyLiveSource() {
        var sources = LocationList(count: 3)
        var picked: [Int?] = []
        for _ in 0..<4 { picked.append(sources.pick()) }
        #expect(picked == [0, 1, 2, 0])
        sources.ended(1)
        let again = sources.pick()
        #expect(again == 1)
        sources.drop(1)
        sources.ended(1)
        let next = sources.pick()
        #expect(next == 2)
        // A break drops a source while another is live; the last one stays, and the attempt fails instead.
        let droppedFirst = sources.broke(0)
        let droppedLast = sources.broke(2)
        #expect(droppedFirst == .dropped && droppedLast == .last)
        #expect(sources.hasLive)
        #expect(sources.locations.map(\.isLive) == [false, false, true])
        sources.served(10, by: 2)
        #expect(sources.locations[2].served == 10)
        sources.drop(2)
        #expect(!sources.hasLive)
        let none = sources.pick()
        #expect(none == nil)
    }

    @Test func aSlowRunIsSharedAmongConnections() {
        var plan = SegmentPlan(length: 100, connections: 1, minimumSize: 10)
        let run = plan.assign()!
        _ = plan.received(20, segment: run.id)
        plan.divide(into: 4)
        // Its 80 left: 20 for it, three ranges of 20 waiting.
        #expect(plan.segments.map { $0.start..<$0.end } == [0..<40])
        #expect(plan.waiting == [40..<60, 60..<80, 80..<100])
        // Never under the minimum: 25 left among 4 gives two.
        var small = SegmentPlan(length: 45, connections: 1, minimumSize: 10)
        let first = small.assign()!
        _ = small.received(20, segment: first.id)
        small.divide(into: 4)
        #expect(small.segments.map { $0.start..<$0.end } == [0..<33])
        #expect(small.waiting == [33..<45])
        #expect(small.receivedBytes == 20)
    }

    /// The running segment keeps less by what its first window brought (each new connection is expected to bring as
    /// much at its start, as a capped server's burst): the others share the rest equally; never under the minimum.
    @Test func theRunningSegmentKeepsLessByWhatItsWindowBrought() {
        var plan = SegmentPlan(length: 100, connections: 1, minimumSize: 10)
        let run = plan.assign()!
        _ = plan.received(20, segment: run.id)
        plan.divide(into: 4, keepingLess: 6)
        // Its 80 left: 14 for it (20 less 6), 22 for each of the three others.
        #expect(plan.segments.map { $0.start..<$0.end } == [0..<34])
        #expect(plan.waiting == [34..<56, 56..<78, 78..<100])
        // A burst larger than its share: it keeps the minimum.
        var burst = SegmentPlan(length: 100, connections: 1, minimumSize: 10)
        _ = burst.received(20, segment: burst.assign()!.id)
        burst.divide(into: 4, keepingLess: 50)
        #expect(burst.segments.map { $0.start..<$0.end } == [0..<30])
        #expect(burst.waiting == [30..<54, 54..<78, 78..<100])
    }

    /// Issue 50, item 2: a source whose range answer is wrong while its stream of the file is good takes no more
    /// ranges but stays live (its stream goes on, and it may still start a first connection); without a stream it is
    /// dropped.
    @Test func aSourceThatGetsRangesWrongKeepsItsStream() {
        var sources = LocationList(count: 2)
        #expect(sources.rangeFailed(0, hasStream: true) == .noMoreRanges)
        #expect(sources.locations.map(\.isLive) == [true, true])
        #expect(sources.locations.map(\.takesRanges) == [false, true])
        let ranged = [sources.pick(), sources.pick()]
        #expect(ranged == [1, 1], "ranges go to the mirror only")
        let first = sources.pick(forRange: false)
        #expect(first == 0, "a first connection may still go to it")
        #expect(sources.rangeFailed(1, hasStream: false) == .dropped)
        #expect(sources.leastBusy == nil && sources.hasLive)
    }

    /// A run whose connection streams on continues into the next waiting range, across bytes already on disk up to
    /// a bound; never across bytes another run holds, and never past what the connection asked for.
    @Test func aStreamingRunFollowsIntoTheNextWaitingRange() {
        var plan = SegmentPlan(length: 100, connections: 4, minimumSize: 10)
        let a = plan.assign()!
        let b = plan.assign()!
        #expect((a.start, a.end, b.start, b.end) == (0, 25, 25, 50))
        // b got 5 bytes and failed: 25..<30 is done, 30..<50 waits first.
        _ = plan.received(5, segment: b.id)
        plan.failed(segment: b.id)
        #expect(plan.waiting == [30..<50, 50..<75, 75..<100])
        #expect(plan.received(25, segment: a.id).isSegmentDone)
        // Five bytes on disk lie between: over a bound of 4 it is not followed, under 5 it is.
        #expect(plan.follow(from: 25, upTo: nil, maxGap: 4) == nil)
        let next = plan.follow(from: 25, upTo: nil, maxGap: 5)
        #expect(next?.gap == 5 && next?.segment.start == 30 && next?.segment.end == 50)
        // A limit shortens the run; the rest of the range waits on.
        let limited = plan.follow(from: 50, upTo: 60, maxGap: 0)
        #expect(limited?.segment.start == 50 && limited?.segment.end == 60 && plan.waiting == [60..<75, 75..<100])
        // Bytes another run holds are never streamed past.
        let c = plan.assign()!
        #expect(c.start == 60)
        #expect(plan.follow(from: 50, upTo: nil, maxGap: nil) == nil)
        #expect(plan.receivedBytes == 30)

        // A run whose connection has not answered and that received nothing is taken over; one that received a
        // byte, or whose connection answered, is not.
        var race = SegmentPlan(length: 40, connections: 2, minimumSize: 10)
        let stream = race.assign()!
        let ranged = race.assign()!
        #expect(race.received(20, segment: stream.id).isSegmentDone)
        #expect(race.follow(from: 20, upTo: nil, maxGap: 0) == nil)
        let taken = race.follow(from: 20, upTo: nil, maxGap: 0, takingOver: [ranged.id])
        #expect(taken?.takenOver == ranged.id && taken?.segment.start == 20 && taken?.segment.end == 40)
        #expect(race.segments.count == 1 && race.waiting.isEmpty)
        var started = SegmentPlan(length: 40, connections: 2, minimumSize: 10)
        let head = started.assign()!
        let tail = started.assign()!
        _ = started.received(1, segment: tail.id)
        _ = started.received(20, segment: head.id)
        #expect(started.follow(from: 20, upTo: nil, maxGap: 0, takingOver: [tail.id]) == nil)
    }

    /// Issue 50, item 3: the first answer to a continued split part continues it only when it is the same file.
    @Test func aContinuedPartIsContinuedOnlyByTheSameFile() {
        let resumed = PartSegments(done: [0..<100], validator: .entityTag("\"v1\""), length: 1000)
        func head(_ range: String, etag: String = "\"v1\"") -> ResponseHead {
            ResponseHead(
                url: URL(string: "http://h/f")!, statusCode: 206, httpVersion: "HTTP/1.1",
                fields: [.init(name: "Content-Range", value: range), .init(name: "ETag", value: etag)])
        }
        #expect(SplitRules.continuationProblem(with: head("bytes 100-199/1000"), resumed: resumed) == nil)
        #expect(
            SplitRules.continuationProblem(with: head("bytes 100-199/1000", etag: "\"v2\""), resumed: resumed)
                == "its validator \"v2\" is not \"v1\"")
        #expect(
            SplitRules.continuationProblem(with: head("bytes 100-199/2000"), resumed: resumed)
                == "the file's length is 2000, not the 1000 on record")
        #expect(
            SplitRules.continuationProblem(with: head("bytes 100-199/*"), resumed: resumed)
                == "its Content-Range says no length")
        let unrecorded = PartSegments(done: [0..<100, 500..<600], validator: .entityTag("\"v1\""), length: nil)
        #expect(
            SplitRules.continuationProblem(with: head("bytes 100-199/300"), resumed: unrecorded)
                == "the file's length is 300, shorter than the part")
    }

    /// Issue 62: the end game races a range by the file's own pace, with no fixed threshold: a connection is judged
    /// once it ran for the settle time, and raced when it would take more than twice what a new connection would (its
    /// start delay, then the best pace the file kept). One that brought nothing is raced as soon as it is judged.
    @Test func aRangeIsRacedWhenItWouldTakeTwiceWhatANewConnectionWould() {
        let mib: Int64 = 1 << 20
        #expect(SplitRules.finishTime(remaining: mib, received: 0, running: 0.05, settle: 0.1) == nil)
        #expect(SplitRules.finishTime(remaining: mib, received: 0, running: 0.1, settle: 0.1) == .infinity)
        #expect(SplitRules.finishTime(remaining: mib, received: 2 * mib, running: 1, settle: 0.1) == 0.5)
        // A new connection: 0.25 s to its head, then 1 MiB at 4 MiB/s, 0.5 s in all.
        let rate = Double(4 * mib)
        #expect(!SplitRules.isWorthRacing(remaining: mib, finishTime: 1.0, rate: rate, startDelay: 0.25))
        #expect(SplitRules.isWorthRacing(remaining: mib, finishTime: 1.01, rate: rate, startDelay: 0.25))
        #expect(SplitRules.isWorthRacing(remaining: mib, finishTime: .infinity, rate: nil, startDelay: 0.25))
        #expect(!SplitRules.isWorthRacing(remaining: mib, finishTime: 0.5, rate: nil, startDelay: 0.25))
        #expect(!SplitRules.isWorthRacing(remaining: 0, finishTime: .infinity, rate: rate, startDelay: 0.25))
    }

    /// Issue 50, item 8: each source is held to its own validator. A source answering for the first time may name
    /// another entity tag than the file's only with the same Last-Modified; once learned, its own tag is what its
    /// later answers must carry. The first answer's date is part of the file's shape, and only a mirror whose
    /// validator is known is asked with `If-Range`.
    @Test func eachSourceIsHeldToItsOwnValidator() {
        let date = "Tue, 14 Nov 2023 22:13:20 GMT"
        let shape = SplitRules.Shape(length: 4_000_000, validator: .entityTag("\"nginx\""), lastModified: date)
        func range(etag: String?, modified: String?) -> ResponseHead {
            var fields = ["Content-Range": "bytes 1000-1999/4000000", "Content-Length": "1000"]
            fields["ETag"] = etag
            fields["Last-Modified"] = modified
            return Self.head(206, fields)
        }
        let apache = range(etag: "\"2dc6c0-6474846204000\"", modified: date)
        #expect(SplitRules.problem(with: apache, start: 1000, shape: shape) == nil)
        #expect(SplitRules.ownValidator(of: apache) == .entityTag("\"2dc6c0-6474846204000\""))
        // The same date written otherwise (RFC 850) is the same second.
        let otherForm = range(etag: "\"x\"", modified: "Tuesday, 14-Nov-23 22:13:20 GMT")
        #expect(SplitRules.problem(with: otherForm, start: 1000, shape: shape) == nil)
        #expect(
            SplitRules.problem(
                with: range(etag: "\"x\"", modified: "Wed, 15 Nov 2023 22:13:20 GMT"), start: 1000, shape: shape)
                == "its Last-Modified Wed, 15 Nov 2023 22:13:20 GMT is not \(date)")
        // Another tag and no date to agree on: another file.
        #expect(
            SplitRules.problem(with: range(etag: "\"x\"", modified: nil), start: 1000, shape: shape)
                == "its validator \"x\" is not \"nginx\"")
        // Its own tag learned: a later answer under another tag is refused, whatever its date.
        #expect(
            SplitRules.problem(
                with: range(etag: "\"y\"", modified: date), start: 1000, shape: shape, validator: .entityTag("\"x\""))
                == "its validator \"y\" is not \"x\"")
        #expect(SplitRules.headers(for: 0..<10, open: false, validator: nil) == ["Range": "bytes=0-9"])
        var sources = LocationList(count: 2)
        sources.learn(.entityTag("\"a\""), for: 1)
        sources.learn(.entityTag("\"b\""), for: 1)
        #expect(sources.locations.map(\.validator) == [nil, .entityTag("\"a\"")])
    }
}
