import Foundation

#if canImport(Glibc)
    import Glibc
    private let streamType = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
#elseif canImport(Darwin)
    import Darwin
    private let streamType = SOCK_STREAM
#endif

/// A loopback port whose host never answers a connect, as a dead host's does: a socket that listens with the
/// smallest backlog, whose queue is filled by connections of its own and never accepted. The kernel then drops each
/// new connection's SYN, so a client's connect waits until its own bound runs out. Nothing leaves 127.0.0.1.
public final class UnansweredListener: @unchecked Sendable {
    /// The port nobody answers on.
    public let port: UInt16
    private let listener: Int32
    /// The connections that fill the queue (and the last, unanswered, one).
    private var fillers: [Int32] = []

    /// Listens, then connects to itself until a connect is left unanswered (at most eight times).
    public init() throws {
        (listener, port) = try Socket.listen(port: 0, backlog: 0)
        for _ in 0..<8 {
            let (client, answered) = Self.connect(to: port)
            if client >= 0 { fillers.append(client) }
            if !answered { return }
        }
        for fd in fillers { Socket.close(fd) }
        Socket.close(listener)
        throw Socket.Failure(call: "filling the listen queue of an unanswered port", code: EAGAIN)
    }

    /// A URL on the unanswered port.
    public func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    /// A nonblocking connect to `port`, and whether its handshake completed within a tenth of a second (a setup
    /// step: a full queue leaves it pending for ever).
    private static func connect(to port: UInt16) -> (fd: Int32, answered: Bool) {
        let fd = socket(AF_INET, streamType, 0)
        guard fd >= 0 else { return (-1, true) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var address = Socket.loopback(port: port)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                #if canImport(Glibc)
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                #else
                    Darwin.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                #endif
            }
        }
        if result == 0 { return (fd, true) }
        guard errno == EINPROGRESS else { return (fd, true) }
        var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        return (fd, poll(&entry, 1, 100) > 0)
    }

    deinit {
        for fd in fillers { Socket.close(fd) }
        Socket.close(listener)
    }
}

/// A loopback port that refuses every connect, as a server's that stopped: a socket bound to it that does not listen,
/// so that no other server of the process takes the port meanwhile. ``release()`` frees it for a server to come back
/// on (``LoopbackServer/init(preferredPort:)``); or, made `sharedWithServers`, it stays held while servers start and
/// stop on it (``LoopbackServer/init(on:)``): a server restarted, its port refusing between.
public final class RefusingPort: @unchecked Sendable {
    /// The port that refuses.
    public let port: UInt16
    // Written only by `release`, which the owner calls once, after the servers on it.
    private var fd: Int32

    /// Binds a free port of 127.0.0.1, without listening; `sharedWithServers` (default false): servers of this
    /// process may listen on it meanwhile (SO_REUSEPORT, which no other server's socket sets, so none takes it).
    public init(sharedWithServers: Bool = false) throws {
        (fd, port) = try Socket.bound(port: 0, reusingAddress: false, sharingPort: sharedWithServers)
    }

    /// A URL on the refusing port.
    public func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    /// Frees the port (once).
    public func release() {
        guard fd >= 0 else { return }
        Socket.close(fd)
        fd = -1
    }

    deinit { release() }
}
