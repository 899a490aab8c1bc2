import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A value guarded by a lock: the only way to reach it is `withLock`.
///
/// The lock is a `pthread_mutex_t` of its own, not an `NSLock`, stored in the same allocation as the value
/// (a `ManagedBuffer`'s element): one allocation per instance, and a direct call per lock and unlock (a
/// request takes several on its way through the queue, and a transfer makes two of these). Copies share
/// the one value and lock. `@unchecked Sendable` is safe because every access to the value happens inside
/// the lock, which is also why it needs no dynamic exclusivity check.
struct Locked<Value>: @unchecked Sendable {
    private let storage: LockedStorage<Value>

    init(_ value: Value) {
        storage = LockedStorage.make(value)
    }

    @inline(__always)
    func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        try storage.withLock(body)
    }
}

/// The value (header) and its mutex (the one element) of a ``Locked``, in one allocation; used directly where the
/// object itself is what is handed around (a ``TransferCell``). The value is reached only through ``withLock(_:)``.
final class LockedStorage<Value>: ManagedBuffer<Value, pthread_mutex_t> {
    @inline(__always)
    func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        try withUnsafeMutablePointers { (value, mutex) throws(Failure) -> Result in
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body(&value.pointee)
        }
    }

    static func make(_ value: Value) -> LockedStorage {
        let storage = unsafeDowncast(create(minimumCapacity: 1) { _ in value }, to: LockedStorage.self)
        storage.withUnsafeMutablePointerToElements { mutex in
            mutex.initialize(to: pthread_mutex_t())
            pthread_mutex_init(mutex, nil)
        }
        return storage
    }

    deinit {
        _ = withUnsafeMutablePointerToElements { pthread_mutex_destroy($0) }
    }
}
