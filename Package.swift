// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "NetworkQueue",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "NetworkQueue", targets: ["NetworkQueue"])
    ],
    targets: [
        // Our own prototypes for libcurl's variadic calls; libcurl itself is opened at run time (Linux).
        .target(name: "CurlShim"),
        .target(name: "NetworkQueue", dependencies: ["CurlShim"]),
        .target(name: "LoopbackServer"),
        // The Demo's list handling (streamed input, file names, shards), a library so that tests can reach it.
        .target(name: "DemoKit", dependencies: ["NetworkQueue"], path: "Demo/Kit"),
        .executableTarget(name: "Demo", dependencies: ["NetworkQueue", "LoopbackServer", "DemoKit"], path: "Demo", exclude: ["Kit"]),
        .executableTarget(name: "Benchmarks", dependencies: ["NetworkQueue", "LoopbackServer", "CurlShim"]),
        .target(name: "TestSupport", dependencies: ["NetworkQueue"], path: "Tests/TestSupport"),
        .testTarget(name: "CoreTests", dependencies: ["NetworkQueue", "TestSupport"]),
        .testTarget(name: "QueueTests", dependencies: ["NetworkQueue", "TestSupport"]),
        .testTarget(name: "IntegrationTests", dependencies: ["NetworkQueue", "LoopbackServer", "TestSupport", "CurlShim"]),
        .testTarget(name: "DemoTests", dependencies: ["DemoKit", "NetworkQueue", "LoopbackServer", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
