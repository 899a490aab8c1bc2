import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A split download's first head: whether the file is split, continued from its part, handed to another source,
/// or left to one connection.
extension SplitDownload {
    /// An event of the first connection before its head decided; returns true when it passes to the engine as is.
    func first(_ event: TransferEvent, leg id: Int, _ state: inout State, _ work: inout Work) -> Bool {
        guard case .head(let head) = event, !ResponseRules.isInterim(head) else {
            if case .completed(let error?) = event, state.sources.sources.count > 1 {
                // No byte reached the file: the next source is asked instead.
                return !retryFirst(id, reason: error.localizedDescription, &state, &work)
            }
            return true
        }
        if let resumed = resumed(state), head.statusCode == 206 {
            // Its server has another file now (it ignored If-Range): the bytes on disk are not its, and the part is
            // fetched anew, as a part of one connection starts over.
            let problem = SplitRules.continuationProblem(with: head, resumed: resumed)
            if problem == nil, beginResumed(head, resumed, leg: id, &state, &work) { return false }
            return !startOver(id, reason: problem ?? "it cannot be continued", &state, &work)
        }
        switch SplitRules.shape(of: head, minimumSize: minimumSize) {
        case .success(let shape):
            // A 200 is the whole file, whatever range was asked for: its connection streams to the end.
            state.legs[id]?.asked = nil
            return !begin(shape: shape, done: [], forwarded: head, leg: id, &state, &work)
        case .failure(.status(let code)) where !(200..<300).contains(code):
            return !retryFirst(id, reason: "it answered \(code)", &state, &work)
        case .failure(let refusal):
            state.mode = .plain
            work.notes.append((.splitDecided, .info, "one connection: \(refusal.text)"))
            return true
        }
    }

    /// The first connection's source failed before any byte was written: the next live source is asked, or (none
    /// left) the failure passes to the engine (returns false).
    func retryFirst(_ id: Int, reason: String, _ state: inout State, _ work: inout Work) -> Bool {
        guard let leg = state.legs[id] else { return false }
        state.sources.drop(leg.source)
        guard state.sources.hasLive else {
            state.mode = .plain
            return false
        }
        state.legs[id] = nil
        state.sources.ended(leg.source)
        work.cancels.append(leg.cell)
        work.notes.append((.sourceDropped, .notice, "dropped \(describe(leg.source)): \(reason)"))
        startFirst(&state, &work)
        return true
    }

    /// The part cannot be continued from the first answer (`reason`): the first connection stops, and the file is
    /// asked for anew, as it is; its answer begins the part again (the record is replaced). False when the
    /// connection had ended.
    func startOver(_ id: Int, reason: String, _ state: inout State, _ work: inout Work) -> Bool {
        guard stop(leg: id, &state, &work) != nil else { return false }
        state.partStartsOver = true
        work.notes.append((.splitDecided, .notice, "the part starts over: \(reason)"))
        startFirst(&state, &work)
        return true
    }

    /// A split part continued: its first connection asked from its first missing byte, and its answer continues
    /// the part (``SplitRules/continuationProblem(with:resumed:)`` found nothing wrong with it).
    func beginResumed(
        _ head: ResponseHead, _ resumed: PartSegments, leg id: Int, _ state: inout State, _ work: inout Work
    ) -> Bool {
        guard let length = RangeRules.contentRange(head.value(forHTTPHeaderField: "Content-Range"))?.total else {
            return false
        }
        let shape = SplitRules.Shape(length: length, validator: resumed.validator)
        let forwarded = SplitRules.continuingHead(head, onDisk: resumed.onDisk, length: length)
        return begin(shape: shape, done: resumed.done, forwarded: forwarded, leg: id, &state, &work)
    }

    /// The file is split: the part is sized and recorded, the engine hears `forwarded`, the first connection takes
    /// the first range and the others are asked for. False when the part could not be begun (passed on as is).
    func begin(
        shape: SplitRules.Shape, done: [Range<Int64>], forwarded: ResponseHead, leg id: Int, _ state: inout State,
        _ work: inout Work
    ) -> Bool {
        let reading: HeadReading
        switch pipeline.splitHead(forwarded) {
        case .head(let read): reading = read
        case .fileFailed(let failure):
            end(&state, &work, failing: false)
            work.fileFailure = failure
            return true
        case .forward, .integrityFailed: return false
        }
        if let failure = sink.beginSegments(shape, done: done) {
            // The part cannot be begun (its record cannot be written): the file fails now, as any file error.
            end(&state, &work, failing: false)
            work.fileFailure = failure
            return true
        }
        // A new file runs on its first connection alone until its pace says whether sharing is worth it; a
        // continued one shares its holes at once.
        let probing = done.isEmpty && connections > 1
        var plan = SegmentPlan(
            length: shape.length, connections: probing ? 1 : connections, minimumSize: minimumSize, done: done)
        guard let run = plan.assign() else { return false }
        if probing { state.probe = (owner.clock.now(), 0) }
        state.plan = plan
        state.shape = shape
        state.head = forwarded
        state.mode = .split
        state.legs[id]?.run = run.id
        state.legs[id]?.isAccepted = true
        if let source = state.legs[id]?.source { state.sources.learn(shape.validator, for: source) }
        // The engine hears the head before any count: from this thread, before any other connection starts.
        work.head = (forwarded, reading)
        if !probing { share(&state, &work) }
        return true
    }
}
