import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What the retry rules decide about one failed attempt.
enum RetryVerdict: Equatable {
    /// The request fails with the attempt's error.
    case fail
    /// Ask the policy's ``RetryPolicy/decide`` closure (asynchronously).
    case ask
    /// Retry after a delay drawn from the policy's backoff.
    case backoff
    /// Retry after exactly this delay; `serverAsked` when it is the server's `Retry-After` (never
    /// shortened by an early retry).
    case wait(TimeInterval, serverAsked: Bool)
}

/// The retry rules: pure functions of the policy, the failure and the attempt count.
enum RetryRules {
    /// Methods that may be sent twice with the same effect as once (RFC 9110 §9.2.2).
    static let idempotentMethods: Set<String> = ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"]

    /// Failures where the request never reached a server: safe to send again whatever the method.
    static let neverSentErrors: Set<URLError.Code> = [
        .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet,
    ]

    /// `seconds` made finite and not negative (NaN and negative → 0, infinity → a week).
    static func clampedSeconds(_ seconds: TimeInterval) -> TimeInterval {
        if seconds.isNaN { return 0 }
        return min(max(0, seconds), 7 * 86_400)
    }

    static func isIdempotent(_ method: String?) -> Bool { idempotentMethods.contains((method ?? "GET").uppercased()) }

    /// The verdict for an attempt that failed with `error` after `attempts` attempts in all, for a request
    /// sent with `method`. `retryAfter` is the server's `Retry-After` for this attempt's response, in
    /// seconds from the response.
    static func verdict(
        policy: RetryPolicy, error: NetworkQueueError, method: String?, attempts: Int, retryAfter: TimeInterval?
    ) -> RetryVerdict {
        guard attempts < policy.maximumAttempts, mayRetry(error) else { return .fail }
        guard policy.decide == nil else { return .ask }
        let verdict = defaultVerdict(policy: policy, error: error, method: method, retryAfter: retryAfter)
        // The first lost connection is sent again at once (see ``RetryPolicy/retriesFirstLostConnectionAtOnce``).
        if attempts == 1, policy.retriesFirstLostConnectionAtOnce, case .backoff = verdict,
            case .transport(let failure) = error, failure.code == .networkConnectionLost
        {
            return .wait(0, serverAsked: false)
        }
        return verdict
    }

    /// The verdict once ``RetryPolicy/decide`` has answered `decision`.
    static func verdict(
        after decision: RetryPolicy.Decision, policy: RetryPolicy, error: NetworkQueueError, method: String?,
        retryAfter: TimeInterval?
    ) -> RetryVerdict {
        switch decision {
        case .useDefault: return defaultVerdict(policy: policy, error: error, method: method, retryAfter: retryAfter)
        case .doNotRetry: return .fail
        case .retryAfter(let seconds): return .wait(clampedSeconds(seconds), serverAsked: false)
        case .retry:
            if let retryAfter, retryAfter <= policy.maximumRetryAfter { return .wait(retryAfter, serverAsked: true) }
            return .backoff
        }
    }

    /// Whether a failure can be retried at all: never a cancellation, an invalid request, a HEAD
    /// preflight failure (its request was never sent; see the queue's accurate progress) or a file error.
    static func mayRetry(_ error: NetworkQueueError) -> Bool {
        switch error {
        case .transport, .unacceptableStatus, .unacceptableContentType, .responseTooLarge, .adaptationFailed,
            .tooSlow:
            true
        case .cancelled, .cancelledBecauseSiblingFailed, .cancelledBecauseSourceFailed, .invalidRequest,
            .preflightFailed, .fileError, .deadlineExceeded, .hostDown,
            .decodingFailed, .integrityCheckFailed, .sourceFailed:
            false
        }
    }

