import Foundation
import Testing

/// Polls `condition` for up to `seconds`: a bound on waiting for another thread's or process's side (the
/// server, the delegate queue). When the condition is still false at the end, an issue is recorded at the
/// caller's line, so a wait that never ends fails the test there instead of letting a later assertion fail
/// for a reason it cannot name.
public func eventually(
    within seconds: Double = 60, sourceLocation: SourceLocation = #_sourceLocation, _ condition: () -> Bool
) async {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition(), Date() < deadline { try? await Task.sleep(nanoseconds: 5_000_000) }
    if !condition() { Issue.record("still false after waiting \(seconds) s", sourceLocation: sourceLocation) }
}
