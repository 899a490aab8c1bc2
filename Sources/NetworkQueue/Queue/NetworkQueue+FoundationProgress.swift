import Foundation

extension NetworkQueue {
    /// The scale of ``foundationProgress``: `totalUnitCount` is fixed at this and `completedUnitCount`
    /// follows ``QueueProgress/fractionCompleted``, so the bridged fraction never moves backwards either.
    public static let foundationProgressScale: Int64 = 1_000_000

    /// Mirrors one delivered progress snapshot into ``foundationProgress``.
    func updateFoundationProgress(_ progress: QueueProgress) {
        let scale = Self.foundationProgressScale
        let completed = progress.fractionCompleted >= 1 ? scale : Int64(progress.fractionCompleted * Double(scale))
        foundationProgress.completedUnitCount = min(scale, max(0, completed))
        // The userInfo keys behind `fileTotalCount`, `throughput`, …: Linux's Progress has only the keys.
        let info: [ProgressUserInfoKey: Any?] = [
            .fileTotalCountKey: progress.totalRequestCount,
            .fileCompletedCountKey: progress.endedRequestCount,
            .throughputKey: progress.throughput.map { Int($0) },
            .estimatedTimeRemainingKey: progress.estimatedTimeRemaining,
        ]
        for (key, value) in info { foundationProgress.setUserInfoObject(value, forKey: key) }
    }

    static func makeFoundationProgress() -> Progress {
        let progress = Progress(parent: nil, userInfo: nil)
        progress.totalUnitCount = foundationProgressScale
        progress.kind = .file
        progress.setUserInfoObject(Progress.FileOperationKind.downloading.rawValue, forKey: .fileOperationKindKey)
        progress.isCancellable = false
        return progress
    }
}