    /// The policy's own rules.
    static func defaultVerdict(
        policy: RetryPolicy, error: NetworkQueueError, method: String?, retryAfter: TimeInterval?
    ) -> RetryVerdict {
        let idempotent = policy.retriesNonIdempotentMethods || isIdempotent(method)
        switch error {
        case .transport(let failure):
            guard policy.retryableErrors.contains(failure.code), idempotent || neverSentErrors.contains(failure.code)
            else {
                return .fail
            }
            return .backoff
        // Retried as a timed-out transfer is: only when the policy retries `.timedOut`.
        case .tooSlow:
            return policy.retryableErrors.contains(.timedOut) && idempotent ? .backoff : .fail
        case .unacceptableStatus(let code, _):
            guard policy.retryableStatusCodes.contains(code), idempotent else { return .fail }
            guard let retryAfter else { return .backoff }
            // Asked to wait longer than the caller allows: fail now with the server's answer.
            return retryAfter <= policy.maximumRetryAfter ? .wait(retryAfter, serverAsked: true) : .fail
        case .cancelled, .cancelledBecauseSiblingFailed, .cancelledBecauseSourceFailed, .unacceptableContentType,
            .preflightFailed,
            .invalidRequest, .responseTooLarge, .fileError, .adaptationFailed, .decodingFailed, .integrityCheckFailed,
            .sourceFailed, .deadlineExceeded, .hostDown:
            return .fail
        }
    }
    // MARK: Retry-After

    /// The delay a response's `Retry-After` asks for, in seconds (0 for a date in the past), or nil when it
    /// has none or it cannot be read. A date is measured against the response's own `Date` (the server's
    /// clock, so a skewed client clock does not matter), else against `now` (wall-clock time).
    static func retryAfter(_ response: ResponseHead, now: Date) -> TimeInterval? {
        guard let value = response.value(forHTTPHeaderField: "Retry-After") else { return nil }
        let reference = response.value(forHTTPHeaderField: "Date").flatMap(HTTPDate.parse) ?? now
        return retryAfter(value, reference: reference)
    }

    /// `value` (delay-seconds or an HTTP-date) as seconds after `reference`.
    static func retryAfter(_ value: String, reference: Date) -> TimeInterval? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) {
            // Any number of digits: a huge value is simply over every cap.
            return TimeInterval(trimmed).map(clampedSeconds)
        }
        guard let date = HTTPDate.parse(trimmed) else { return nil }
        return max(0, date.timeIntervalSince(reference))
    }
}

/// HTTP-date parsing (RFC 9110 §5.6.7): IMF-fixdate, and the obsolete RFC 850 and asctime forms that
/// recipients must still accept. Pure: no formatter, locale or time zone database.
enum HTTPDate {
    /// The months' names, lowercased, three bytes each.
    private static let months = Array("janfebmaraprmayjunjulaugsepoctnovdec".utf8)

