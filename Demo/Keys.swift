import Foundation
import NetworkQueue

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Keyboard control on a terminal: `p` pauses every request that has not finished, `r` resumes them.
/// Standard input is read a key at a time without echo; the terminal's settings come back at exit.
enum Keys {
    /// The terminal's settings before ``listen(_:)`` changed them.
    nonisolated(unsafe) private static var saved = termios()
    nonisolated(unsafe) private static var source: DispatchSourceRead?

    static func listen(_ queue: NetworkQueue) {
        guard tcgetattr(STDIN_FILENO, &saved) == 0 else { return }
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        guard tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0 else { return }
        atexit { _ = tcsetattr(STDIN_FILENO, TCSANOW, &Keys.saved) }
        let reader = DispatchSource.makeReadSource(fileDescriptor: STDIN_FILENO, queue: .main)
        reader.setEventHandler {
            var byte: UInt8 = 0
            guard read(STDIN_FILENO, &byte, 1) == 1 else { return reader.cancel() }
            switch byte {
            case UInt8(ascii: "p"): queue.pause { _ in true }
            case UInt8(ascii: "r"): queue.resume { _ in true }
            default: break
            }
        }
        reader.resume()
        source = reader
    }
}
