import Foundation
import NetworkQueue

/// The Demo's pacing options, read as curl and wget write them: `--rate N/U` (curl) and `--wait S`, `--random-wait`
/// (wget). Unlike curl's `--rate`, which has no effect on parallel transfers, these pace each server however many
/// transfers run at once (``NetworkQueue/hostPacing``).
public enum Politeness {
    /// The seconds between two starts that curl's `--rate` value asks for: `N/U` starts per unit `U` (`s`, `m`, `h` or
    /// `d`), or `N` alone per hour (curl's default unit). N is a number above 0 (at most a million a second, at
    /// least one start in ``longestInterval``); nil when malformed.
    public static func interval(ofRate text: String) -> Double? {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 1 || parts.count == 2, let count = number(parts[0]), count > 0 else { return nil }
        let unit = parts.count == 2 ? parts[1].lowercased() : "h"
        let seconds: Double
        switch unit {
        case "s": seconds = 1
        case "m": seconds = 60
        case "h": seconds = 3_600
        case "d": seconds = 86_400
        default: return nil
        }
        let interval = seconds / count
        return interval >= 1e-6 && interval < longestInterval ? interval : nil
    }

    /// The longest time between two starts to one server that `--rate` or `--wait` may ask for: under a year (one
    /// bound for both; a slower rate is a mistake, not a pace).
    public static let longestInterval: Double = 365 * 86_400

    /// The seconds wget's `--wait` value asks for: a number with an optional unit (`s`, `m`, `h`, `d`; seconds by
    /// default), 0 or more and under a year; nil when malformed.
    public static func seconds(ofWait text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400]
        var digits = Substring(text.lowercased())
        var scale = 1.0
        if let last = digits.last, let unit = units[last] {
            scale = unit
            digits = digits.dropLast()
        }
        guard let value = number(digits), value >= 0 else { return nil }
        let seconds = value * scale
        return seconds < longestInterval ? seconds : nil
    }

    /// The pacing of `--rate` (an interval) and `--wait` together: the longer of the two holds, randomized with
    /// `--random-wait`.
    public static func pacing(rateInterval: Double?, wait: Double?, randomized: Bool) -> HostPacing {
        let interval = max(rateInterval ?? 0, wait ?? 0)
        return HostPacing(interval: interval, randomized: randomized)
    }

    /// A plain decimal number (digits and at most one point), or nil.
    private static func number(_ text: some StringProtocol) -> Double? {
        guard !text.isEmpty, text.count <= 20, text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
            text.filter({ $0 == "." }).count <= 1, text != "."
        else { return nil }
        return Double(String(text))
    }
}
