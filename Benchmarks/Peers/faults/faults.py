#!/usr/bin/env python3
"""The fault comparison (issue 71): the Demo (both transports) against curl, wget2 and aria2c on loopback servers that
fail the way real ones do (faultserver.py), at two retry budgets, on tmpfs and on a fresh ext4 (when this process may
make one). Each cell: files saved whole, wall seconds, CPU seconds (user + system of the tool and its children).

    faults.py DEMO [--rounds N] [--only SCHEDULE] [--retries R,R]

DEMO is a release Demo binary (../../../.build/release/Demo). The verdict the issue asks for is printed per schedule
and budget: the Demo saves at least as many files as the best peer, in no more than that peer's time + 20%.
"""
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# The longest one run may take, in seconds (every schedule ends within 20 s for a tool that retries).
LIMIT = 60

# name, schedule arguments, files, file size, what the schedule is, seconds each GET's answer waits
SCHEDULES = [
    ("late", ["late", "1"], 40, 16_384, "the port opens 1 s after the start", 0),
    ("restart", ["restart", "150", "1.5"], 500, 16_384, "restarted for 1.5 s after 150 files", 0),
    # 300 answers of 40 ms, 4 at a time: about 3 s, over two of the server's down moments.
    ("flap", ["flap", "0.1", "1.3"], 300, 16_384, "refusing 100 ms of every 1.3 s, 40 ms an answer", 0.04),
    ("resethead", ["resethead", "2"], 40, 16_384, "each file's first two connections reset after the request", 0),
    ("reset2", ["reset2"], 60, 16_384, "every 2nd connection reset as it is accepted", 0),
]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def tools(demo, retries, listfile, config, folder):
    """Each side's command, 4 transfers at once, `retries` retries where the tool counts them."""
    def installed(name):
        return shutil.which(name)

    sides = [
        ("Demo curl", [demo, "--input", listfile, "--output", folder, "--retries", str(retries), "--keep-going",
                       "--transport", "curl"]),
        ("Demo urlsession", [demo, "--input", listfile, "--output", folder, "--retries", str(retries),
                             "--keep-going", "--transport", "urlsession"]),
    ]
    if installed("curl"):
        sides.append(("curl", ["curl", "--parallel", "--parallel-max", "4", "-s", "--retry", str(retries),
                               "--retry-connrefused", "--retry-all-errors", "-K", config]))
    if installed("wget2"):
        sides.append(("wget2", ["wget2", "-q", "--tries", str(retries + 1), "--retry-connrefused",
                                "--max-threads", "4", "-nd", "-P", folder, "-i", listfile]))
    if installed("aria2c"):
        sides.append(("aria2c", ["aria2c", "-q", "-j", "4", "--max-tries", str(retries + 1), "--retry-wait", "1",
                                 "--auto-file-renaming=false", "-d", folder, "-i", listfile]))
    return sides


def run_once(demo, side, retries, schedule, count, size, place, delay):
    root = tempfile.mkdtemp(prefix="nq-faults-www-")
    folder = tempfile.mkdtemp(prefix="nq-faults-out-", dir=place)
    try:
        body = os.urandom(size)
        for index in range(count):
            with open(os.path.join(root, "f%d.bin" % index), "wb") as f:
                f.write(body)
        port = free_port()
        urls = ["http://127.0.0.1:%d/f%d.bin" % (port, i) for i in range(count)]
        listfile = os.path.join(root, "list.txt")
        with open(listfile, "w") as f:
            f.write("\n".join(urls) + "\n")
        config = os.path.join(root, "curl.cfg")
        with open(config, "w") as f:
            for i, url in enumerate(urls):
                f.write('url = "%s"\noutput = "%s/f%d.bin"\n' % (url, folder, i))
        server = subprocess.Popen([sys.executable, os.path.join(HERE, "faultserver.py"), str(port), root, str(LIMIT + 10)]
                                  + schedule, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  env=dict(os.environ, FAULT_DELAY=str(delay)))
        time.sleep(0.15 if schedule[0] != "late" else 0)
        argv = dict(tools(demo, retries, listfile, config, folder))[side]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        try:
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=LIMIT)
        except subprocess.TimeoutExpired:
            # A tool that hangs is a result: what it saved by then, at the limit (its child is killed).
            print("  (%s hung: stopped after %d s)" % (argv[0].split("/")[-1], LIMIT))
        wall = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        server.kill()
        server.wait()
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        saved = sum(1 for i in range(count)
                    if os.path.isfile(os.path.join(folder, "f%d.bin" % i))
                    and os.path.getsize(os.path.join(folder, "f%d.bin" % i)) == size)
        return saved, wall, cpu
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)


