#!/usr/bin/env python3
"""How soon a long list's first body byte leaves the server, and a malformed one refused whole.

    python3 Benchmarks/first-byte.py [--demo .build/release/Demo] [--lines 1000000] [--rounds 5]

Writes a list of LINES plain URLs (a regular file) to a server of its own on 127.0.0.1, launches the Demo on it with
`--output`, and times launch -> the first response's body written to the socket (the first byte the Demo can read).
Then the same list with a malformed last line: the Demo must exit 2, connect to nothing and make no output folder.
Prints min and median over the rounds; the issue's target is 0.3 s.
"""
import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

parser = argparse.ArgumentParser()
parser.add_argument("--demo", default=".build/release/Demo")
parser.add_argument("--lines", type=int, default=1_000_000)
parser.add_argument("--rounds", type=int, default=5)
options = parser.parse_args()

work = tempfile.mkdtemp(prefix="first-byte-")
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(64)
port = listener.getsockname()[1]
good = os.path.join(work, "list.txt")
with open(good, "w") as out:
    for index in range(options.lines):
        out.write(f"http://127.0.0.1:{port}/files/f{index}.bin\n")
bad = os.path.join(work, "bad.txt")
shutil.copyfile(good, bad)
with open(bad, "a") as out:
    out.write("ht!tp://not a url\n")


def first_byte() -> float:
    output = os.path.join(work, "out")
    shutil.rmtree(output, ignore_errors=True)
    began = time.monotonic()
    demo = subprocess.Popen([options.demo, "--input", good, "--output", output, "--no-accurate"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    listener.settimeout(30)
    connection, _ = listener.accept()
    request = b""
    while b"\r\n\r\n" not in request:
        request += connection.recv(4096)
    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody")
    took = time.monotonic() - began
    demo.kill()
    demo.wait()
    connection.close()
    # Connections the Demo opened meanwhile.
    listener.settimeout(0)
    try:
        while True:
            listener.accept()[0].close()
    except OSError:
        pass
    return took


def refused() -> str:
    output = os.path.join(work, "refused")
    run = subprocess.run([options.demo, "--input", bad, "--output", output], capture_output=True, text=True)
    listener.settimeout(0)
    try:
        listener.accept()
        connected = True
    except OSError:
        connected = False
    made = os.path.exists(output)
    verdict = "ok" if run.returncode == 2 and not connected and not made else "WRONG"
    return f"exit {run.returncode}, connected {connected}, output made {made}: {verdict} ({run.stderr.strip()[:90]})"


times = [first_byte() for _ in range(options.rounds)]
print(f"{options.lines:,} lines, regular file: first body byte after launch "
      f"min {min(times):.3f} s, median {statistics.median(times):.3f} s (target 0.3 s)")
print(f"malformed last line: {refused()}")
shutil.rmtree(work, ignore_errors=True)
