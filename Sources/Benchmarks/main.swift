import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
if let index = arguments.firstIndex(of: "--profile-scheduling"), let count = Int(arguments[index + 1]) {
    // One pass without a baseline, for running under valgrind --tool=callgrind.
    print(await SchedulingBenchmark.queueRun(count: count))
    exit(0)
}
if let index = arguments.firstIndex(of: "--profile-cancel"), let count = Int(arguments[index + 1]) {
    for _ in 0..<5 { print(await SchedulingBenchmark.cancelPending(count: count)) }
    exit(0)
}
let quick = arguments.contains("--quick")
let runs = quick ? 3 : 5
var results: [Result] = []
results += await SchedulingBenchmark.run(count: quick ? 10_000 : 100_000, runs: runs)
printTable(results)
for result in results { print(result.jsonLine) }
