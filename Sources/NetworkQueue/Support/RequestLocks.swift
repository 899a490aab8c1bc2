#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The locks of every ``NetworkRequest``'s shared state: a fixed set of mutexes, each request using the one
/// its address picks. A request has no mutex of its own, so a waiting request of a batch of millions costs no
/// lock allocation; two requests that share a mutex only ever hold it for a few field reads or writes.
enum RequestLocks {
    /// A power of two, so that picking is a mask.
    private static let count = 256

    // Unsafe: set once (a lazy static is initialised once, thread-safely), then only passed to pthread calls.
    nonisolated(unsafe) private static let mutexes: UnsafeMutablePointer<pthread_mutex_t> = {
        let mutexes = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: count)
        for index in 0..<count {
            (mutexes + index).initialize(to: pthread_mutex_t())
            pthread_mutex_init(mutexes + index, nil)
        }
        return mutexes
    }()

    /// The mutex guarding `object`'s shared state. Objects are 16-byte aligned: the bits above those pick.
    @inline(__always)
    static func lock(for object: AnyObject) -> UnsafeMutablePointer<pthread_mutex_t> {
        let address = UInt(bitPattern: ObjectIdentifier(object))
        return mutexes + Int((address >> 4 ^ address >> 12) & UInt(count - 1))
    }
}
