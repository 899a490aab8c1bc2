import Foundation
import LoopbackServer

/// The built-in offline demo: files from 100 KB to 20 MB and one chunked body of unknown size, throttled
/// per connection so that the whole set takes about 7 seconds at the default concurrency.
enum DemoSet {
    static let bytesPerSecond = 3_000_000

    struct Item {
        let label: String
        let path: String
    }

    /// The set; with `flaky`, one more request whose first two attempts get 503 with `Retry-After: 1`.
    static func items(flaky: Bool) -> [Item] { flaky ? standard + [flakyItem] : standard }

    static let flakyItem = Item(label: "flaky.json (503 twice)", path: "/flaky/2000?key=demo&failures=2&retryAfter=1")

    static let standard: [Item] = {
        let files: [(String, Int)] = [
            ("movie.mp4", 20_000_000), ("dataset.csv", 12_000_000), ("backup.tar", 8_000_000),
            ("photos.zip", 5_000_000), ("podcast.mp3", 3_000_000), ("slides.pdf", 2_000_000),
            ("report.pdf", 1_000_000), ("diagram.png", 750_000), ("notes.txt", 500_000),
            ("logo.svg", 250_000), ("readme.md", 100_000),
        ]
        // A fixed Last-Modified: a second run with --output finds the saved files unchanged and keeps them.
        let modified = "Sun,%2006%20Nov%202022%2008:49:37%20GMT"
        var items = files.map {
            Item(label: $0.0, path: "/bytes/\($0.1)?rate=\(bytesPerSecond)&lastModified=\(modified)")
        }
        items.insert(Item(label: "stream.log (chunked)", path: "/chunked/1500000?rate=\(bytesPerSecond / 2)"), at: 4)
        return items
    }()
}
