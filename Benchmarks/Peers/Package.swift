// swift-tools-version:6.0
// NetworkQueue against its peers on the same machine in the same rounds: AsyncHTTPClient and a raw libcurl
// multi loop (the root package's Benchmarks binary), all against one nginx. Run it with `./run.sh`; never
// a dependency of the library, and not built by .ci/run.
import PackageDescription

let package = Package(
    name: "Peers",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(url: "https://github.com/swift-server/async-http-client", exact: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.27.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(name: "NetworkQueue", path: "../.."),
    ],
    targets: [
        .executableTarget(
            name: "Peers",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NetworkQueue", package: "NetworkQueue"),
            ])
    ],
    swiftLanguageModes: [.v6]
)
