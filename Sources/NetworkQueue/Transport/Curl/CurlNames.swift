#if os(Linux)
    import CurlShim
    import Foundation

    /// How a transport's engines find servers' addresses: one DNS cache for all of them (libcurl's share
    /// interface, so that a batch spread over engine threads looks each name up once, not once a thread), and the
    /// hosts the options pin (``CurlTransport/Options/pinnedAddresses``, `CURLOPT_RESOLVE`). Each engine holds it,
    /// so it is freed only after the last engine has freed its handles.
    ///
    /// Immutable once made (libcurl locks the cache itself, through the shim's callbacks), hence `@unchecked Sendable`.
    final class CurlNames: @unchecked Sendable {
        private let library: CurlLibrary
        /// The share handle (nil: one engine, whose multi handle's own cache serves its transfers).
        private let share: OpaquePointer?
        private let locks: UnsafeMutableRawPointer?
        /// The pinned hosts as libcurl reads them (nil: none).
        private let pinned: OpaquePointer?

        /// Names for `engines` engine threads with `pinned` hosts; nil when there is nothing to set up (one engine, no
        /// pins) or libcurl refused the share (each engine then keeps its own cache, as before).
        init?(library: CurlLibrary, engines: Int, pinned: [PinnedAddress]) {
            self.library = library
            var share: OpaquePointer?
            var locks: UnsafeMutableRawPointer?
            if engines > 1, let made = library.shareInit() {
                if let mutexes = nq_share_locks_create(), library.shareDNS(made, locks: mutexes) {
                    (share, locks) = (made, mutexes)
                } else {
                    _ = library.shareCleanup(made)
                }
            }
            var list: OpaquePointer?
            for pin in pinned { list = library.slistAppend(list, pin.description) }
            guard share != nil || list != nil else { return nil }
            self.share = share
            self.locks = locks
            self.pinned = list
        }

        /// Sets the cache and the pins on a new easy handle (libcurl adds the pins to the cache at each run).
        func prepare(_ easy: OpaquePointer) {
            if let share { library.set(easy, .share, pointer: UnsafeRawPointer(share)) }
            if let pinned { library.set(easy, .resolve, pointer: UnsafeRawPointer(pinned)) }
        }

        deinit {
            if let share { _ = library.shareCleanup(share) }
            nq_share_locks_destroy(locks)
            library.slistFreeAll(pinned)
        }
    }
#endif
