import Foundation

/// A value behind a condition lock: the server's only shared state.
///
/// `@unchecked Sendable` is safe because every access to `value` happens while `condition` is locked.
final class Protected<Value>: @unchecked Sendable {
    private let condition = NSCondition()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func with<Result>(_ body: (inout Value) -> Result) -> Result {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        return body(&value)
    }

    /// Waits until `ready` holds or `deadline` passes; returns whether it held.
    func wait(until deadline: Date, for ready: (Value) -> Bool) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while !ready(value) {
            if !condition.wait(until: deadline) { return ready(value) }
        }
        return true
    }
}
