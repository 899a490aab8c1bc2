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
        .executableTarget(name: "Demo", dependencies: ["NetworkQueue", "LoopbackServer"], path: "Demo"),
        .executableTarget(name: "Benchmarks", dependencies: ["NetworkQueue", "LoopbackServer", "CurlShim"]),
        .target(name: "TestSupport", dependencies: ["NetworkQueue"], path: "Tests/TestSupport"),
        .testTarget(name: "CoreTests", dependencies: ["NetworkQueue", "TestSupport"]),
        .testTarget(name: "QueueTests", dependencies: ["NetworkQueue", "TestSupport"]),
        .testTarget(name: "IntegrationTests", dependencies: ["NetworkQueue", "LoopbackServer", "TestSupport", "CurlShim"]),
    ],
    swiftLanguageModes: [.v6]
)