def ext4_folder():
    """A fresh ext4 on a loop device (root only), or None."""
    if os.geteuid() != 0 or not shutil.which("mkfs.ext4"):
        return None
    image = tempfile.mktemp(prefix="nq-faults-ext4-", suffix=".img")
    mount = tempfile.mkdtemp(prefix="nq-faults-ext4-")
    try:
        subprocess.run(["truncate", "-s", "512M", image], check=True)
        subprocess.run(["mkfs.ext4", "-q", "-F", image], check=True)
        subprocess.run(["mount", "-o", "loop", image, mount], check=True, stderr=subprocess.DEVNULL)
        return mount, image
    except (subprocess.CalledProcessError, OSError):
        return None


def main():
    argv = sys.argv[1:]
    if not argv:
        print(__doc__)
        return 2
    demo = os.path.abspath(argv[0])

    def value(flag, default):
        return argv[argv.index(flag) + 1] if flag in argv else default

    rounds = int(value("--rounds", "1"))
    only = value("--only", None)
    budgets = [int(r) for r in value("--retries", "2,5").split(",")]
    places = [("tmpfs", "/dev/shm")]
    ext4 = ext4_folder()
    if ext4:
        places.append(("ext4", ext4[0]))
    else:
        print("ext4: left out (a fresh ext4 needs root, mkfs.ext4 and a loop device)")
    verdicts = []
    try:
        for fs, place in places:
            for name, schedule, count, size, what, delay in SCHEDULES:
                if only and only != name:
                    continue
                for retries in budgets:
                    print("\n%s, %d files, --retries %d, %s (%s)" % (name, count, retries, what, fs))
                    results = {}
                    names = [side for side, _ in tools(demo, retries, "", "", "")]
                    for round_ in range(rounds):
                        # A rotating order: no side always runs first (or last) on a warm machine.
                        order = names[round_ % len(names):] + names[:round_ % len(names)]
                        for side in order:
                            sample = run_once(demo, side, retries, schedule, count, size, place, delay)
                            results.setdefault(side, []).append(sample)
                    rows = {}
                    for side, samples in results.items():
                        saved = min(s[0] for s in samples)
                        wall = statistics.median(s[1] for s in samples)
                        cpu = statistics.median(s[2] for s in samples)
                        rows[side] = (saved, wall, cpu)
                        print("  %-16s %4d/%d saved  %6.2f s wall  %5.2f s CPU" % (side, saved, count, wall, cpu))
                    peers = {k: v for k, v in rows.items() if not k.startswith("Demo")}
                    if not peers:
                        continue
                    # The best peer: most files, then least time.
                    best_name, best = max(peers.items(), key=lambda kv: (kv[1][0], -kv[1][1]))
                    for side in ("Demo curl", "Demo urlsession"):
                        saved, wall, _ = rows[side]
                        ok = saved >= best[0] and wall <= best[1] * 1.2
                        verdicts.append((fs, name, retries, side, ok))
                        print("  %s vs %s: %s (%d vs %d files, %.2f vs %.2f s = %.2fx)" % (
                            side, best_name, "meets" if ok else "MISSES", saved, best[0], wall, best[1],
                            wall / best[1] if best[1] else 0))
    finally:
        if ext4:
            subprocess.run(["umount", ext4[0]], stderr=subprocess.DEVNULL)
            os.unlink(ext4[1])
    missed = [v for v in verdicts if not v[4]]
    print("\n%d of %d cells meet the target (as many files as the best peer, within its time + 20%%)" % (
        len(verdicts) - len(missed), len(verdicts)))
    for fs, name, retries, side, _ in missed:
        print("  missed: %s, %s, --retries %d, %s" % (name, fs, retries, side))
    return 0


if __name__ == "__main__":
    sys.exit(main())
