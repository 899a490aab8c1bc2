import Foundation

#if canImport(Glibc)
    import Glibc
    private let sendFlags = Int32(MSG_NOSIGNAL)
    // Close-on-exec, so that a program a test starts holds none of the server's connections open.
    private let streamType = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
#elseif canImport(Darwin)
    import Darwin
    private let sendFlags: Int32 = 0
    private let streamType = SOCK_STREAM
#endif

/// Thin wrappers over BSD sockets for the loopback server.
enum Socket {
    struct Failure: Error, CustomStringConvertible {
        let call: String
        let code: Int32
        var description: String { "\(call) failed: \(String(cString: strerror(code)))" }
    }

    /// A listening socket on 127.0.0.1 at `port` (0: a free port chosen by the kernel), queueing up to `backlog`
    /// connections; `sharingPort`: beside the ``RefusingPort`` that holds it.
    static func listen(port: UInt16 = 0, backlog: Int32 = 512, sharingPort: Bool = false) throws -> (
        fd: Int32, port: UInt16
    ) {
        let (fd, bound) = try self.bound(port: port, reusingAddress: true, sharingPort: sharingPort)
        guard systemListen(fd, backlog) == 0 else {
            let code = errno
            close(fd)
            throw Failure(call: "listen", code: code)
        }
        return (fd, bound)
    }

    /// A TCP socket bound to 127.0.0.1 at `port` (0: a free port chosen by the kernel), not listening, and the port
    /// it got. `reusingAddress`: SO_REUSEADDR (a listener's, so that a port in TIME_WAIT can be listened on again);
    /// `sharingPort`: SO_REUSEPORT, so that servers of this process can listen on it while this socket holds it.
    static func bound(port: UInt16, reusingAddress: Bool, sharingPort: Bool) throws -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, streamType, 0)
        guard fd >= 0 else { throw Failure(call: "socket", code: errno) }
        var yes: Int32 = 1
        if reusingAddress { setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size)) }
        if sharingPort { setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &yes, socklen_t(MemoryLayout<Int32>.size)) }
        #if canImport(Darwin)
            setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &yes, socklen_t(MemoryLayout<Int32>.size))
        #endif
        var address = loopback(port: port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let code = errno
            close(fd)
            throw Failure(call: "bind", code: code)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    /// 127.0.0.1 at `port` (0: any).
    static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    static func accept(_ fd: Int32) -> Int32 {
        #if canImport(Glibc)
            let client = Glibc.accept(fd, nil, nil)
        #else
            let client = Darwin.accept(fd, nil, nil)
        #endif
        if client >= 0 {
            // Close-on-exec as the listener (Swift's Glibc has no accept4).
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            var yes: Int32 = 1
            setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
            #if canImport(Darwin)
                setsockopt(client, SOL_SOCKET, SO_NOSIGPIPE, &yes, socklen_t(MemoryLayout<Int32>.size))
            #endif
        }
        return client
    }

    /// Reads what is available (blocking); nil at end of stream or on error.
    static func read(_ fd: Int32, into buffer: inout [UInt8]) -> Int? {
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return count > 0 ? count : nil
    }

    /// Writes all of `bytes`; false if the peer went away.
    @discardableResult
    static func write(_ fd: Int32, _ bytes: some Collection<UInt8>) -> Bool {
        var array = Array(bytes)
        var offset = 0
        while offset < array.count {
            let sent = array.withUnsafeMutableBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, sendFlags) }
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    /// Waits `seconds`, unless the peer closes or resets the connection first: false then. A body paced by `rate=`
    /// waits so, and its request stops counting as in flight as soon as the client hangs up, not at the next write
    /// (the split tests check the server never sees more requests at once than the queue's slots).
    static func wait(_ fd: Int32, seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return true }
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&entry, 1, Int32((left * 1000).rounded(.up)))
            if ready < 0, errno == EINTR { continue }
            guard ready > 0 else { return true }
            if entry.revents & Int16(POLLHUP | POLLERR) != 0 { return false }
            var byte: UInt8 = 0
            let peeked = recv(fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
            if peeked == 0 || (peeked < 0 && errno != EAGAIN && errno != EINTR) { return false }
            // Bytes from the peer (its next request, sent early): wait out the time without polling them again.
            Thread.sleep(forTimeInterval: max(0, deadline.timeIntervalSinceNow))
            return true
        }
    }

    static func shutdown(_ fd: Int32) {
        #if canImport(Glibc)
            _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
        #else
            _ = Darwin.shutdown(fd, SHUT_RDWR)
        #endif
    }

    /// Sets the kernel's send buffer of `fd` to `bytes` (Linux doubles it for its own books).
    static func setSendBuffer(_ fd: Int32, bytes: Int32) {
        var size = bytes
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Makes the next close send a TCP reset instead of a FIN.
    static func reset(_ fd: Int32) {
        var linger = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
    }

    static func close(_ fd: Int32) {
        #if canImport(Glibc)
            _ = Glibc.close(fd)
        #else
            _ = Darwin.close(fd)
        #endif
    }
}

private func systemListen(_ fd: Int32, _ backlog: Int32) -> Int32 {
    #if canImport(Glibc)
        Glibc.listen(fd, backlog)
    #else
        Darwin.listen(fd, backlog)
    #endif
}
