#!/usr/bin/env python3
"""Servers that would hold a run for ever, for the Demo's bounds in .ci/run (127.0.0.1 only).

/trickle/N/K/MS  N bytes under a Content-Length in K pieces, MS milliseconds apart (never silent for long)
/endless         a chunked body at full speed that never ends
Usage: slow-server.py PORT
"""
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.answer(head_only=True)

    def do_GET(self):
        self.answer(head_only=False)

    def answer(self, head_only):
        parts = self.path.split("?")[0].strip("/").split("/")
        try:
            if parts[0] == "trickle" and len(parts) == 4:
                self.trickle(int(parts[1]), max(1, int(parts[2])), int(parts[3]) / 1000, head_only)
            elif parts == ["endless"]:
                self.endless(head_only)
            else:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def trickle(self, size, pieces, interval, head_only):
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        if head_only:
            return
        piece = max(1, size // pieces)
        sent = 0
        while sent < size:
            if sent:
                time.sleep(interval)
            length = min(piece, size - sent)
            self.wfile.write(bytes(i % 256 for i in range(sent, sent + length)))
            self.wfile.flush()
            sent += length

    def endless(self, head_only):
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        if head_only:
            return
        chunk = b"%x\r\n%s\r\n" % (65536, bytes(65536))
        while True:
            self.wfile.write(chunk)


if __name__ == "__main__":
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
