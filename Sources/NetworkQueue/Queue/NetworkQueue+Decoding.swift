import Dispatch
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request added with a type its body decodes into (see ``NetworkQueue/add(_:decoding:decoder:completion:)``).
///
/// The request runs like any other (events, progress, retries); once it has finished, its body is decoded
/// off the delegate executor, so a big body never holds up the other requests' events.
public struct DecodedRequest<Value: Sendable>: Sendable {
    /// The request itself.
    public let request: NetworkRequest
    let outcome: Outcome<Value>
    let queue: NetworkQueue

    /// Waits for the request to end and returns its decoded body.
    ///
    /// Throws the request's failure, or ``NetworkQueueError/decodingFailed(_:)`` when its body does not
    /// decode (the request itself is then reported finished). Cancelling the awaiting task cancels the
    /// request (as ``NetworkQueue/cancel(_:)``); the call still returns only once it has ended.
    public func value() async throws(NetworkQueueError) -> Value {
        let result = await withTaskCancellationHandler {
            await outcome.wait()
        } onCancel: { [queue, request] in
            queue.cancel(request)
        }
        return try result.get()
    }
}

extension NetworkQueue {
    /// Adds a request whose JSON body is decoded into `type` once it has finished.
    /// - Parameters:
    ///   - request: the request (its own completion handler, if any, still runs with the raw response).
    ///   - type: what the body decodes into.
    ///   - decoder: decodes the body; default a new `JSONDecoder`. Used from another thread: do not change
    ///     it after this call.
    ///   - completion: called once on the delegate executor with the decoded value or the failure, after the
    ///     request's didFinish / didFail. Default nil.
    /// - Returns: the request and a way to await its value.
    /// - Throws: what ``add(_:)-(NetworkRequest)`` throws.
    @discardableResult
    public func add<Value: Decodable & Sendable>(
        _ request: NetworkRequest, decoding type: Value.Type, decoder: JSONDecoder = JSONDecoder(),
        completion: (@Sendable (Result<Value, NetworkQueueError>) -> Void)? = nil
    ) throws(NetworkQueueError) -> DecodedRequest<Value> {
        try add(request, decodingWith: { try decoder.decode(Value.self, from: $0) }, completion: completion)
    }

    /// Adds a request whose body is turned into a value by `decode` once it has finished: the general form
    /// of ``add(_:decoding:decoder:completion:)``, for any format. A throw from `decode` becomes
    /// ``NetworkQueueError/decodingFailed(_:)``.
    @discardableResult
    public func add<Value: Sendable>(
        _ request: NetworkRequest, decodingWith decode: @escaping @Sendable (Data) throws -> Value,
        completion: (@Sendable (Result<Value, NetworkQueueError>) -> Void)? = nil
    ) throws(NetworkQueueError) -> DecodedRequest<Value> {
        let outcome = Outcome<Value>()
        let deliveryQueue = self.deliveryQueue
        try add(request) { result in
            // Called on the delivery queue as the end is delivered: decode elsewhere, then report back there.
            DispatchQueue.global(qos: .userInitiated).async {
                let decoded = result.flatMap { Self.decode($0, with: decode) }
                outcome.resolve(decoded)
                if let completion { deliveryQueue.async { completion(decoded) } }
            }
        }
        return DecodedRequest(request: request, outcome: outcome, queue: self)
    }

    /// The body of `response` (from memory or its file) decoded by `decode`.
    static func decode<Value>(
        _ response: NetworkResponse, with decode: (Data) throws -> Value
    ) -> Result<Value, NetworkQueueError> {
        let body: Data
        if let file = response.fileURL {
            do {
                body = try Data(contentsOf: file, options: .mappedIfSafe)
            } catch {
                return .failure(.fileError(path: file.path, reason: "could not read the body to decode it: \(error)"))
            }
        } else {
            body = response.body
        }
        do {
            return .success(try decode(body))
        } catch {
            let failure = NetworkQueueError.DecodingFailure(
                statusCode: response.httpURLResponse.statusCode, url: response.httpURLResponse.url,
                bodyPrefix: Data(body.prefix(NetworkQueueError.DecodingFailure.prefixLength)), bodyLength: body.count,
                underlying: .init(error))
            return .failure(.decodingFailed(failure))
        }
    }
}

/// A result that arrives once, awaited by any number of callers.
final class Outcome<Value: Sendable>: Sendable {
    private struct State {
        var result: Result<Value, NetworkQueueError>?
        var waiters: [CheckedContinuation<Result<Value, NetworkQueueError>, Never>] = []
    }

    private let state = Locked(State())

    /// Stores the result (the first one wins) and wakes every waiter.
    func resolve(_ result: Result<Value, NetworkQueueError>) {
        let waiters = state.withLock { state in
            guard state.result == nil else { return [CheckedContinuation<Result<Value, NetworkQueueError>, Never>]() }
            state.result = result
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: result) }
    }

    /// The result, once it has arrived.
    func wait() async -> Result<Value, NetworkQueueError> {
        await withCheckedContinuation { continuation in
            let result = state.withLock { state in
                if state.result == nil { state.waiters.append(continuation) }
                return state.result
            }
            if let result { continuation.resume(returning: result) }
        }
    }
}
