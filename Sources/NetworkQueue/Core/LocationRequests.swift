import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What each location of a file that may be shared is sent (73): the request as the queue sends it to its
/// own URL, and to each mirror as a redirect there would be. Its `URLRequest`s are made only when first needed: a file
/// its first connection carries as it was sent builds none (a text GET stays text). Pure.
struct LocationRequests {
    /// The request as the queue sends it to its own URL.
    let sent: OutgoingRequest
    /// The mirrors' URLs: the locations after the first.
    let mirrors: [URL]
    private let policy: RedirectPolicy
    /// The conditional fields of a revalidated file (``NetworkRequest/ExistingFile/revalidate``): sent by the first
    /// connection alone, whose answer says whether the file changed.
    let conditionalFields: [(name: String, value: String)]
    /// The request to each location (its own URL first, then the mirrors), its `Range`, `If-Range` and conditional
    /// fields dropped: made when first needed.
    private var made: [URLRequest]?

    /// The requests of `sent` to its own URL and to `mirrors`, each mirror's made with `policy`.
    init(_ sent: OutgoingRequest, mirrors: [URL], policy: RedirectPolicy) {
        self.sent = sent
        self.mirrors = mirrors
        self.policy = policy
        conditionalFields =
            if case .request(let full) = sent {
                ["If-None-Match", "If-Modified-Since"].compactMap { name in
                    full.value(forHTTPHeaderField: name).map { (name, $0) }
                }
            } else {
                []
            }
    }

    /// How many locations: the request's own URL and its mirrors.
    var count: Int { 1 + mirrors.count }

    /// The request to `location`, as a `URLRequest` (its `Range`, `If-Range` and conditional fields dropped; a mirror's
    /// made with the redirect policy, as a redirect there would be).
    mutating func request(to location: Int) -> URLRequest {
        if let made { return made[location] }
        var base = sent.urlRequest
        for name in ["Range", "If-Range"] + conditionalFields.map(\.name) {
            base.setValue(nil, forHTTPHeaderField: name)
        }
        let origin = base.url
        let requests = [base] + mirrors.map { SplitRules.request(base, to: $0, origin: origin, policy: policy) }
        made = requests
        return requests[location]
    }

    /// The URL of `location`: the request's own, or a mirror's.
    func url(of location: Int) -> URL? { location == 0 ? made?[0].url ?? sent.url : mirrors[location - 1] }
}
