import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A split file's machine driven by a simulated server and shell, over seeded schedules: random sizes, connection
/// counts, mirrors (honest, answering ranges with the whole file, or refusing every connection), loans, head delays,
/// body pieces written through cursors (their notices batched, sometimes late) or asked about, stalls, and connections
/// cut once the file has bytes. Whatever the schedule, a file whose request's URL sends the right bytes ends whole:
/// every byte written, each placed by the machine once and counted once, and no failure. A cut before the file's first
/// byte may fail the attempt (its retry policy decides), so the simulation cuts only after one, and fewer times than
/// the attempt's bound of restarts.
@Suite(.timeLimit(.minutes(10))) struct SplitSimulationTests {
    @Test func everyScheduleOfHonestServersEndsWithTheWholeFile() {
        var failures: [String] = []
        if let only = ProcessInfo.processInfo.environment["NQ_SPLIT_SEED"].flatMap(UInt64.init) {
            var simulation = Simulation(seed: only)
            // One seed replayed with its whole trace (NQ_SPLIT_SEED=N), to read what a failure's last lines began.
            print(simulation.run() ?? "whole", simulation.shape)
            print(simulation.trace.joined(separator: "\n"))
            return
        }
        // A quarter of the model tests' seeds: 500 by default, each a download of up to 16 MB over up to 8 connections.
        for seed in 0..<UInt64(max(1, TestEnvironment.modelSeeds / 4)) {
            var simulation = Simulation(seed: seed)
            if let problem = simulation.run() {
                failures.append(
                    "seed \(seed) (\(simulation.shape)): \(problem)\n"
                        + simulation.trace.suffix(30).joined(separator: "\n"))
                if failures.count >= 3 { break }
            }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n\n"))")
    }

    /// One simulated download: the machine, the connections its work started, and what is on disk.
    struct Simulation {
        struct Connection {
            /// The first byte the server sends, and the end of what it sends.
            var position: Int64
            let end: Int64
            let status: Int
            var headSent = false
            /// Where the shell may write without asking, and the aim's number.
            var cursor: ConnectionCursor?
            var aims = 0
            /// Written through its cursor since the machine last heard its position.
            var unheard = false
        }

        /// How a mirror answers (the request's URL is always honest).
        enum Behaviour: CaseIterable {
            case honest
            /// Every range answered with the whole file (a 200).
            case wholeForRanges
            /// Every connection refused.
            case dead
        }

        enum Due {
            case refused(Int)
            case head(Int)
            case piece(Int)
            /// A batched notice of a cursor's writes, applied when the engine's pass ends.
            case reached(Int, through: Int64, segment: Int)
            case recheck
        }

        var random: SeededGenerator
        var machine: SplitMachine
        let length: Int64
        var now: Double = 0
        var connections: [Int: Connection] = [:]
        var cells: [ObjectIdentifier: Int] = [:]
        var dues: [(time: Double, order: Int, due: Due)] = []
        var order = 0
        var written: [(range: Range<Int64>, byCursor: Bool)] = []
        /// The bytes the machine counted.
        var counted: Int64 = 0
        var cutsLeft: Int
        var outcome: String?
        var problem: String?
        var trace: [String] = []
        let shape: String
        let minimum: Int64
        /// Each mirror's behaviour, in order.
        var behaviours: [Behaviour] = []

        init(seed: UInt64) {
            random = SeededGenerator(seed: seed &* 7919 &+ 13)
            length = Int64.random(in: (256 << 10)...(16 << 20), using: &random)
            let connectionCount = Int.random(in: 1...8, using: &random)
            minimum = Int64.random(in: (64 << 10)...(1 << 20), using: &random)
            cutsLeft = Int.random(in: 0...8, using: &random)
            let request = URLRequest(url: URL(string: "http://origin.test/f")!)
            let mirrors = (0..<Int.random(in: 0...2, using: &random)).map { URL(string: "http://m\($0).test/f")! }
            var generator = random
            behaviours = mirrors.map { _ in Behaviour.allCases.randomElement(using: &generator)! }
            random = generator
            let options = NetworkRequest.FileOptions(
                maximumConnections: connectionCount, mirrors: mirrors, minimumSegmentSize: minimum)
            shape =
                "\(length) bytes, \(connectionCount) connections, mirrors \(behaviours), segments of \(minimum), "
                + "\(cutsLeft) cuts"
            var actions: [SplitMachine.Action] = []
            machine = SplitMachine(
                request: .request(request), options: options, policy: .default, part: nil, deadAtHead: 0,
                // Breaks that drop a location: more than the cuts, so an honest location is never left for a cut.
                breakLimit: 9, isCapped: false, collectsMetrics: false, logs: true, cell: TransferCell.makeCell(),
                now: 0, &actions)
            perform(actions)
        }

        /// Runs the schedule to its end; the problem found, if any.
        mutating func run() -> String? {
            var steps = 0
            while outcome == nil, problem == nil, !dues.isEmpty {
                steps += 1
                if steps > 200_000 { return "no end after \(steps) steps" }
                dues.sort { ($0.time, $0.order) < ($1.time, $1.order) }
                let next = dues.removeFirst()
                now = max(now, next.time)
                switch next.due {
                case .refused(let id):
                    guard connections.removeValue(forKey: id) != nil else { break }
                    handle(.transfer(.completed(URLError(.cannotConnectToHost)), connection: id), "refused \(id)")
                case .head(let id): sendHead(id)
                case .piece(let id): sendPiece(id)
                case .reached(let id, let through, let segment):
                    handle(.reached(connection: id, through: through, segment: segment), "reached \(id) \(through)")
                case .recheck: handle(.recheckDue, "recheck")
                }
            }
            if let problem { return problem }
            guard let outcome else { return "stuck: nothing left to happen, the file not ended" }
            if outcome == "carried" { return nil }
            guard outcome == "finished" else { return outcome }
            let merged = written.map(\.range).sorted { $0.lowerBound < $1.lowerBound }
            var end: Int64 = 0
            for range in merged {
                if range.lowerBound > end { return "written \(merged.prefix(12)): a gap at \(end)" }
                end = max(end, range.upperBound)
            }
            guard end == length else { return "written up to \(end) of \(length)" }
            return counted == length ? nil : "\(counted) bytes counted of \(length)"
        }

        mutating func schedule(_ due: Due, after seconds: Double) {
            order += 1
            dues.append((now + seconds, order, due))
        }

        mutating func handle(_ event: SplitMachine.Event, _ label: String) {
            trace.append(String(format: "%.4f ", now) + label)
            var actions: [SplitMachine.Action] = []
            machine.handle(event, now: now, &actions)
            perform(actions)
        }

        mutating func sendHead(_ id: Int) {
            guard var connection = connections[id] else { return }
            connection.headSent = true
            connections[id] = connection
            var fields = [
                ResponseHead.Field(name: "ETag", value: "\"v1\""), .init(name: "Accept-Ranges", value: "bytes"),
                .init(name: "Content-Length", value: String(connection.end - connection.position)),
            ]
            if connection.status == 206 {
                fields.append(
                    .init(name: "Content-Range", value: "bytes \(connection.position)-\(connection.end - 1)/\(length)"))
            }
            let head = ResponseHead(
                url: URL(string: "http://origin.test/f")!, statusCode: connection.status, httpVersion: "1.1",
                fields: fields)
            if case .first = machine.mode {
                let reading = HeadReading(head, continuedFrom: 0, acceptableStatusCodes: nil)
                handle(.firstHead(reading, connection: id), "head \(id) \(connection.status)")
            } else {
                handle(.transfer(.head(head), connection: id), "head \(id) \(connection.status)")
            }
            if connections[id] != nil { schedule(.piece(id), after: pause()) }
        }

        mutating func sendPiece(_ id: Int) {
            guard var connection = connections[id] else { return }
            if cutsLeft > 0, Int.random(in: 0..<40, using: &random) == 0, !written.isEmpty {
                cutsLeft -= 1
                return complete(id, URLError(.networkConnectionLost))
            }
            let at = connection.position
            let count = min(connection.end - at, Int64.random(in: 1_000...200_000, using: &random))
            connection.position += count
            if let cursor = connection.cursor, at >= cursor.from, at + count <= cursor.end {
                // Within its cursor: the shell writes it, and the machine hears it by a batched notice, at once or a
                // little later (the engine pass's end), possibly after the connection's next asked piece.
                record(at..<(at + count), byCursor: true)
                connection.unheard = true
                connections[id] = connection
                trace.append(String(format: "%.4f ", now) + "wrote \(id) \(count) to \(connection.position)")
                schedule(.reached(id, through: at + count, segment: cursor.segment), after: notice())
            } else {
                connection.unheard = false
                connections[id] = connection
                handle(.bytes(Int(count), connection: id, at: at), "bytes \(id) \(count) to \(connection.position)")
            }
            guard connections[id] != nil else { return }
            if connection.position >= connection.end {
                complete(id, nil)
            } else {
                schedule(.piece(id), after: pause())
            }
        }

        /// Connection `id` ends (`error` nil: its body is whole): what it wrote through its cursor is heard first.
        mutating func complete(_ id: Int, _ error: URLError?) {
            guard let connection = connections.removeValue(forKey: id) else { return }
            if connection.unheard {
                handle(.bytes(0, connection: id, at: connection.position), "heard \(id) at \(connection.position)")
            }
            handle(.transfer(.completed(error), connection: id), error == nil ? "end \(id)" : "cut \(id)")
        }

        /// When a batched notice comes: mostly in the same pass, sometimes a few milliseconds later.
        mutating func notice() -> Double {
            Bool.random(using: &random) ? 0 : Double.random(in: 0...0.005, using: &random)
        }

        /// Bytes written to the part, through a connection's cursor (`byCursor`) or as the machine said. The machine
        /// places each byte once; a cursor may write bytes the machine gave to another connection meanwhile (the end game
        /// raced that range before the cursor's notice came: the same bytes, written again by the racer, and counted
        /// once).
        mutating func record(_ range: Range<Int64>, byCursor: Bool = false) {
            if !byCursor, let overlap = written.first(where: { $0.range.overlaps(range) && !$0.byCursor }) {
                problem = "\(range) placed again (\(overlap.range) before)"
            }
            written.append((range, byCursor))
        }

        /// The time to a connection's next head or piece: mostly short, sometimes a stall.
        mutating func pause() -> Double {
            Int.random(in: 0..<50, using: &random) == 0
                ? Double.random(in: 0.2...1.5, using: &random) : Double.random(in: 0.0005...0.03, using: &random)
        }

        mutating func perform(_ actions: [SplitMachine.Action]) {
            var kept = 0
            var wrote = false
            var borrowed: Int?
            for action in actions {
                switch action {
                case .work(.start(let id, let request, let cell, _, _)):
                    cells[ObjectIdentifier(cell)] = id
                    var range: Range<Int64>
                    var status = 200
                    if case .made(let made) = request, let header = made.value(forHTTPHeaderField: "Range") {
                        let bounds = header.dropFirst("bytes=".count).split(
                            separator: "-", omittingEmptySubsequences: false)
                        let first = Int64(bounds[0])!
                        let last = bounds.count > 1 && !bounds[1].isEmpty ? Int64(bounds[1])! + 1 : length
                        range = first..<min(last, length)
                        status = 206
                    } else {
                        range = 0..<length
                    }
                    let url = SplitMachineTests.sent(request, URLRequest(url: URL(string: "http://origin.test/f")!)).url
                    let mirror = url?.host.flatMap { $0.hasPrefix("m") ? Int($0.dropFirst().prefix(1)) : nil }
                    let behaviour = mirror.map { behaviours[$0] } ?? .honest
                    if behaviour == .wholeForRanges, status == 206 {
                        (range, status) = (0..<length, 200)
                    }
                    connections[id] = Connection(position: range.lowerBound, end: range.upperBound, status: status)
                    trace.append("  start \(id) \(url?.host ?? "?") \(range)")
                    let delay = Double.random(in: 0.001...0.02, using: &random)
                    schedule(behaviour == .dead ? .refused(id) : .head(id), after: delay)
                case .work(.stop(let cell)):
                    if let id = cells[ObjectIdentifier(cell)] {
                        connections[id] = nil
                        trace.append("  stop \(id)")
                    }
                case .work(.write(_, _, let count, let offset, _, _)):
                    record(offset..<(offset + Int64(count)))
                    kept += count
                    wrote = true
                case .work(.aim(let id, let cursor, let sequence)):
                    if var connection = connections[id], sequence > connection.aims {
                        (connection.cursor, connection.aims) = (cursor, sequence)
                        connections[id] = connection
                    }
                case .work(.finish): outcome = "finished"
                case .work(.carry(let id, _)):
                    // Too small for two segments: its connection carries it, as a plain transfer.
                    if length < 2 * minimum {
                        outcome = "carried"
                    } else {
                        problem = "connection \(id) carries the file"
                    }
                case .work: break
                case .borrow(let locations): borrowed = Int.random(in: 0...locations.count, using: &random)
                case .recheck(let at): schedule(.recheck, after: max(0, at - now))
                case .fail(let error): outcome = "failed \(error.code.rawValue)"
                case .fileFailed(let failure): outcome = "file failed: \(failure)"
                case .note(_, _, let message): trace.append("  note \(message)")
                case .counted(let count): counted += Int64(count)
                case .head, .finished, .passOn, .answered, .giveBack, .unreachable: break
                }
            }
            if wrote { handle(.written(kept, recorded: false, failure: nil), "written \(kept)") }
            if let borrowed {
                let loans = Array(repeating: QueueStateMachine.ConnectionLoan(host: nil), count: borrowed)
                handle(.lent(loans), "lent \(borrowed)")
            }
        }
    }
}