    /// The date `text` names, or nil when it is none of the three forms.
    ///
    /// Read as bytes where they are (a file's `Last-Modified` is read for every file saved): nothing is allocated.
    static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { bytes in
            withUnsafeTemporaryAllocation(of: Range<Int>.self, capacity: 6) { parts in
                parse(bytes, parts: parts.baseAddress!)
            }
        }
    }

    /// The work of ``parse(_:)``, with room for six parts.
    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>, parts: UnsafeMutablePointer<Range<Int>>) -> Date? {
        // Split on spaces, commas and dashes: "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT",
        // "Sun Nov  6 08:49:37 1994".
        guard let count = split(bytes, at: { $0 == 0x20 || $0 == 0x2C || $0 == 0x2D }, into: parts, capacity: 6)
        else { return nil }
        let day: Int?
        let month: Int?
        var year: Int?
        let time: Range<Int>
        switch count {
        case 6 where bytes[parts[5]].elementsEqual("GMT".utf8):
            (day, month, year, time) = (
                number(bytes[parts[1]]), monthNumber(bytes[parts[2]]), number(bytes[parts[3]]), parts[4]
            )
            if let short = year, parts[3].count == 2 { year = short + (short < 70 ? 2000 : 1900) }
        case 5:
            (day, month, year, time) = (
                number(bytes[parts[2]]), monthNumber(bytes[parts[1]]), number(bytes[parts[4]]), parts[3]
            )
        default:
            return nil
        }
        // The clock's three numbers, split on colons, in the room the date's parts no longer need.
        let clock = UnsafeBufferPointer(rebasing: bytes[time])
        guard let day, let month, let year, split(clock, at: { $0 == 0x3A }, into: parts, capacity: 3) == 3,
            let hour = number(clock[parts[0]]), let minute = number(clock[parts[1]]),
            let second = number(clock[parts[2]]), (1...31).contains(day), (0...23).contains(hour),
            (0...59).contains(minute), (0...60).contains(second), (1...9999).contains(year)
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3_600 + minute * 60 + second))
    }

    /// Writes the ranges of `bytes` between separators (empty ones left out) into `parts`; their number, or nil when
    /// there are more than `capacity`.
    private static func split(
        _ bytes: UnsafeBufferPointer<UInt8>, at isSeparator: (UInt8) -> Bool,
        into parts: UnsafeMutablePointer<Range<Int>>,
        capacity: Int
    ) -> Int? {
        var count = 0
        var index = 0
        while true {
            while index < bytes.count, isSeparator(bytes[index]) { index += 1 }
            guard index < bytes.count else { return count }
            let start = index
            while index < bytes.count, !isSeparator(bytes[index]) { index += 1 }
            guard count < capacity else { return nil }
            (parts + count).initialize(to: start..<index)
            count += 1
        }
    }

    /// The decimal number `digits` spell (an optional `+` first, as `Int("+7")` reads it), nil for anything else
    /// or more than 18 digits.
    private static func number(_ digits: Slice<UnsafeBufferPointer<UInt8>>) -> Int? {
        guard digits.count - (digits.first == 0x2B ? 1 : 0) <= 18 else { return nil }
        return ASCIIDecimal.value(of: digits, signed: false).map { Int($0) }
    }

    /// 1 for `Jan` (any case) to 12 for `Dec`; nil for anything else.
    private static func monthNumber(_ name: Slice<UnsafeBufferPointer<UInt8>>) -> Int? {
        guard name.count == 3 else { return nil }
        func lowercased(_ byte: UInt8) -> UInt8 { (0x41...0x5A).contains(byte) ? byte | 0x20 : byte }
        let first = name.startIndex
        let (one, two, three) = (lowercased(name[first]), lowercased(name[first + 1]), lowercased(name[first + 2]))
        var start = 0
        while start < months.count {
            if months[start] == one, months[start + 1] == two, months[start + 2] == three {
                return start / 3 + 1
            }
            start += 3
        }
        return nil
    }

    /// `date` as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form a sender must use; fractions of a second
    /// are dropped, and a date before 1970 or after 9999 is clamped to the nearest one written.
    static func format(_ date: Date) -> String {
        let limit = Double(daysFromCivil(year: 9999, month: 12, day: 31)) * 86_400 + 86_399
        let seconds = Int(min(max(0, date.timeIntervalSince1970.rounded(.down)), limit))
        let (days, second) = (seconds / 86_400, seconds % 86_400)
        let (year, month, day) = civil(fromDays: days)
        // 1970-01-01 was a Thursday.
        let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][days % 7]
        let monthName = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][month - 1]
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let yearText = String(repeating: "0", count: max(0, 4 - String(year).count)) + String(year)
        return "\(weekday), \(two(day)) \(monthName) \(yearText) \(two(second / 3_600)):\(two(second / 60 % 60)):"
            + "\(two(second % 60)) GMT"
    }

    /// The proleptic Gregorian date `days` after 1970-01-01 (the inverse of ``daysFromCivil(year:month:day:)``).
    private static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
