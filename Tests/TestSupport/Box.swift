import Foundation

/// The tests' one lock box: a value behind a lock, for test bookkeeping and test support types (the
/// library's own lock type is internal). `@unchecked Sendable` is safe: every access to `value` happens
/// under `lock`.
public final class Box<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    /// Wraps `value`.
    public init(_ value: Value) { self.value = value }

    /// Runs `body` with the value, holding the lock.
    public func with<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    /// The value now (a copy, read under the lock).
    public var current: Value { with { $0 } }
}
