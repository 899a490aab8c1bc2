/// The order in which a ``NetworkQueue`` starts its pending requests.
///
/// The order only decides which *pending* request takes the next free slot; running requests are never
/// interrupted or reordered. Changing a queue's order takes effect at the next start.
public enum SchedulingOrder: Sendable, Hashable, CaseIterable {
    /// First in, first out: the oldest pending request starts next. The default.
    case fifo
    /// Last in, first out: the newest pending request starts next.
    case lifo
}
