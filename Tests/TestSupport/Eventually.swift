import Foundation

/// Polls `condition` for up to `seconds`: a bound on waiting for another thread's or process's side (the
/// server, the delegate queue), never a verdict on its own; the caller asserts the condition afterwards.
public func eventually(within seconds: Double = 10, _ condition: () -> Bool) async {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition(), Date() < deadline { try? await Task.sleep(nanoseconds: 5_000_000) }
}
