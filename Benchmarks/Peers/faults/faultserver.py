# A file server on 127.0.0.1 that fails the way real ones do, for the fault comparison (faults.py, issue 71).
#
#   faultserver.py PORT ROOT SECONDS SCHEDULE [ARGS]
#
# Schedules:
#   plain                 serves every request
#   late DELAY            the port opens DELAY seconds after the start (refused before)
#   restart AFTER DOWN    once AFTER responses are served, every connection is closed and the port refuses for DOWN s
#   flap DOWN PERIOD      the port refuses for DOWN seconds of every PERIOD seconds
#
# With FAULT_DELAY=S in the environment, each GET's response waits S seconds first (a batch then spans several of a
# flapping server's periods).
#   resethead N           each path's first N connections are reset once their request head is read
#   reset2                every 2nd connection is reset as it is accepted
#
# Files are read from ROOT; HEAD and GET are answered with Content-Length, keep-alive. It exits after SECONDS.
import os
import socket
import struct
import sys
import threading
import time

port, root, lifetime, schedule = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]
args = [float(a) for a in sys.argv[5:]]
delay = float(os.environ.get("FAULT_DELAY", "0"))
lock = threading.Lock()
state = {"listener": None, "served": 0, "accepted": 0, "down_until": 0.0}
connections = set()
seen = {}
began = time.time()


def reset(c):
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()


def listen():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(256)
    s.settimeout(0.02)
    state["listener"] = s


def close_listener():
    s = state["listener"]
    state["listener"] = None
    if s:
        s.close()


def go_down(seconds):
    close_listener()
    with lock:
        for c in list(connections):
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
    state["down_until"] = time.time() + seconds


def serve(c):
    with lock:
        connections.add(c)
    try:
        f = c.makefile("rb")
        while True:
            line = f.readline()
            if not line:
                return
            words = line.split()
            if len(words) < 2:
                return
            method, path = words[0].decode(), words[1].decode()
            while f.readline() not in (b"\r\n", b"\n", b""):
                pass
            if schedule == "resethead":
                with lock:
                    n = seen.get(path, 0)
                    seen[path] = n + 1
                if n < args[0]:
                    reset(c)
                    return
            name = os.path.join(root, path.split("?")[0].lstrip("/"))
            if not os.path.isfile(name):
                c.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                continue
            with open(name, "rb") as file:
                body = file.read()
            head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body)
            if delay and method == "GET":
                time.sleep(delay)
            c.sendall(head + (b"" if method == "HEAD" else body))
            if method == "GET" and schedule == "restart":
                with lock:
                    state["served"] += 1
                    due = state["served"] == int(args[0])
                if due:
                    threading.Thread(target=go_down, args=(args[1],)).start()
    except OSError:
        pass
    finally:
        with lock:
            connections.discard(c)
        try:
            c.close()
        except OSError:
            pass


if schedule != "late":
    listen()
while time.time() < began + lifetime:
    now = time.time()
    if schedule == "late" and state["listener"] is None and now >= began + args[0]:
        listen()
    if schedule == "restart" and state["listener"] is None and state["down_until"] and now >= state["down_until"]:
        listen()
    if schedule == "flap":
        phase = (now - began) % args[1]
        down = phase >= args[1] - args[0]
        if down and state["listener"] is not None:
            close_listener()
        elif not down and state["listener"] is None:
            listen()
    s = state["listener"]
    if s is None:
        time.sleep(0.005)
        continue
    try:
        c, _ = s.accept()
    except OSError:
        continue
    state["accepted"] += 1
    if schedule == "reset2" and state["accepted"] % 2 == 0:
        reset(c)
        continue
    c.settimeout(None)
    threading.Thread(target=serve, args=(c,), daemon=True).start()
