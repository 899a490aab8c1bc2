import Foundation
import NetworkQueue
import TestSupport
import Testing

/// curl's `--resolve HOST:PORT:ADDRESS[,ADDRESS]…`, read strictly: only IP addresses, a port in range, a plain host.
@Suite(.admitted, .timeLimit(.minutes(10))) struct PinnedAddressTests {
    @Test func curlsFormIsReadAndWrittenBack() throws {
        let one = try #require(PinnedAddress("example.com:443:127.0.0.1"))
        #expect(one.host == "example.com" && one.port == 443 && one.addresses == ["127.0.0.1"])
        #expect(one.description == "example.com:443:127.0.0.1")
        let two = try #require(PinnedAddress("Mirror.Example:8080:[::1],10.0.0.2"))
        #expect(two.addresses == ["::1", "10.0.0.2"])
        #expect(two.description == "Mirror.Example:8080:[::1],10.0.0.2")
        #expect(PinnedAddress(two.description) == two)
        #expect(PinnedAddress(host: "h", port: 1, addresses: ["::ffff:1.2.3.4"]) != nil)
    }

    @Test func anythingElseIsRefused() {
        for text in [
            "", "host", "host:80", "host:80:", ":80:127.0.0.1", "host:0:127.0.0.1", "host:65536:127.0.0.1",
            "host:-1:127.0.0.1", "host:x:127.0.0.1", "host:80:localhost", "host:80:127.0.0.1,", "host:80:256.1.1.1",
            "host:80:[::1", "ho st:80:127.0.0.1", "host\n:80:127.0.0.1", "host:80:127.0.0.1 ", "*:80:127.0.0.1x",
            "[::1]:80:127.0.0.1",
        ] {
            #expect(PinnedAddress(text) == nil, "\(text)")
        }
        #expect(PinnedAddress(host: "h", port: 80, addresses: []) == nil)
        #expect(PinnedAddress(host: String(repeating: "a", count: 254), port: 80, addresses: ["127.0.0.1"]) == nil)
    }
}
