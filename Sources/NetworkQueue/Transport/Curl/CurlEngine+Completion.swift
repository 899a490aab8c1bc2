#if os(Linux)
    import CurlShim
    import Foundation
    import FoundationNetworking
    import Glibc

    extension CurlEngine {
        // MARK: Finished transfers (engine thread)

        /// Reads libcurl's finished transfers: follows a redirect, or reports the end.
        func collectCompleted() {
            var remaining: Int32 = 0
            while let message = library.multiInfoRead(multi, &remaining) {
                // struct CURLMsg: CURLMSG msg (CURLMSG_DONE = 1), CURL *easy_handle, union { CURLcode result }.
                guard message.load(as: Int32.self) == 1 else { continue }
                let easy = message.load(fromByteOffset: 8, as: OpaquePointer.self)
                let code = message.load(fromByteOffset: 16, as: Int32.self)
                _ = library.multiRemove(multi, easy)
                guard let user = library.privateData(easy),
                    let transfer = Unmanaged<CurlHandle>.fromOpaque(user).takeUnretainedValue().transfer,
                    removeActive(transfer)
                else { continue }
                leave()
                complete(transfer, easy: easy, code: code)
            }
        }

        private func complete(_ transfer: CurlTransfer, easy: OpaquePointer, code: Int32) {
            // Optional chaining skips reading libcurl's info when nobody asked for metrics.
            transfer.recorder?.runEnded(library.runInfo(easy))
            if code == 0 || transfer.followsAtHead, let next = transfer.redirect {
                finish(transfer, easy: easy)
                return follow(transfer, to: next)
            }
            if transfer.endedAtHead {
                // Aborted at its final head as it asked (libcurl says a write error): a success without a body.
                finish(transfer, easy: easy)
                return end(transfer, nil)
            }
            var error = transfer.failure ?? libcurlError(code, of: transfer, easy: easy) ?? transfer.incompleteBodyError
            if error == nil, !transfer.hasResponse {
                // A transfer libcurl calls done without a final head of ours (no HTTP/1.x or 2 server does that).
                error = URLError(.badServerResponse)
            }
            if error?.code == .badServerResponse, transfer.failure == nil, !transfer.hasResponse,
                library.newConnections(easy) == 0, transfer.againOnFreshConnection()
            {
                // A reused connection answered no response: what is read there may be a previous response's
                // leftovers (a HEAD answered with a body). Sent again, once, on a new connection, as browsers do.
                finish(transfer, easy: easy)
                guard !transfer.isCancelled else { return }
                return begin(transfer)
            }
            finish(transfer, easy: easy)
            end(transfer, error)
        }

        /// Reports a transfer's end: its metrics first, when they were asked for, then its completion.
        private func end(_ transfer: CurlTransfer, _ error: URLError?) {
            if let recorder = transfer.recorder {
                transfer.emit(
                    .metrics(
                        recorder.metrics(
                            endedAt: DispatchTime.now().uptimeNanoseconds, redirectCount: transfer.redirectCount)))
            }
            transfer.emit(.completed(error))
        }

        /// The error libcurl's `code` means for `transfer`, decided by the code (and the system's error number
        /// behind a failed receive), never by libcurl's words; nil for success (CURLE_OK).
        private func libcurlError(_ code: Int32, of transfer: CurlTransfer, easy: OpaquePointer) -> URLError? {
            guard code != 0 else { return nil }
            let osErrno = code == CurlErrorTable.receiveError ? library.osErrno(easy) : 0
            let error = CurlErrorTable.error(
                for: code, scheme: transfer.url.scheme?.lowercased(), url: transfer.url,
                message: transfer.errorText(for: code, library: library), afterResponse: transfer.hasResponse,
                osErrno: osErrno, connectCode: library.connectCode(easy),
                certificateVerifyResult: code == CurlErrorTable.peerFailedVerification
                    ? library.certificateVerifyResult(easy) : 0)
            // CURLE_COULDNT_RESOLVE_PROXY is also libcurl's answer to a proxy value it cannot parse.
            return error.map {
                proxies.refine($0, url: transfer.url, isProxyFailure: code == CurlErrorTable.proxyUnresolved)
            }
        }

        /// Starts the next run of a transfer whose response was a redirect, or ends it when the redirect may
        /// not or cannot be followed. Its previous run's easy handle is already back in the pool.
        private func follow(_ transfer: CurlTransfer, to next: URLRequest) {
            let status = transfer.redirectStatus
            switch options.redirects.decide(from: transfer.url, to: next) {
            case .refuse(let error):
                transfer.emit(
                    .redirect(TransferRedirect(statusCode: status, from: transfer.url, to: next.url, refusal: error)))
                end(transfer, error)
            case .follow(let followed):
                let from = transfer.url
                guard transfer.restart(with: followed) else {
                    return end(transfer, URLError(.requestBodyStreamExhausted))
                }
                guard transfer.redirectCount <= options.maximumRedirects else {
                    return end(transfer, URLError(.httpTooManyRedirects))
                }
                transfer.emit(.redirect(TransferRedirect(statusCode: status, from: from, to: followed.url)))
                guard !transfer.isCancelled else { return }
                begin(transfer)
            }
        }
    }
#endif
