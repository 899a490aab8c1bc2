import Foundation
import TestSupport
import Testing

@testable import NetworkQueue

/// ``OrderedWindow``: the chunks of an ordered download, asked for within the connections and the window, each
/// checked against the range it asked for.
@Suite(.admitted, .timeLimit(.minutes(10))) struct OrderedWindowTests {
    @Test func chunksCoverTheFileOnceInOrder() {
        for length: Int64 in [0, 1, 262_143, 262_144, 262_145, 10_000_000, 1 << 30] {
            let window = OrderedWindow(length: length, connections: 8, window: 64 << 20)
            var next: Int64 = 0
            for chunk in 0..<window.chunkCount {
                let range = window.range(of: chunk)
                #expect(range.lowerBound == next)
                next = range.upperBound + 1
            }
            #expect(next == length)
        }
        // A twice-connections-th of the window, within 256 KiB and 16 MiB.
        #expect(OrderedWindow(length: 1, connections: 8, window: 64 << 20).chunkSize == 4 << 20)
        #expect(OrderedWindow(length: 1, connections: 64, window: 1 << 20).chunkSize == 256 << 10)
        #expect(OrderedWindow(length: 1, connections: 1, window: 1 << 30).chunkSize == 16 << 20)
    }

    @Test func neverMoreInFlightThanTheConnectionsNorMoreHeldThanTheWindow() {
        var generator = SeededGenerator(seed: 75)
        var window = OrderedWindow(length: 1 << 30, connections: 8, window: 64 << 20)
        #expect(window.windowChunks == 14)
        var fetching: [Int] = []
        var arrived: Set<Int> = []
        var handedOn: [Int] = []
        while !window.isComplete {
            while let chunk = window.nextRequest() { fetching.append(chunk) }
            #expect(fetching.count <= 8)
            #expect(window.nextToRequest - window.nextToYield <= 14)
            // A random one arrives; the reader takes what is in order, now and then.
            if !fetching.isEmpty {
                let chunk = fetching.remove(at: Int.random(in: 0..<fetching.count, using: &generator))
                window.fetched()
                arrived.insert(chunk)
            }
            if Bool.random(using: &generator) {
                while arrived.remove(window.nextToYield) != nil {
                    handedOn.append(window.nextToYield)
                    window.handedOn()
                }
            }
        }
        #expect(handedOn == Array(0..<window.chunkCount))
    }

    @Test func anAnswerIsItsChunkOrAProblemSaysWhy() {
        let window = OrderedWindow(length: 1_000_000, connections: 2, window: 1 << 20)
        let range = window.range(of: 1)
        let right = "bytes \(range.lowerBound)-\(range.upperBound)/1000000"
        #expect(window.problem(with: 1, status: 206, contentRange: right, bodyLength: range.count) == nil)
        #expect(
            window.problem(
                with: 1, status: 206, contentRange: "bytes \(range.lowerBound)-\(range.upperBound)/*",
                bodyLength: range.count) == nil)
        let problems = [
            window.problem(with: 1, status: 200, contentRange: nil, bodyLength: 1_000_000),
            window.problem(with: 1, status: 206, contentRange: "bytes 0-99/1000000", bodyLength: 100),
            window.problem(
                with: 1, status: 206, contentRange: right.replacingOccurrences(of: "/1000000", with: "/2000000"),
                bodyLength: range.count),
            window.problem(with: 1, status: 206, contentRange: right, bodyLength: range.count - 1),
            window.problem(with: 1, status: 206, contentRange: nil, bodyLength: range.count),
            window.problem(with: 1, status: 416, contentRange: nil, bodyLength: 0),
        ]
        #expect(problems.allSatisfy { $0 != nil }, "\(problems)")
        #expect(problems[0]?.contains("changed since the download began") == true)
    }
}
