#!/usr/bin/env bash
# Issue 75's measure of `-o -`: 1 GiB from a loopback server capping each connection at 32 MB/s (`/capped`, paced from
# each response's first byte), ROUNDS rounds of, in turn: `Demo --split 8 -o - | sha256sum`, `Demo --split 8 -o - >
# /dev/null`, and `Demo --split 8 --output DIR` (the same connections into a file on /dev/shm). Prints each run's wall
# time, the Demo's own peak memory (its last line on standard error) and whether the hash was right.
# Needs a release build: swift build -c release. Usage: Benchmarks/ordered-stdout.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
demo=.build/release/Demo
work=$(mktemp -d /dev/shm/nq-ordered-bench.XXXXXX)
coproc SERVER { .build/release/Benchmarks --serve; }
read -r _ port <&"${SERVER[0]}"
trap 'echo >&"${SERVER[1]}" || true; rm -rf "$work"' EXIT
size=$((1 << 30))
url="http://127.0.0.1:$port/capped/$size?rate=32000000"
expected=$(curl -s "http://127.0.0.1:$port/bytes/$size" | sha256sum | cut -d' ' -f1)
seconds() { awk "BEGIN{printf \"%.2f\", $2 - $1}"; }
for round in $(seq "$rounds"); do
    start=$(date +%s.%N)
    hash=$("$demo" --split 8 -o - "$url" 2>"$work/stderr" | sha256sum | cut -d' ' -f1)
    end=$(date +%s.%N)
    echo "round $round  -o - | sha256sum  $(seconds "$start" "$end") s  $(grep -o 'peak memory .*' "$work/stderr")  hash $([ "$hash" = "$expected" ] && echo right || echo WRONG)"
    start=$(date +%s.%N)
    "$demo" --split 8 -o - "$url" 2>"$work/stderr" >/dev/null
    end=$(date +%s.%N)
    echo "round $round  -o - > /dev/null  $(seconds "$start" "$end") s  $(grep -o 'peak memory .*' "$work/stderr")"
    rm -rf "$work/out"
    start=$(date +%s.%N)
    "$demo" --split 8 --output "$work/out" "$url" >/dev/null 2>&1
    end=$(date +%s.%N)
    echo "round $round  --output         $(seconds "$start" "$end") s"
done
