import Foundation

/// Whether a response asks its server's requests to wait, and for how long (see ``HostBackoff``). Pure: the
/// wall-clock time is a parameter.
enum HostBackoffRules {
    /// What a response asked for: a wait in seconds, and the header that asked.
    struct Hold: Equatable {
        var seconds: Double
        var reason: String
    }

    /// The longest wait `head` asks its server's new requests for, read at `wallClock`; nil when it asks none (or a
    /// wait of 0).
    static func hold(for head: ResponseHead, wallClock: Date) -> Hold? {
        var longest: Hold?
        func consider(_ seconds: Double?, _ reason: String) {
            guard let seconds, seconds > 0, seconds > (longest?.seconds ?? 0) else { return }
            longest = Hold(seconds: seconds, reason: reason)
        }
        if head.statusCode == 429 || head.statusCode == 503 {
            consider(RetryRules.retryAfter(head, now: wallClock), "\(head.statusCode) with Retry-After")
        }
        if let value = head.value(forHTTPHeaderField: "RateLimit") { consider(rateLimitField(value), "RateLimit") }
        if let remaining = head.value(forHTTPHeaderField: "RateLimit-Remaining"), number(remaining) == 0 {
            consider(head.value(forHTTPHeaderField: "RateLimit-Reset").flatMap(number), "RateLimit-Remaining: 0")
        }
        if let remaining = head.value(forHTTPHeaderField: "X-RateLimit-Remaining"), number(remaining) == 0 {
            let reset = head.value(forHTTPHeaderField: "X-RateLimit-Reset").flatMap(number)
            consider(reset.map { resetSeconds($0, wallClock: wallClock) }, "X-RateLimit-Remaining: 0")
        }
        return longest
    }

    /// An `X-RateLimit-Reset` as seconds from now: a Unix time when it is one (over 10⁹, GitHub's form), else a
    /// number of seconds.
    static func resetSeconds(_ value: Double, wallClock: Date) -> Double {
        value > 1_000_000_000 ? max(0, value - wallClock.timeIntervalSince1970) : value
    }

    /// The wait a `RateLimit` field asks for: the longest reset among its items whose remaining quota is 0. Reads
    /// the structured form of the IETF draft (`"default";r=0;t=30`, items separated by commas) and the older
    /// dictionary form (`limit=100, remaining=0, reset=30`).
    static func rateLimitField(_ value: String) -> Double? {
        var longest: Double?
        var dictionary: (remaining: Double?, reset: Double?) = (nil, nil)
        for member in value.split(separator: ",") {
            var item: (remaining: Double?, reset: Double?) = (nil, nil)
            var isStructured = false
            for parameter in member.split(separator: ";") {
                let parts = parameter.split(separator: "=", maxSplits: 1)
                guard parts.count == 2 else { continue }
                let key = parts[0].trimmingCharacters(in: .whitespaces).lowercased()
                let number = number(String(parts[1]))
                switch key {
                case "r":
                    isStructured = true
                    item.remaining = number
                case "t":
                    isStructured = true
                    item.reset = number
                case "remaining": dictionary.remaining = number
                case "reset": dictionary.reset = number
                default: break
                }
            }
            if isStructured, item.remaining == 0, let reset = item.reset { longest = max(longest ?? 0, reset) }
        }
        if dictionary.remaining == 0, let reset = dictionary.reset { longest = max(longest ?? 0, reset) }
        return longest
    }

    /// A non-negative decimal number (digits, at most one point), or nil.
    static func number(_ text: String) -> Double? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        var points = 0
        guard !trimmed.isEmpty, trimmed.utf8.count <= 24,
            trimmed.utf8.allSatisfy({ byte in
                if byte == 0x2E { points += 1 }
                return (0x30...0x39).contains(byte) || byte == 0x2E
            }), points <= 1, trimmed.utf8.first != 0x2E, trimmed.utf8.last != 0x2E
        else { return nil }
        return Double(trimmed)
    }
}
